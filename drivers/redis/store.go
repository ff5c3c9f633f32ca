package redisward

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/ward/shared"
)

// Processor runs one command: a *Pool, and every go-redis client
// (redis.UniversalClient: a *redis.Client, a *redis.ClusterClient, a
// failover client of Sentinel, a *redis.Ring) is one.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Store is a shared.Store on Redis: every replica whose shared guards use a
// Store on the same server (or cluster) and prefix shares their state. Each
// method is one command or one script, atomic on the server, and one round
// trip:
//
//   - Incr runs a script that INCRs the key and, when that created it (the
//     count is 1), sets its PEXPIRE: two replicas incrementing at once get
//     two distinct counts, and a new key is never left without its expiry
//     by a replica that died between two commands.
//   - IncrUnder runs a script that reads both counts of the two-window
//     counter, compares the estimate with the limit and increments.
//   - SetIfAbsent is SET key value NX PX ttl; Get is GET; Del is DEL.
//   - Budget runs the budget script: it reads the server's clock (TIME),
//     drops the members whose lease ran out, applies the step and answers,
//     all in one script (see shared.Budget for the rules).
//
// Scripts are sent by SHA (EVALSHA) and, when the server answers NOSCRIPT
// (never seen, restarted, flushed, or another node of a cluster), whole.
// The keys of one call share a hash tag, so on a Redis Cluster each call
// goes to one node. Expiry runs on the server's clock, to the millisecond:
// a positive ttl under a millisecond becomes one. A ttl of zero or less
// stores the key without expiry, as shared.MemStore does.
//
// A Store is safe for concurrent use. The zero Store is not usable; build
// one with NewStore or NewClientStore.
//
// # Failover
//
// A Store over a client that can reload a cluster's map of slots (one with
// a ReloadState method: a *redis.ClusterClient, including those
// redis.NewFailoverClusterClient and redis.NewUniversalClient over several
// addresses return) asks it to reload whenever a command fails for want of
// an answer (a refused or reset connection, a timeout: anything but the
// server's own error reply, redis.Nil, a cancelled ctx or a closed
// client), at most once per ReloadEvery. Without it, a go-redis
// ClusterClient keeps sending the budget's slot to a master that died,
// which refuses connections and so never answers MOVED, until its
// ClusterStateReloadInterval (a minute by default) runs out; with it, the
// store reaches the promoted replica within about ReloadEvery of the
// promotion (0.01 to 0.21 s in internal/fleetproof's runs, where the
// cluster promoted 1 to 2.8 s past its cluster-node-timeout of 2 s).
// Nothing need be set on the client for a master that dies. For one that
// may hang instead (a frozen process, a host that drops packets), set two
// options on the client: ContextTimeoutEnabled, so that the shared.Link's
// Timeout bounds each round trip (else go-redis waits its ReadTimeout, 3 s
// by default, once per try), and a ReadTimeout near that Timeout, since
// the client's reload asks the nodes one after another and waits
// ReadTimeout on a hung one.
//
// A Sentinel failover client (redis.NewFailoverClient, a *redis.Client)
// follows a failover by itself: it asks the Sentinels for the master's
// address at every new connection and drops its connections when they
// announce a new master, so the Store has nothing to reload there. Its
// time to follow is the Sentinels' down-after-milliseconds and their
// election. A *redis.Client on one address, a *redis.Ring, and a Store
// over a *Pool (NewStore) have no map to reload: they follow only what the
// server's address does.
type Store struct {
	p      Processor
	prefix string
	r      *reloading // nil when the client has no map of slots to reload
}

var _ shared.Store = (*Store)(nil)

// NewStore returns a Store keeping its keys on p's server, each prefixed
// with prefix (for example "myservice:ward:"; it may be empty, and must not
// contain braces).
func NewStore(p *Pool, prefix string) *Store {
	return &Store{p: p, prefix: prefix}
}

// NewClientStore returns a Store over a go-redis client: c may be a
// *redis.Client, a *redis.ClusterClient, a Sentinel failover client, or
// anything else that runs a command (redis.UniversalClient is one).
//
// When c can reload a cluster's map of slots (see Store's section on
// failover), the Store asks it to whenever a command fails for want of an
// answer, at most once per ReloadEvery.
func NewClientStore(c Processor, prefix string) *Store {
	s := &Store{p: c, prefix: prefix}
	if rc, ok := c.(Reloader); ok {
		s.r = &reloading{p: c, rc: rc, now: time.Now}
		s.p = s.r
	}
	return s
}

// ReloadEvery is the least time between two reloads of a cluster's map of
// slots that a Store asks of its client: a store whose every command fails
// (a cluster with no live master for the slot) asks four times a second at
// most, and a failover is followed within this long of the promotion.
const ReloadEvery = 250 * time.Millisecond

// Reloader is a client that can reload a Redis Cluster's map of slots in
// the background, as *redis.ClusterClient's ReloadState does.
type Reloader interface {
	ReloadState(ctx context.Context)
}

// Reloads returns how many times the Store has asked its client to reload
// the cluster's map of slots (always 0 for a client without one).
func (s *Store) Reloads() uint64 {
	if s.r == nil {
		return 0
	}
	return s.r.reloads.Load()
}

