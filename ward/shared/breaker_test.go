package shared

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand; safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// replicas returns n breakers over one store, as n processes would hold.
func replicas(n int, store Store) []*Breaker {
	out := make([]*Breaker, n)
	for i := range out {
		out[i] = NewBreaker(Link{Store: store, Timeout: time.Minute}, "svc", DefaultBreaker)
	}
	return out
}

func TestMemStore(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	s := NewMemStore(clock.Now)
	if n, _ := s.Incr(ctx, "c", time.Second); n != 1 {
		t.Fatalf("first Incr = %d", n)
	}
	clock.Add(600 * time.Millisecond)
	if n, _ := s.Incr(ctx, "c", time.Second); n != 2 {
		t.Fatalf("second Incr = %d", n)
	}
	clock.Add(400 * time.Millisecond) // one second since creation: expired, not extended
	if n, _ := s.Incr(ctx, "c", time.Second); n != 1 {
		t.Fatalf("Incr after expiry = %d, want 1 (the expiry is set on creation only)", n)
	}
	if ok, _ := s.SetIfAbsent(ctx, "k", "a", time.Second); !ok {
		t.Fatal("SetIfAbsent on a new key failed")
	}
	if ok, _ := s.SetIfAbsent(ctx, "k", "b", time.Second); ok {
		t.Fatal("SetIfAbsent on an existing key succeeded")
	}
	if v, ok, _ := s.Get(ctx, "k"); !ok || v != "a" {
		t.Fatalf("Get = %q %v, want the first value", v, ok)
	}
	if _, err := s.Incr(ctx, "k", 0); !errors.Is(err, ErrNotInteger) {
		t.Fatalf("Incr on a string = %v, want ErrNotInteger", err)
	}
	clock.Add(time.Second)
	if _, ok, _ := s.Get(ctx, "k"); ok {
		t.Fatal("key outlived its ttl")
	}
	s.SetIfAbsent(ctx, "forever", "x", 0)
	s.Del(ctx, "c", "missing")
	clock.Add(1000 * time.Hour)
	if _, ok, _ := s.Get(ctx, "forever"); !ok {
		t.Fatal("a key with no ttl expired")
	}
	if _, ok, _ := s.Get(ctx, "c"); ok {
		t.Fatal("Del left the key")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Incr(cancelled, "c", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Incr with a cancelled ctx = %v", err)
	}
	if _, err := s.SetIfAbsent(cancelled, "z", "", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("SetIfAbsent with a cancelled ctx = %v", err)
	}
	if _, _, err := s.Get(cancelled, "z"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled ctx = %v", err)
	}
	if err := s.Del(cancelled, "z"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Del with a cancelled ctx = %v", err)
	}
	var zero MemStore // no clock: nothing expires
	zero.SetIfAbsent(ctx, "k", "v", time.Nanosecond)
	if _, ok, _ := zero.Get(ctx, "k"); !ok {
		t.Fatal("the zero MemStore expired a key")
	}
}

// TestBreakerConcurrentFailuresAllCount is the seed's point about
// atomic increments: twenty replicas failing at the same moment advance the
// count by twenty and open the breaker.
func TestBreakerConcurrentFailuresAllCount(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	rs := replicas(20, store)
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			if err := r.Fail(ctx, t0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if v, _, _ := store.Get(ctx, "{svc}:failures"); v != "20" {
		t.Fatalf("failure count = %q, want 20", v)
	}
	for i, r := range rs {
		if st, _ := r.State(ctx, t0); st != Open {
			t.Fatalf("replica %d sees %v, want open", i, st)
		}
		if _, ok, _ := r.Allow(ctx, t0.Add(time.Second)); ok {
			t.Fatalf("replica %d let a call through while open", i)
		}
	}
}

func TestBreakerOpensAtTheLineAndKeepsTheFirstMoment(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	a, b := replicas(2, store)[0], replicas(2, store)[1]
	for i := range 4 {
		a.Fail(ctx, at(time.Duration(i)*time.Millisecond))
	}
	if st, _ := b.State(ctx, at(4*time.Millisecond)); st != Closed {
		t.Fatalf("open after four failures of five: %v", st)
	}
	b.Fail(ctx, at(100*time.Millisecond)) // the fifth crosses the line
	opened := at(100 * time.Millisecond)
	for i := range 10 { // later failures must not push the cooldown
		a.Fail(ctx, opened.Add(time.Duration(i+1)*time.Second))
	}
	if v, _, _ := store.Get(ctx, "{svc}:open"); v != strconv.FormatInt(opened.UnixNano(), 10) {
		t.Fatalf("open marker = %s, want the first opener's moment %d", v, opened.UnixNano())
	}
	if st, _ := a.State(ctx, opened.Add(DefaultBreaker.Cooldown-time.Nanosecond)); st != Open {
		t.Fatalf("state just before the cooldown ends = %v, want open", st)
	}
	if st, _ := a.State(ctx, opened.Add(DefaultBreaker.Cooldown)); st != HalfOpen {
		t.Fatalf("state at the end of the cooldown = %v, want half-open", st)
	}
}

// TestBreakerOneProbe: N replicas reaching the end of the cooldown
// together produce exactly one trial call, and its success closes the breaker
// for all.
func TestBreakerOneProbe(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	rs := replicas(16, store)
	for range DefaultBreaker.Failures {
		rs[0].Fail(ctx, t0)
	}
	now := t0.Add(DefaultBreaker.Cooldown)
	var probes atomic.Int32
	var probe atomic.Pointer[Call]
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			c, ok, err := r.Allow(ctx, now)
			if err != nil {
				t.Error(err)
			}
			if ok {
				probes.Add(1)
				if !c.Probe {
					t.Error("let through while half-open without being the probe")
				}
				probe.Store(&c)
			}
		})
	}
	wg.Wait()
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes, want exactly 1", n)
	}
	if err := probe.Load().Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		c, ok, _ := r.Allow(ctx, now)
		if !ok || c.Probe {
			t.Fatalf("replica %d after a successful probe: ok %v probe %v, want a plain call", i, ok, c.Probe)
		}
	}
	if _, ok, _ := store.Get(ctx, "{svc}:failures"); ok {
		t.Fatal("the failure count survived the close")
	}
}

