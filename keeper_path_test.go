package wardpool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// One path (keeper.go): every loan is a Take and every return a Give,
// under the lock. These tests pin down the hot loop of a release followed
// by an acquire: the books, Keep, Life, Check, Reset, Close, FIFO and Loans
// read as the Pool says. (Until 2026-12 a lock-free lane lent a resource
// given back a moment before without asking the Pool; these tests held it
// to the Pool, and now hold the one path.)

// makeParked acquires and releases twice, leaving a resource idle on top
// that was lent and given back a moment ago, and returns it.
func makeParked(t *testing.T, k *Keeper[*res]) *res {
	t.Helper()
	var r *res
	for range 2 {
		l := mustAcquire(t, k)
		l.Release()
		r = l.Value()
	}
	if s := k.Stats(); s.Idle < 1 {
		t.Fatalf("nothing idle after a release: %+v", s.Books)
	}
	return r
}

func TestPathBooksStayHonest(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4}})
	r := makeParked(t, k) // dialed, given back, lent again, given back
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{Live: 1, Idle: 1, Busy: 0}, pool.Books{Live: s.Live, Idle: s.Idle, Busy: s.Busy}); diff != "" {
		t.Fatalf("books with a resource given back (-want +got):\n%s", diff)
	}
	for range 3 {
		l := mustAcquire(t, k)
		if l.Value() != r {
			t.Fatal("LIFO: the hot resource was not the one lent")
		}
		l.Release()
	}
	s = k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Loans: 5, Reused: 4, Made: 1}, Acquires: 5}, Stats{Books: pool.Books{Loans: s.Loans, Reused: s.Reused, Made: s.Made}, Acquires: s.Acquires}); diff != "" {
		t.Fatalf("counters after 5 acquires, 4 of them from idle (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}

func TestPathKeepIsExact(t *testing.T) {
	d := &dialer{}
	keep := 10 * time.Second
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2, Keep: keep}})
	r := makeParked(t, k)
	parked := c.Now()
	// Nobody asks for it: the eviction timer retires it at Keep, not later.
	c.Advance(keep)
	if closedSoon(t, k, r) {
		t.Fatal("retired at exactly Keep idle; Keep is strict")
	}
	c.Advance(time.Millisecond)
	if !closedSoon(t, k, r) {
		t.Fatalf("still open %v after it came back, Keep %v", c.Now().Sub(parked), keep)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{IdleRetired: 1, Live: 0}, pool.Books{IdleRetired: s.IdleRetired, Live: s.Live}); diff != "" {
			t.Fatalf("stats (-want +got):\n%s", diff)
		}
	}
	checkBalanced(t, k, d)
}

func TestPathPastKeepOrLifeIsNotLent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits pool.Limits
		field  func(Stats) uint64
	}{
		{"keep", pool.Limits{Size: 2, Keep: 10 * time.Second}, func(s Stats) uint64 { return s.IdleRetired }},
		{"life", pool.Limits{Size: 2, Life: time.Minute}, func(s Stats) uint64 { return s.LifeRetired }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dialer{}
			k, c := newTestKeeper(t, d, Config[*res]{Limits: tc.limits})
			r := makeParked(t, k)
			c.Step(2 * time.Minute) // no timer runs: it is still idle
			l := mustAcquire(t, k)
			if l.Value() == r || !closedSoon(t, k, r) {
				t.Fatal("a resource past its age was lent")
			}
			l.Release()
			if s := k.Stats(); tc.field(s) != 1 {
				t.Fatalf("stats %+v", s)
			}
			checkBalanced(t, k, d)
		})
	}
}

func TestPathReleaseGoesToAWaiterNotToTheSlots(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	a := mustAcquire(t, k)
	got := make(chan *res)
	go func() {
		l := mustAcquire(t, k)
		got <- l.Value()
		l.Release()
	}()
	clocktest.Eventually(t, "the waiter to queue", func() bool { return k.Stats().Waiting == 1 })
	a.Release()
	if r := <-got; r != a.Value() {
		t.Fatal("the waiter was not handed the released resource")
	}
	checkBalanced(t, k, d)
}

