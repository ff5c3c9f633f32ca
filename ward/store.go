package ward

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
)

// Store is the port through which shared guards keep their state where every
// replica of a service can see it. Its shape is Redis's, so an adapter is a
// handful of commands: INCR with an expiry set on creation, SET NX PX, GET and
// DEL. Expiry runs on the store's clock, not the caller's.
//
// Implementations must make each method atomic: two Incr calls on one key
// from two replicas at once must yield two distinct values, and of two
// SetIfAbsent calls on one key exactly one may succeed. Errors are returned,
// never swallowed; ctx bounds each call.
type Store interface {
	// Incr adds one to the integer at key and returns the new value. A key
	// that did not exist is created at zero first and given ttl to live; an
	// existing key keeps the expiry it had. (Redis: INCR and EXPIRE NX in
	// one MULTI, or a script, so that a key is never left without expiry.)
	Incr(ctx context.Context, key string, ttl time.Duration) (int64, error)
	// SetIfAbsent stores value at key with ttl to live unless key exists, and
	// reports whether it stored. (Redis: SET key value NX PX ttl.)
	SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Get returns the value at key and whether it exists.
	Get(ctx context.Context, key string) (string, bool, error)
	// Del removes the keys; keys that do not exist are no error.
	Del(ctx context.Context, keys ...string) error
}

// ErrNotInteger is returned by [MemStore.Incr] for a key that holds something
// other than a decimal integer, as Redis refuses INCR on such a key.
var ErrNotInteger = errors.New("ward: value is not an integer")

// MemStore is a [Store] in one process's memory: it shares state between the
// guards of one process, not between replicas, which is the trade every
// in-memory adapter makes. Expiry runs on the clock passed to [NewMemStore]
// and is checked when a key is touched, so the store starts no goroutine.
//
// A MemStore is safe for concurrent use. The zero MemStore is an empty store
// whose keys never expire.
type MemStore struct {
	clock func() time.Time

	mu   sync.Mutex // guards keys
	keys map[string]memEntry
}

type memEntry struct {
	value   string
	expires time.Time // zero: never
}

// NewMemStore returns an empty store whose expiries run on clock (time.Now in
// production, a fake in tests). A nil clock means keys never expire.
func NewMemStore(clock func() time.Time) *MemStore {
	return &MemStore{clock: clock}
}

// liveLocked returns the entry at key if it exists and has not expired,
// removing it if it has. mu must be held.
func (s *MemStore) liveLocked(key string, now time.Time) (memEntry, bool) {
	e, ok := s.keys[key]
	if !ok {
		return memEntry{}, false
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		delete(s.keys, key)
		return memEntry{}, false
	}
	return e, true
}

// now reads the store's clock; the zero time when it has none.
func (s *MemStore) now() time.Time {
	if s.clock == nil {
		return time.Time{}
	}
	return s.clock()
}

// expiry returns when a key given ttl at now expires; zero for none.
func (s *MemStore) expiry(now time.Time, ttl time.Duration) time.Time {
	if s.clock == nil || ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

func (s *MemStore) setLocked(key string, e memEntry) {
	if s.keys == nil {
		s.keys = make(map[string]memEntry)
	}
	s.keys[key] = e
}

// Incr implements [Store]. A ttl of zero or less leaves a new key without
// expiry.
func (s *MemStore) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.liveLocked(key, now)
	var n int64
	if ok {
		v, err := strconv.ParseInt(e.value, 10, 64)
		if err != nil {
			return 0, ErrNotInteger
		}
		n = v
	} else {
		e.expires = s.expiry(now, ttl)
	}
	n++
	e.value = strconv.FormatInt(n, 10)
	s.setLocked(key, e)
	return n, nil
}

// SetIfAbsent implements [Store]. A ttl of zero or less stores the key
// without expiry.
func (s *MemStore) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.liveLocked(key, now); ok {
		return false, nil
	}
	s.setLocked(key, memEntry{value: value, expires: s.expiry(now, ttl)})
	return true, nil
}

// Get implements [Store].
func (s *MemStore) Get(ctx context.Context, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.liveLocked(key, now)
	return e.value, ok, nil
}

// Del implements [Store].
func (s *MemStore) Del(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.keys, k)
	}
	return nil
}
