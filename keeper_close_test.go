package wardpool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

func TestKeeperCloseWithLoansOut(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	out := mustAcquire(t, k)
	back := mustAcquire(t, k)
	waiting := queued(t, k, bg, 1)

	// Close with a context that ends: a loan is still out.
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { errc <- k.Close(ctx) }()
	if r := <-waiting; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("waiter: %v", r.err)
	}
	if _, err := k.Acquire(bg); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v", err)
	}
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryAcquire after Close = %v", err)
	}
	back.Release()
	if !closedSoon(t, k, back.Value()) {
		t.Fatal("a loan returned after Close was not closed")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a loan out and its ctx ended = %v", err)
	}

	// Close again, and bring the last loan home: Close returns once it is.
	done := make(chan error, 1)
	go func() { done <- k.Close(bg) }()
	out.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !closedSoon(t, k, out.Value()) {
		t.Fatal("the returning loan was not closed")
	}
	if s := k.Stats(); s.Live != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkBalanced(t, k, d)
}

func TestKeeperCloseClosesIdle(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	a.Release()
	b.Release()
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	if !closedSoon(t, k, a.Value()) || !closedSoon(t, k, b.Value()) || d.open() != 0 {
		t.Fatal("idle resources left open by Close")
	}
}

func TestKeeperCloseCancelsDials(t *testing.T) {
	d := &dialer{gate: make(chan struct{})} // never opened
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, Logger: quietLogger()})
	errc := make(chan error, 1)
	go func() { _, err := k.Acquire(bg); errc <- err }()
	clocktest.Eventually(t, "the dial", func() bool { return k.Stats().Dialing == 1 })
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire during Close = %v", err)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(Stats{Books: pool.Books{Live: 0}, Dialing: 0}, Stats{Books: pool.Books{Live: s.Live}, Dialing: s.Dialing}); diff != "" {
			t.Fatalf("stats (-want +got):\n%s", diff)
		}
	}
}

func TestKeeperEvictsOnItsOneTimerAndKeepsMinIdle(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:  pool.Limits{Size: 4, Keep: time.Minute},
		MinIdle: 1,
	})
	clocktest.Eventually(t, "MinIdle warmed", func() bool { return k.Stats().Idle == 1 })
	// One at a time, each taking the warm one and the pool warming the
	// next (a caller dialing while a warm one lands would take that one,
	// and its own dial would then land idle: one more made).
	a := mustAcquire(t, k)
	clocktest.Eventually(t, "MinIdle topped up", func() bool { s := k.Stats(); return s.Idle == 1 && s.Dialing == 0 })
	b := mustAcquire(t, k)
	clocktest.Eventually(t, "MinIdle topped up again", func() bool { s := k.Stats(); return s.Idle == 1 && s.Dialing == 0 })
	a.Release()
	b.Release()
	if n := k.Stats().Idle; n != 3 {
		t.Fatalf("idle %d", n)
	}
	c.Advance(61 * time.Second) // all three pass Keep
	clocktest.Eventually(t, "the MinIdle dial after eviction", func() bool { s := k.Stats(); return s.Idle == 1 && s.Dialing == 0 })
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{IdleRetired: 3, Made: 4}, pool.Books{IdleRetired: s.IdleRetired, Made: s.Made}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d timers set, want the one", c.Pending())
	}
	checkBalanced(t, k, d)
}

func TestKeeperLifeJitterSpreadsRetirement(t *testing.T) {
	d := &dialer{}
	draws := []float64{0, 0.99}
	i := 0
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:     pool.Limits{Size: 2, Life: time.Minute},
		LifeJitter: 10 * time.Second,
		Rand:       func() float64 { v := draws[i%2]; i++; return v },
	})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	a.Release()
	b.Release()
	c.Advance(61 * time.Second)
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Idle: 1, LifeRetired: 1}, pool.Books{Idle: s.Idle, LifeRetired: s.LifeRetired}); diff != "" {
			t.Fatalf("after 61 s (-want +got):\n%s", diff)
		}
	}
	c.Advance(10 * time.Second)
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Idle: 0, LifeRetired: 2}, pool.Books{Idle: s.Idle, LifeRetired: s.LifeRetired}); diff != "" {
			t.Fatalf("after 71 s (-want +got):\n%s", diff)
		}
	}
}

