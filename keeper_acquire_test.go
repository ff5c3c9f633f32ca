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
	"github.com/wardpool/wardpool/ward"
)

var bg = context.Background()

func mustAcquire(t testing.TB, k *Keeper[*res]) Loan[*res] {
	t.Helper()
	l, err := k.Acquire(bg)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return l
}

func TestKeeperConfigErrors(t *testing.T) {
	d := &dialer{}
	ok := Config[*res]{Dial: d.Dial, Close: d.Close}
	cases := []struct {
		name string
		edit func(*Config[*res])
		want string
	}{
		{"no dial", func(c *Config[*res]) { c.Dial = nil }, "Dial is nil"},
		{"no close", func(c *Config[*res]) { c.Close = nil }, "Close is nil"},
		{"negative size", func(c *Config[*res]) { c.Limits.Size = -1 }, "Size is -1"},
		{"negative min idle", func(c *Config[*res]) { c.MinIdle = -1 }, "MinIdle is -1"},
		{"min idle over size", func(c *Config[*res]) { c.Limits.Size = 2; c.MinIdle = 3 }, "more than Limits.Size"},
		{"min idle over idle", func(c *Config[*res]) { c.Limits.Idle = 2; c.MinIdle = 3 }, "more than Limits.Idle"},
		{"negative min live", func(c *Config[*res]) { c.MinLive = -1 }, "MinLive is -1"},
		{"min live over size", func(c *Config[*res]) { c.Limits.Size = 2; c.MinLive = 3 }, "MinLive is 3, more than Limits.Size"},
		{"min live over idle", func(c *Config[*res]) { c.Limits.Idle = 2; c.MinLive = 3 }, "MinLive is 3, more than Limits.Idle"},
		{"negative jitter", func(c *Config[*res]) { c.LifeJitter = -1 }, "LifeJitter"},
		{"negative leak", func(c *Config[*res]) { c.LeakAfter = -1 }, "LeakAfter"},
	}
	for _, c := range cases {
		cfg := ok
		c.edit(&cfg)
		_, err := NewKeeper(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrConfig saying %q", c.name, err, c.want)
		}
	}
}

func TestKeeperLendsDialsAndReuses(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a := mustAcquire(t, k)
	b := mustAcquire(t, k)
	if a.Value() == b.Value() {
		t.Fatal("two loans of one resource")
	}
	a.Release()
	c := mustAcquire(t, k)
	if c.Value() != a.Value() {
		t.Fatalf("got r%d, want the one just given back r%d", c.Value().id, a.Value().id)
	}
	if !c.Valid() || a.Valid() {
		t.Fatalf("valid: c %v (want true), a %v (want false)", c.Valid(), a.Valid())
	}
	b.Release()
	c.Release()
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Made: 2, Idle: 2, Busy: 0, Reused: 1}, Acquires: 3, EmptyAcquires: 2}, Stats{Books: pool.Books{Made: s.Made, Idle: s.Idle, Busy: s.Busy, Reused: s.Reused}, Acquires: s.Acquires, EmptyAcquires: s.EmptyAcquires}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}

func TestKeeperDoubleReleaseIsANoOpEvenAfterRelending(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	first := mustAcquire(t, k)
	copyOf := first
	first.Release()
	second := mustAcquire(t, k) // the same resource, lent again
	if second.Value() != first.Value() {
		t.Fatal("not the same resource")
	}
	copyOf.Release()
	first.Destroy()
	if v := first.Hijack(); v != nil {
		t.Fatalf("Hijack of an ended loan returned %v", v)
	}
	if !second.Valid() {
		t.Fatal("the second loan was ended by the first one's late release")
	}
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Busy: 1, Idle: 0, Live: 1}, DoubleReleases: 3}, Stats{Books: pool.Books{Busy: s.Busy, Idle: s.Idle, Live: s.Live}, DoubleReleases: s.DoubleReleases}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	// The pool cannot lend it a second time while the second loan holds it.
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryAcquire = %v, want ErrWouldWait", err)
	}
	second.Release()
	var zero Loan[*res]
	zero.Release()
	zero.Destroy()
	if zero.Valid() || zero.Held() != 0 {
		t.Fatal("the zero loan claims to be out")
	}
	checkBalanced(t, k, d)
}