func TestBreakerFailedProbeWaitsForTheLease(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	b := NewBreaker(Link{Store: store}, "svc", DefaultBreaker)
	for range DefaultBreaker.Failures {
		b.Fail(ctx, t0)
	}
	now := clock.Add(DefaultBreaker.Cooldown)
	c, ok, _ := b.Allow(ctx, now)
	if !ok || !c.Probe {
		t.Fatal("no probe after the cooldown")
	}
	c.Fail(ctx, now)
	now = clock.Add(DefaultBreaker.Lease - time.Millisecond)
	if _, ok, _ := b.Allow(ctx, now); ok {
		t.Fatal("a second probe within the first one's lease")
	}
	now = clock.Add(time.Millisecond)
	if c, ok, _ := b.Allow(ctx, now); !ok || !c.Probe {
		t.Fatal("no new probe once the failed probe's lease ran out")
	}
	// Successes that are not probes write nothing.
	var zero Call
	if zero.Pass(ctx) != nil || zero.Fail(ctx, now) != nil {
		t.Fatal("the zero Call did something")
	}
	// Left open with no successful probe, the marker is forgotten after Hold.
	clock.Add(DefaultBreaker.Hold)
	if st, _ := b.State(ctx, clock.Now()); st != Closed {
		t.Fatalf("state after Hold = %v, want closed", st)
	}
}

// brokenStore fails every call.
type brokenStore struct{}

var errBroken = errors.New("store down")

func (brokenStore) Incr(context.Context, string, time.Duration) (int64, error) { return 0, errBroken }
func (brokenStore) IncrUnder(context.Context, string, string, float64, int64, time.Duration) (int64, bool, error) {
	return 0, false, errBroken
}
func (brokenStore) SetIfAbsent(context.Context, string, string, time.Duration) (bool, error) {
	return false, errBroken
}
func (brokenStore) Get(context.Context, string) (string, bool, error) { return "", false, errBroken }
func (brokenStore) Del(context.Context, ...string) error              { return errBroken }
func (brokenStore) Budget(context.Context, BudgetOp) (BudgetReply, error) {
	return BudgetReply{}, errBroken
}