func TestKeeperLeakWatch(t *testing.T) {
	d := &dialer{}
	var mu sync.Mutex
	var leaks []Leak[*res]
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:    pool.Limits{Size: 2},
		LeakAfter: time.Minute,
		OnLeak:    func(l Leak[*res]) { mu.Lock(); leaks = append(leaks, l); mu.Unlock() },
	})
	l := acquireForLeak(t, k)
	short := mustAcquire(t, k)
	c.Advance(30 * time.Second)
	short.Release()
	c.Advance(31 * time.Second)
	c.Advance(5 * time.Minute) // reported once only
	mu.Lock()
	if len(leaks) != 1 {
		t.Fatalf("%d reports, want 1", len(leaks))
	}
	got := leaks[0]
	mu.Unlock()
	if got.Item != l.Value() || got.Returned || got.Held < time.Minute {
		t.Fatalf("report %+v", got)
	}
	if !strings.Contains(string(got.Stack), "acquireForLeak") {
		t.Fatalf("the stack does not show who acquired:\n%s", got.Stack)
	}
	l.Release()
	mu.Lock()
	defer mu.Unlock()
	if len(leaks) != 2 || !leaks[1].Returned || leaks[1].Held < 6*time.Minute {
		t.Fatalf("no report of the return: %+v", leaks)
	}
	if s := k.Stats(); s.Leaks != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func acquireForLeak(t *testing.T, k *Keeper[*res]) Loan[*res] { return mustAcquire(t, k) }

func TestKeeperNoLeakWatchRecordsNoStack(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	l := mustAcquire(t, k)
	c.Advance(time.Hour)
	k.mu.Lock()
	lw := l.e.lw
	k.mu.Unlock()
	if lw != nil || k.Stats().Leaks != 0 || c.Pending() != 0 {
		t.Fatal("the leak watch ran while off")
	}
	l.Release()
}

func TestKeeperLoansAndHeld(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a := mustAcquire(t, k)
	c.Advance(time.Second)
	b := mustAcquire(t, k)
	c.Advance(time.Second)
	if a.Held() != 2*time.Second || b.Held() != time.Second {
		t.Fatalf("held %v, %v", a.Held(), b.Held())
	}
	loans := k.Loans()
	if len(loans) != 2 || loans[0].Item != a.Value() || loans[0].Held != 2*time.Second {
		t.Fatalf("loans %+v", loans)
	}
	a.Release()
	b.Release()
}

func TestKeeperLeakWatchAllocatesNothingPerLoan(t *testing.T) {
	// The stack is recorded as program counters in the loan's entry, and
	// symbolised only when a leak is reported: a loan allocates nothing.
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, LeakAfter: time.Minute, OnLeak: func(Leak[*res]) {}})
	mustAcquire(t, k).Release()
	allocs := testing.AllocsPerRun(1000, func() {
		l, err := k.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Acquire+Release with the leak watch on, want 0", allocs)
	}
	l := mustAcquire(t, k)
	k.mu.Lock()
	n := l.e.lw.stack.n
	k.mu.Unlock()
	if n == 0 {
		t.Fatal("no stack recorded with the leak watch on")
	}
	l.Release()
}

// TestKeeperKeepsMinLive: MinLive is a floor on every resource open, idle
// or lent (pgxpool's MinConns), not on the idle ones: a loan out of it
// starts no dial, a resource destroyed under it is replaced, and with
// MinIdle beside it both floors hold.
func TestKeeperKeepsMinLive(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4}, MinLive: 2})
	clocktest.Eventually(t, "MinLive warmed", func() bool { s := k.Stats(); return s.Idle == 2 && s.Dialing == 0 })
	a := mustAcquire(t, k)
	// The loan was decided under the lock, and a dial it started would be
	// counted there too: read at once.
	if s := k.Stats(); s.Dialing != 0 || s.Made != 2 || s.Live != 2 {
		t.Fatalf("after a loan out of MinLive 2: dialing %d, made %d, live %d; want 0, 2, 2", s.Dialing, s.Made, s.Live)
	}
	a.Destroy()
	clocktest.Eventually(t, "the destroyed one replaced", func() bool { s := k.Stats(); return s.Idle == 2 && s.Dialing == 0 })
	if s := k.Stats(); s.Made != 3 || s.Live != 2 {
		t.Fatalf("after the replacement: made %d, live %d; want 3, 2", s.Made, s.Live)
	}
	checkBalanced(t, k, d)

	d2 := &dialer{}
	k2, _ := newTestKeeper(t, d2, Config[*res]{Limits: pool.Limits{Size: 4}, MinLive: 3, MinIdle: 1})
	clocktest.Eventually(t, "MinLive 3 warmed", func() bool { s := k2.Stats(); return s.Idle == 3 && s.Dialing == 0 })
	b, c := mustAcquire(t, k2), mustAcquire(t, k2)
	if s := k2.Stats(); s.Dialing != 0 || s.Made != 3 {
		t.Fatalf("two loans leaving one idle of MinIdle 1: dialing %d, made %d; want 0, 3", s.Dialing, s.Made)
	}
	e := mustAcquire(t, k2) // the last idle one: MinIdle is short now
	clocktest.Eventually(t, "MinIdle topped up beside MinLive", func() bool { s := k2.Stats(); return s.Idle == 1 && s.Dialing == 0 })
	for _, l := range []Loan[*res]{b, c, e} {
		l.Release()
	}
	if s := k2.Stats(); s.Made != 4 || s.Idle != 4 {
		t.Fatalf("all home: made %d, idle %d; want 4, 4", s.Made, s.Idle)
	}
	checkBalanced(t, k2, d2)
}