func TestKeeperDestroyAndHijack(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a := mustAcquire(t, k)
	b := mustAcquire(t, k)
	a.Destroy()
	if !closedSoon(t, k, a.Value()) {
		t.Fatal("destroyed resource not closed")
	}
	v := b.Hijack()
	if v != b.Value() || closedSoon(t, k, v) {
		t.Fatal("hijacked resource closed or wrong")
	}
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{Live: 0, Dropped: 2}, pool.Books{Live: s.Live, Dropped: s.Dropped}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	if got := d.open(); got != 1 { // the hijacked one, now the caller's
		t.Fatalf("open %d", got)
	}
	d.Close(v)
	checkBalanced(t, k, d)
}

func TestKeeperAcquireFuncAndAllIdle(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 3}})
	ls := []Loan[*res]{mustAcquire(t, k), mustAcquire(t, k), mustAcquire(t, k)}
	for _, l := range ls {
		l.Release()
	}
	all := k.AcquireAllIdle(bg)
	if len(all) != 3 || k.Stats().Idle != 0 {
		t.Fatalf("AcquireAllIdle lent %d", len(all))
	}
	for _, l := range all {
		l.Release()
	}
	boom := errors.New("boom")
	if err := k.AcquireFunc(bg, func(*res) error { return boom }); err != boom {
		t.Fatalf("AcquireFunc = %v", err)
	}
	func() {
		defer func() { recover() }()
		k.AcquireFunc(bg, func(*res) error { panic("f") })
	}()
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{Idle: 2, Dropped: 1, Busy: 0}, pool.Books{Idle: s.Idle, Dropped: s.Dropped, Busy: s.Busy}); diff != "" {
		t.Fatalf("after a panicking f the resource should be destroyed (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}

func TestKeeperZeroAllocsInSteadyState(t *testing.T) {
	d := &dialer{}
	for _, name := range []string{"default clock", "fake clock"} {
		cfg := Config[*res]{Limits: pool.DefaultLimits, Dial: d.Dial, Close: d.Close}
		if name == "fake clock" {
			cfg.Clock = newFakeClock()
		}
		k, err := NewKeeper(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, k).Release()
		allocs := testing.AllocsPerRun(1000, func() {
			l, err := k.Acquire(bg)
			if err != nil {
				panic(err)
			}
			l.Release()
		})
		if allocs != 0 {
			t.Errorf("%s: Acquire+Release allocates %v times", name, allocs)
		}
		k.Close(bg)
	}
}

func TestKeeperStaleOnBorrowIsClosedAndReplaced(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2, Life: time.Minute}})
	a := mustAcquire(t, k)
	c.Step(2 * time.Minute) // past Life while lent; no timer runs
	a.Release()
	b := mustAcquire(t, k)
	if b.Value() == a.Value() || !closedSoon(t, k, a.Value()) {
		t.Fatal("a resource past Life was lent again")
	}
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{LifeRetired: 1, Made: 2}, pool.Books{LifeRetired: s.LifeRetired, Made: s.Made}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	b.Release()
	checkBalanced(t, k, d)
}

func TestKeeperFailedCheckIsReplacedUnnoticed(t *testing.T) {
	d := &dialer{}
	bad := map[int]bool{1: true}
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		Check: func(_ context.Context, r *res) error {
			if bad[r.id] {
				return errors.New("gone away")
			}
			return nil
		},
	})
	mustAcquire(t, k).Release() // r1, now idle
	c.Advance(500 * time.Millisecond)
	l := mustAcquire(t, k) // idle 0.5 s: not checked
	if l.Value().id != 1 || k.Stats().Checks != 0 {
		t.Fatal("checked a resource idle under a second")
	}
	l.Release()
	c.Advance(2 * time.Second)
	l = mustAcquire(t, k)
	if l.Value().id != 2 {
		t.Fatalf("got r%d, want a fresh r2 after r1 failed its check", l.Value().id)
	}
	l.Release()
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Dropped: 1}, Checks: 1, CheckFailures: 1, Acquires: 3}, Stats{Books: pool.Books{Dropped: s.Dropped}, Checks: s.Checks, CheckFailures: s.CheckFailures, Acquires: s.Acquires}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	if !closedSoon(t, k, d.opened[0]) {
		t.Fatal("the resource that failed its check was not closed")
	}
	checkBalanced(t, k, d)
}