// reloading is a Processor that asks its client to reload the cluster's
// map of slots after a command fails unanswered, at most once per
// ReloadEvery. It is safe for concurrent use.
type reloading struct {
	p       Processor
	rc      Reloader
	now     func() time.Time
	last    atomic.Int64 // when the last reload was asked, Unix ns; 0: never
	reloads atomic.Uint64
}

func (r *reloading) Process(ctx context.Context, cmd redis.Cmder) error {
	err := r.p.Process(ctx, cmd)
	if unanswered(err) {
		r.failed(ctx)
	}
	return err
}

// failed asks for a reload unless one was asked less than ReloadEvery ago.
// Of the failures of one burst, the one that wins the swap asks.
func (r *reloading) failed(ctx context.Context) {
	now := r.now().UnixNano()
	last := r.last.Load()
	if last != 0 && now-last < int64(ReloadEvery) {
		return
	}
	if !r.last.CompareAndSwap(last, now) {
		return
	}
	r.reloads.Add(1)
	// go-redis reloads in a goroutine of its own, one at a time, so this
	// returns at once; the ctx is not used for the reload itself.
	r.rc.ReloadState(context.WithoutCancel(ctx))
}

// unanswered reports whether err says the command got no answer from the
// server (a connection refused or reset, a timeout, an empty pool), which
// is what a master that died or hangs looks like, rather than the
// server's own error reply, a missing key, the caller's cancellation or a
// closed client.
func unanswered(err error) bool {
	var re redis.Error
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.As(err, &re),
		errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return false
	}
	return true
}

// script is a Lua script and its SHA-1, its name in the server's cache.
type script struct {
	src, sha string
}

func newScript(src string) script {
	h := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(h[:])}
}

// run runs s with keys and args into a command made by mk, by SHA first,
// whole when the server does not have it.
func run[C redis.Cmder](ctx context.Context, p Processor, s script, mk func(ctx context.Context, args ...any) C, keys []string, args ...any) (C, error) {
	build := func(verb, body string) C {
		a := make([]any, 0, 3+len(keys)+len(args))
		a = append(a, verb, body, len(keys))
		for _, k := range keys {
			a = append(a, k)
		}
		return mk(ctx, append(a, args...)...)
	}
	cmd := build("evalsha", s.sha)
	err := p.Process(ctx, cmd)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmd = build("eval", s.src)
		err = p.Process(ctx, cmd)
	}
	return cmd, err
}

// incrScript is Store.Incr's script. KEYS[1] is the counter, ARGV[1] its
// time to live in milliseconds for a new key (0: none).
var incrScript = newScript(`local n = redis.call('INCR', KEYS[1])
if n == 1 and tonumber(ARGV[1]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n`)

// incrUnderScript is Store.IncrUnder's script. KEYS[1] is the current
// window's count, KEYS[2] the previous one's; ARGV[1] the previous count's
// weight, ARGV[2] the limit, ARGV[3] a new count's time to live in
// milliseconds (0: none). It returns {count, admitted}. Lua's numbers are
// doubles, as Go's float64, so the comparison is the same in both.
var incrUnderScript = newScript(`local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
if cur == nil or prev == nil then
  return redis.error_reply('ERR value is not an integer or out of range')
end
if not (cur + prev * tonumber(ARGV[1]) < tonumber(ARGV[2])) then
  return {cur, 0}
end
local n = redis.call('INCR', KEYS[1])
if n == 1 and tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {n, 1}`)

// millis returns ttl in whole milliseconds for PX and PEXPIRE: 0 for none,
// at least 1 for a positive ttl.
func millis(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return max(ttl.Milliseconds(), 1)
}

// notInteger wraps a server's refusal to count a non-integer in
// shared.ErrNotInteger.
func notInteger(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.Contains(err.Error(), "not an integer") {
		return fmt.Errorf("%w: %w", shared.ErrNotInteger, err)
	}
	return err
}

// Incr implements shared.Store. A key holding something other than an
// integer fails with an error wrapping shared.ErrNotInteger.
func (s *Store) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	cmd, err := run(ctx, s.p, incrScript, redis.NewIntCmd, []string{s.prefix + key}, millis(ttl))
	if err != nil {
		return 0, notInteger(err)
	}
	return cmd.Val(), nil
}

// IncrUnder implements shared.Store. A key holding something other than an
// integer fails with an error wrapping shared.ErrNotInteger.
func (s *Store) IncrUnder(ctx context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error) {
	cmd, err := run(ctx, s.p, incrUnderScript, redis.NewIntSliceCmd, []string{s.prefix + key, s.prefix + prev},
		strconv.FormatFloat(weight, 'g', -1, 64), limit, millis(ttl))
	if err != nil {
		return 0, false, notInteger(err)
	}
	v := cmd.Val()
	if len(v) != 2 {
		return 0, false, fmt.Errorf("redisward: IncrUnder: unexpected reply %v", v)
	}
	return v[0], v[1] == 1, nil
}

// SetIfAbsent implements shared.Store.
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

// Get implements shared.Store.
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

// Del implements shared.Store.
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