func TestPathResetAndCloseRetireParkedResources(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	r := makeParked(t, k)
	k.Reset()
	if !closedSoon(t, k, r) {
		t.Fatal("Reset left an idle resource open")
	}
	l := mustAcquire(t, k)
	if l.Value() == r {
		t.Fatal("a resource made before Reset was lent after it")
	}
	l.Release()
	r2 := makeParked(t, k)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatalf("Close waited on an idle resource as if it were lent: %v", err)
	}
	if !closedSoon(t, k, r2) {
		t.Fatal("Close left an idle resource open")
	}
	if s := k.Stats(); s.Live != 0 {
		t.Fatalf("stats after Close %+v", s)
	}
}

func TestPathDoubleReleaseIsANoOp(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	makeParked(t, k)
	a := mustAcquire(t, k) // reused from idle
	a.Release()
	a.Release() // double: a no-op
	b := mustAcquire(t, k)
	if b.Value() != a.Value() {
		t.Fatal("want the same resource back")
	}
	a.Release() // late, while b holds it
	if !b.Valid() || k.Stats().Idle != 0 {
		t.Fatal("a stale loan gave back a resource lent to someone else")
	}
	b.Release()
	if s := k.Stats(); s.DoubleReleases != 2 {
		t.Fatalf("double releases %d, want 2", s.DoubleReleases)
	}
	checkBalanced(t, k, d)
}

func TestPathCheckRunsAfterCheckIdle(t *testing.T) {
	d := &dialer{}
	checks := 0
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:    pool.Limits{Size: 2},
		CheckIdle: 5 * time.Second,
		Check:     func(context.Context, *res) error { checks++; return errors.New("gone") },
	})
	r := makeParked(t, k)
	if checks != 0 {
		t.Fatalf("%d checks on resources fresh from use", checks)
	}
	c.Step(6 * time.Second)
	l := mustAcquire(t, k)
	if checks != 1 || l.Value() == r || !closedSoon(t, k, r) {
		t.Fatalf("checks %d; the failed idle resource was lent or left open", checks)
	}
	l.Release()
	if s := k.Stats(); s.CheckFailures != 1 || s.Acquires != 3 || s.Loans != 4 {
		// makeParked's two acquires, then this one, which met the failed
		// idle resource (a loan on the books, not an acquire) and a new one.
		t.Fatalf("stats %+v", s)
	}
	checkBalanced(t, k, d)
}

func TestPathLoansHeldFromTheirOwnStart(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	makeParked(t, k)
	c.Step(5 * time.Second)
	l := mustAcquire(t, k) // reused: its loan starts now, not at its first
	c.Step(2 * time.Second)
	loans := k.Loans()
	if len(loans) != 1 || loans[0].Item != l.Value() || loans[0].Held != 2*time.Second || l.Held() != 2*time.Second {
		t.Fatalf("loans %+v (Held %v), want one held 2s", loans, l.Held())
	}
	l.Release()
	if len(k.Loans()) != 0 {
		t.Fatal("an idle resource listed as a loan")
	}
}

func TestPathKeepsTheIdleCeiling(t *testing.T) {
	// With Idle below Size what the pool says at the ceiling stands: of
	// two releases, the second is retired.
	for _, l := range []pool.Limits{{Size: 4, Idle: 1}, {Idle: 1}} {
		d := &dialer{}
		k, _ := newTestKeeper(t, d, Config[*res]{Limits: l})
		mustAcquire(t, k).Release()
		a, b := mustAcquire(t, k), mustAcquire(t, k)
		clocktest.Eventually(t, "the dial to finish", func() bool { return settled(k) })
		a.Release()
		if k.Stats().Idle != 1 {
			t.Fatalf("%+v: below the Idle ceiling, the release was not kept", l)
		}
		b.Release()
		if !closedSoon(t, k, b.Value()) || closedSoon(t, k, a.Value()) {
			t.Fatalf("%+v: want the second release retired at the Idle ceiling, the first kept", l)
		}
		{
			s := k.Stats()
			if diff := cmp.Diff(pool.Books{Idle: 1, Retired: 1}, pool.Books{Idle: s.Idle, Retired: s.Retired}); diff != "" {
				t.Fatalf("%+v: books %+v (-want +got):\n%s", l, s.Books, diff)
			}
		}
		if c := mustAcquire(t, k); c.Value() != a.Value() {
			t.Fatalf("%+v: lent %d, want the kept one", l, c.Value().id)
		} else {
			c.Release()
		}
		checkBalanced(t, k, d)
	}
}