func TestKeeperCheckEveryBorrowWhenNegative(t *testing.T) {
	d := &dialer{}
	n := 0
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits:    pool.Limits{Size: 1},
		CheckIdle: -1,
		Check:     func(context.Context, *res) error { n++; return nil },
	})
	mustAcquire(t, k).Release()
	mustAcquire(t, k).Release()
	if n != 1 { // the first was fresh from Dial
		t.Fatalf("checked %d times, want 1", n)
	}
}

func TestKeeperResetHookDestroysOnError(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		BeforeReuse: func(_ context.Context, r *res) error {
			if r.id == 1 {
				return errors.New("dirty")
			}
			return nil
		},
	})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	a.Release()
	b.Release()
	s := k.Stats()
	if s.Idle != 1 || s.Dropped != 1 || !closedSoon(t, k, a.Value()) {
		t.Fatalf("stats %+v", s)
	}
	checkBalanced(t, k, d)
}

func TestKeeperResetClosesIdleAndRetiresLent(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 3}})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	a.Release()
	k.Reset()
	if !closedSoon(t, k, a.Value()) {
		t.Fatal("idle resource not closed by Reset")
	}
	b.Release()
	if !closedSoon(t, k, b.Value()) {
		t.Fatal("resource lent before Reset kept on return")
	}
	c := mustAcquire(t, k)
	c.Release()
	if closedSoon(t, k, c.Value()) || k.Stats().Idle != 1 {
		t.Fatal("resource made after Reset not kept")
	}
	checkBalanced(t, k, d)
}

func TestKeeperPanickingDialAndClose(t *testing.T) {
	d := &dialer{panic: func(n int) bool { return n == 1 }}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 1},
		Logger: quietLogger(),
	})
	if _, err := k.Acquire(bg); err == nil || !strings.Contains(err.Error(), "Dial panicked") {
		t.Fatalf("Acquire with a panicking Dial = %v", err)
	}
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Live: 0, Failed: 1}, Panics: 1}, Stats{Books: pool.Books{Live: s.Live, Failed: s.Failed}, Panics: s.Panics}); diff != "" {
		t.Fatalf("stats after a panicking dial (-want +got):\n%s", diff)
	}
	l := mustAcquire(t, k) // the room came back
	k.close = func(*res) error { panic("close exploded") }
	l.Destroy()
	clocktest.Eventually(t, "the closers to finish", func() bool { return closesDone(k) })
	s = k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Live: 0, Dropped: 1}, Panics: 2}, Stats{Books: pool.Books{Live: s.Live, Dropped: s.Dropped}, Panics: s.Panics}); diff != "" {
		t.Fatalf("stats after a panicking close (-want +got):\n%s", diff)
	}
}

func TestKeeperTryAcquireNeverWaits(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryAcquire on an empty pool = %v", err)
	}
	clocktest.Eventually(t, "the background dial", func() bool { return k.Stats().Idle == 1 })
	l, err := k.TryAcquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryAcquire on a full pool = %v", err)
	}
	l.Release()
	checkBalanced(t, k, d)
}

func TestKeeperDialFailureThenBackoff(t *testing.T) {
	d := &dialer{fail: func(n int) error {
		if n == 1 {
			return errDial
		}
		return nil
	}}
	b := ward.DefaultBackoff
	b.Jitter = ward.Jitter{} // rigid: 100 ms
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		Ward:   ward.Ward{Backoff: &b},
		Logger: quietLogger(),
	})
	if _, err := k.Acquire(bg); !errors.Is(err, errDial) {
		t.Fatalf("Acquire = %v, want the dial's error", err)
	}
	done := make(chan Loan[*res])
	go func() { done <- mustAcquire(t, k) }()
	// It is held back: it waits on a timer, and no dial starts until the
	// backoff has passed.
	clocktest.Eventually(t, "the backoff wait", func() bool { return c.Pending() >= 1 })
	if s := k.Stats(); s.Deferred != 1 || d.dials != 1 {
		t.Fatalf("stats during backoff %+v, dials %d", s, d.dials)
	}
	c.Advance(100 * time.Millisecond)
	l := <-done
	l.Release()
	s := k.Stats()
	if diff := cmp.Diff(pool.Books{Failed: 1, Made: 1, Live: 1}, pool.Books{Failed: s.Failed, Made: s.Made, Live: s.Live}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}

