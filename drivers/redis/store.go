package redisward

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/ward"
)

// Store is a ward.Store on Redis, through a Pool: every replica whose
// guards use a Store on the same server and prefix shares their state. Each
// method is one command, atomic on the server, and one round trip:
//
//   - Incr runs a Lua script that INCRs the key and, when that created it
//     (the count is 1), sets its PEXPIRE: two replicas incrementing at once
//     get two distinct counts, and a new key is never left without its
//     expiry by a replica that died between the two commands.
//   - SetIfAbsent is SET key value NX PX ttl.
//   - Get is GET and Del is DEL.
//
// Expiry runs on the server's clock, to the millisecond: a positive ttl
// under a millisecond becomes one. A ttl of zero or less stores the key
// without expiry, as ward.MemStore does.
//
// A Store is safe for concurrent use. The zero Store is not usable; build
// one with NewStore.
type Store struct {
	p      *Pool
	prefix string
}

var _ ward.Store = (*Store)(nil)

// NewStore returns a Store keeping its keys on p's server, each prefixed
// with prefix (for example "myservice:ward:"; it may be empty).
func NewStore(p *Pool, prefix string) *Store {
	return &Store{p: p, prefix: prefix}
}

// incrScript is Store.Incr's script. KEYS[1] is the counter, ARGV[1] its
// time to live in milliseconds for a new key (0: none).
const incrScript = `local n = redis.call('INCR', KEYS[1])
if n == 1 and tonumber(ARGV[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n`

// incrSHA is incrScript's SHA-1, its name in the server's script cache.
var incrSHA = func() string {
	h := sha1.Sum([]byte(incrScript))
	return hex.EncodeToString(h[:])
}()

// millis returns ttl in whole milliseconds for PX and PEXPIRE: 0 for none,
// at least 1 for a positive ttl.
func millis(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return max(ttl.Milliseconds(), 1)
}

// Incr implements ward.Store. A key holding something other than an integer
// fails with an error wrapping ward.ErrNotInteger.
func (s *Store) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	k, ms := s.prefix+key, millis(ttl)
	cmd := redis.NewIntCmd(ctx, "evalsha", incrSHA, 1, k, ms)
	err := s.p.Process(ctx, cmd)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// The server has not seen the script yet (or was restarted, or
		// flushed its cache): send it whole, which also caches it.
		cmd = redis.NewIntCmd(ctx, "eval", incrScript, 1, k, ms)
		err = s.p.Process(ctx, cmd)
	}
	if err != nil {
		var re redis.Error
		if errors.As(err, &re) && strings.Contains(err.Error(), "not an integer") {
			return 0, fmt.Errorf("%w: %w", ward.ErrNotInteger, err)
		}
		return 0, err
	}
	return cmd.Val(), nil
}

// SetIfAbsent implements ward.Store.
func (s *Store) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	var cmd *redis.StatusCmd
	if ms := millis(ttl); ms > 0 {
		cmd = redis.NewStatusCmd(ctx, "set", s.prefix+key, value, "px", ms, "nx")
	} else {
		cmd = redis.NewStatusCmd(ctx, "set", s.prefix+key, value, "nx")
	}
	switch err := s.p.Process(ctx, cmd); {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Get implements ward.Store.
func (s *Store) Get(ctx context.Context, key string) (string, bool, error) {
	cmd := redis.NewStringCmd(ctx, "get", s.prefix+key)
	switch err := s.p.Process(ctx, cmd); {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return cmd.Val(), true, nil
}

// Del implements ward.Store.
func (s *Store) Del(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	args := make([]any, 1, len(keys)+1)
	args[0] = "del"
	for _, k := range keys {
		args = append(args, s.prefix+k)
	}
	return s.p.Process(ctx, redis.NewIntCmd(ctx, args...))
}