// TestBreakerFallsBackToALocalBreaker: with the store down, the breaker
// lets calls through and says why, counts its own failures with the same
// policy, opens locally at the line for Cooldown, and counts every
// decision it made alone.
func TestBreakerFallsBackToALocalBreaker(t *testing.T) {
	ctx := context.Background()
	b := NewBreaker(Link{Store: brokenStore{}}, "svc", DefaultBreaker)
	c, ok, err := b.Allow(ctx, t0)
	if !ok || !errors.Is(err, errBroken) {
		t.Fatalf("Allow on a broken store = %v, %v; want true and the error", ok, err)
	}
	if err := c.Fail(ctx, t0); !errors.Is(err, errBroken) {
		t.Fatalf("Fail on a broken store = %v", err)
	}
	if _, err := b.State(ctx, t0); !errors.Is(err, errBroken) {
		t.Fatalf("State on a broken store = %v", err)
	}
	for i := 1; i < DefaultBreaker.Failures-1; i++ {
		b.Fail(ctx, t0)
	}
	if _, ok, _ := b.Allow(ctx, t0); !ok {
		t.Fatal("the local fallback opened below the line")
	}
	b.Fail(ctx, t0) // the fifth
	if _, ok, _ := b.Allow(ctx, t0.Add(DefaultBreaker.Cooldown-time.Nanosecond)); ok {
		t.Fatal("the local fallback let a call through while open")
	}
	if b.Seen() != Open {
		t.Fatalf("Seen = %v, want open", b.Seen())
	}
	if _, ok, _ := b.Allow(ctx, t0.Add(DefaultBreaker.Cooldown)); !ok {
		t.Fatal("the local fallback stayed open past the cooldown")
	}
	st := b.Stats()
	if st.Fallbacks != 4 || st.StoreErrors != st.Trips || st.Trips != uint64(4+1+DefaultBreaker.Failures) {
		t.Fatalf("stats %+v, want 4 fallbacks and every trip an error", st)
	}
	// The lease step failing falls back as well.
	store := &halfBroken{MemStore: NewMemStore(nil)}
	h := NewBreaker(Link{Store: store}, "svc", DefaultBreaker)
	for range DefaultBreaker.Failures {
		h.Fail(ctx, t0)
	}
	store.broken = true
	if _, ok, err := h.Allow(ctx, t0.Add(time.Hour)); !ok || !errors.Is(err, errBroken) {
		t.Fatalf("Allow with a failing lease = %v, %v; want true and the error", ok, err)
	}
	c = Call{b: h, Probe: true}
	if err := c.Pass(ctx); err != nil {
		t.Fatalf("Pass: %v", err)
	}
}

// slowStore answers nothing until its caller's ctx ends.
type slowStore struct{ brokenStore }

func (slowStore) Get(ctx context.Context, _ string) (string, bool, error) {
	<-ctx.Done()
	return "", false, ctx.Err()
}

// TestBreakerTimeoutBoundsTheCaller: a store that never answers holds Allow
// for the link's timeout, not for the caller's ctx.
func TestBreakerTimeoutBoundsTheCaller(t *testing.T) {
	b := NewBreaker(Link{Store: slowStore{}, Timeout: time.Millisecond}, "svc", DefaultBreaker)
	_, ok, err := b.Allow(context.Background(), t0)
	if !ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Allow on a silent store = %v %v, want through with DeadlineExceeded", ok, err)
	}
	if st := b.Stats(); st.Fallbacks != 1 || st.StoreErrors != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// halfBroken fails SetIfAbsent once broken is set.
type halfBroken struct {
	*MemStore
	broken bool
}

func (h *halfBroken) SetIfAbsent(ctx context.Context, k, v string, ttl time.Duration) (bool, error) {
	if h.broken {
		return false, errBroken
	}
	return h.MemStore.SetIfAbsent(ctx, k, v, ttl)
}

func TestBreakerPolicyClampedAndNames(t *testing.T) {
	got := NewBreaker(Link{Store: NewMemStore(nil)}, "k", BreakerPolicy{Cooldown: -1}).Policy()
	want := BreakerPolicy{Failures: 1, Window: time.Millisecond, Cooldown: 0, Lease: time.Millisecond, Hold: time.Millisecond}
	if got != want {
		t.Fatalf("clamped = %+v, want %+v", got, want)
	}
	for s, name := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open"} {
		if s.String() != name {
			t.Errorf("%d.String() = %q", s, s.String())
		}
	}
	// A marker that does not parse counts as cooled: the breaker probes.
	ctx := context.Background()
	store := NewMemStore(nil)
	store.SetIfAbsent(ctx, "{k}:open", "garbage", 0)
	b := NewBreaker(Link{Store: store}, "k", DefaultBreaker)
	if st, _ := b.State(ctx, t0); st != HalfOpen {
		t.Fatalf("state with a garbled marker = %v, want half-open", st)
	}
}