func TestPathMinIdleIsKept(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 3}, MinIdle: 1})
	dialing := func() int { k.mu.Lock(); defer k.mu.Unlock(); return k.stats.dialing }
	opened := func() int { n, _, _ := d.counts(); return n }
	clocktest.Eventually(t, "MinIdle warm", func() bool { return opened() == 1 && dialing() == 0 })
	x := mustAcquire(t, k) // the warm one; one more is dialed to stay at one idle
	clocktest.Eventually(t, "top-up", func() bool { return opened() == 2 && dialing() == 0 })
	x.Release()
	a := mustAcquire(t, k) // x again: one idle left, nothing dialed
	b := mustAcquire(t, k) // none idle: one dialed
	clocktest.Eventually(t, "top-up", func() bool { return opened() == 3 && dialing() == 0 })
	c := mustAcquire(t, k) // Size reached: nothing dialed
	a.Release()
	if k.Stats().Idle != 1 {
		t.Fatal("want a idle")
	}
	b.Destroy() // room for one more, but a is idle: no dial
	if n := dialing(); n != 0 {
		t.Fatalf("%d dials with a resource idle and MinIdle 1", n)
	}
	l := mustAcquire(t, k) // a: none idle now, so one is dialed
	if l.Value() != a.Value() {
		t.Fatal("want the idle resource")
	}
	clocktest.Eventually(t, "top-up after an acquire of the last idle one", func() bool { return opened() == 4 })
	l.Release()
	c.Release()
	clocktest.Eventually(t, "dials to settle", func() bool { return dialing() == 0 })
	checkBalanced(t, k, d)
}

func TestPathReleaseRunsTheResetHook(t *testing.T) {
	d := &dialer{}
	resets := 0
	fail := false
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		BeforeReuse: func(context.Context, *res) error {
			resets++
			if fail {
				return errors.New("dirty")
			}
			return nil
		},
	})
	r := makeParked(t, k)
	fail = true
	l := mustAcquire(t, k)
	l.Release()
	if resets < 2 || !closedSoon(t, k, r) || k.Stats().Idle != 0 {
		t.Fatalf("resets %d; a resource that failed Reset was kept or left open", resets)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Dropped: 1, Live: 0}, pool.Books{Dropped: s.Dropped, Live: s.Live}); diff != "" {
			t.Fatalf("stats (-want +got):\n%s", diff)
		}
	}
	checkBalanced(t, k, d)
}

func TestPathZeroAllocs(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.DefaultLimits})
	makeParked(t, k)
	allocs := testing.AllocsPerRun(1000, func() {
		l, err := k.Acquire(bg)
		if err != nil {
			panic(err)
		}
		l.Release()
	})
	if allocs != 0 {
		t.Fatalf("Acquire+Release of an idle resource allocates %v times", allocs)
	}
}

func TestPathLendsMostRecentlyReturnedFirst(t *testing.T) {
	// Release c1, c2, c3 in that order, then acquire three times: the seeds'
	// rule (and the pool's) lends c3, c2, c1, whoever read the books in
	// between.
	for _, stats := range []bool{false, true} {
		d := &dialer{}
		k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 3}})
		var out []Loan[*res]
		for range 3 {
			out = append(out, mustAcquire(t, k))
		}
		for _, l := range out {
			l.Release()
			if stats {
				k.Stats()
			}
		}
		for i := 2; i >= 0; i-- {
			l := mustAcquire(t, k)
			if l.Value() != out[i].Value() {
				t.Fatalf("stats %v: acquire %d lent resource %d, want %d (most recently returned first)",
					stats, 3-i, l.Value().id, out[i].Value().id)
			}
			defer l.Release()
		}
	}
}

func TestPathStaleResourceIsNeverInLimbo(t *testing.T) {
	// A resource past Keep is not lent: the pool answers Stale for it, and
	// a TryAcquire with room dials at once, as the pool would, instead of
	// answering ErrWouldWait beside it.
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1, Keep: time.Second}})
	r := makeParked(t, k)
	c.Step(2 * time.Second) // no timer runs: it stays idle
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryAcquire beside a stale resource = %v, want ErrWouldWait and a dial", err)
	}
	if !closedSoon(t, k, r) {
		t.Fatal("the stale resource was not closed")
	}
	clocktest.Eventually(t, "the dial TryAcquire started", func() bool { return k.Stats().Idle == 1 })
	l, err := k.TryAcquire(bg)
	if err != nil || l.Value() == r {
		t.Fatalf("TryAcquire after the dial = %v, %v", l.Value(), err)
	}
	l.Release()
	checkBalanced(t, k, d)
}