func TestKeeperLaterIsBoundedByContext(t *testing.T) {
	d := &dialer{fail: func(int) error { return errDial }}
	b := ward.DefaultBackoff
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, Ward: ward.Ward{Backoff: &b}, Logger: quietLogger()})
	k.Acquire(bg) // fails, arms the backoff
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error)
	go func() { _, err := k.Acquire(ctx); errc <- err }()
	clocktest.Eventually(t, "the backoff wait", func() bool { return c.Pending() >= 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v", err)
	}
	if s := k.Stats(); s.Canceled != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestKeeperShedSaysWhy(t *testing.T) {
	d := &dialer{fail: func(int) error { return errDial }}
	c := newFakeClock()
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 100},
		Ward:   ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, c.Now())},
		Clock:  c,
		Rand:   func() float64 { return 0 },
		Logger: quietLogger(),
	})
	var err error
	for range 50 {
		if _, err = k.Acquire(bg); errors.Is(err, ErrShed) {
			break
		}
		c.Advance(10 * time.Millisecond)
	}
	var se *ShedError
	if !errors.As(err, &se) || se.Guard != ward.GuardBreaker || se.Ratio <= 0 {
		t.Fatalf("err = %v, want a breaker's ShedError", err)
	}
	if !strings.Contains(err.Error(), "breaker") {
		t.Fatalf("message %q does not name the breaker", err)
	}
	if errors.Is(err, errDial) || se.Cause != errDial || !strings.Contains(err.Error(), errDial.Error()) {
		t.Fatalf("the shed %q does not carry the dial error behind it (cause %v)", err, se.Cause)
	}
}

func TestKeeperShedderReadsCPUOnlyWithAShedder(t *testing.T) {
	reads := 0
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{CPU: func() int { reads++; return 1000 }})
	c.Advance(time.Second)
	if reads != 0 {
		t.Fatalf("CPU read %d times without a shedder", reads)
	}
	mustAcquire(t, k).Release()

	c2 := newFakeClock()
	var cpu atomicInt
	k2, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 1},
		Ward:   ward.Ward{Shedder: ward.NewShedder(ward.DefaultShed, c2.Now())},
		Clock:  c2,
		CPU:    func() int { return cpu.get() },
	})
	l := mustAcquire(t, k2)
	cpu.set(1000)
	c2.Advance(300 * time.Millisecond) // one sample
	if got := k2.cpuNow(); got != 1000 {
		t.Fatalf("cpu reading %d after a sample", got)
	}
	l.Release()
}

type atomicInt struct {
	mu sync.Mutex
	v  int
}

func (a *atomicInt) get() int  { a.mu.Lock(); defer a.mu.Unlock(); return a.v }
func (a *atomicInt) set(v int) { a.mu.Lock(); defer a.mu.Unlock(); a.v = v }

// TestKeeperLoanClock checks the times a loan carries (Loan.at, an offset
// from the Keeper's epoch): Held counts from the lending, on the Keeper's
// clock, and AcquireWait the time from the call to the lending.
func TestKeeperLoanClock(t *testing.T) {
	d := &dialer{}
	var c *fakeClock
	d.fail = func(int) error {
		c.Advance(2 * time.Second) // the dial takes two seconds
		return nil
	}
	k, clk := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	c = clk
	c.Advance(time.Hour) // the loan begins well after the epoch
	l := mustAcquire(t, k)
	if got := l.Held(); got != 0 {
		t.Errorf("Held at once = %v, want 0", got)
	}
	if got := k.Stats().AcquireWait; got != 2*time.Second {
		t.Errorf("AcquireWait = %v, want 2s (the dial)", got)
	}
	c.Advance(3 * time.Second)
	if got := l.Held(); got != 3*time.Second {
		t.Errorf("Held = %v, want 3s", got)
	}
	l.Release()
	if got := l.Held(); got != 3*time.Second {
		t.Errorf("Held after Release = %v, want 3s (the clock has not moved)", got)
	}
}
