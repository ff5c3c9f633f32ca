package wardpool

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// This file holds the fakes the Keeper's tests run on: a clock that moves
// only when told, and a dialer that counts what it opened and closed and can
// be made to fail, panic or block.

// fakeClock is a Clock whose time moves only by Advance, which runs the
// timers that came due, in order, on the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	at     time.Time
	f      func()
	active bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	for _, x := range t.c.timers {
		if x == t {
			return was
		}
	}
	t.c.timers = append(t.c.timers, t)
	return was
}

// pending returns how many timers are set.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

// Advance moves the time d on, firing every timer due by then at its time.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *fakeTimer
		for _, t := range c.timers {
			if t.active && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		next.active = false
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
	c.now = end
	live := c.timers[:0]
	for _, t := range c.timers {
		if t.active {
			live = append(live, t)
		}
	}
	c.timers = live
	c.mu.Unlock()
}

// res is a fake resource.
type res struct {
	id     int
	closed atomic.Bool
}

// dialer opens and closes res values and counts them.
type dialer struct {
	mu      sync.Mutex
	next    int
	opened  []*res
	closes  int
	double  int // closes of an already closed res
	inDial  int
	maxDial int

	fail  func(n int) error // n counts dials from 1; nil: never fail
	panic func(n int) bool
	gate  chan struct{} // when set, each dial waits for a value from it
	dials int
}

var errDial = errors.New("dial refused")

func (d *dialer) Dial(ctx context.Context) (*res, error) {
	d.mu.Lock()
	d.dials++
	n := d.dials
	d.inDial++
	d.maxDial = max(d.maxDial, d.inDial)
	gate := d.gate
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inDial--
		d.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.panic != nil && d.panic(n) {
		panic("dial exploded")
	}
	if d.fail != nil {
		if err := d.fail(n); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	r := &res{id: d.next}
	d.opened = append(d.opened, r)
	return r, nil
}

func (d *dialer) Close(r *res) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.closed.Swap(true) {
		d.double++
	}
	d.closes++
	return nil
}

// open returns how many resources are open (made and not closed).
func (d *dialer) open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.opened) - d.closes
}

func (d *dialer) counts() (opened, closed, maxDial int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.opened), d.closes, d.maxDial
}

// newTestKeeper builds a Keeper on d and a fake clock, with cfg's other
// fields as given, and closes it when the test ends.
func newTestKeeper(t testing.TB, d *dialer, cfg Config[*res]) (*Keeper[*res], *fakeClock) {
	t.Helper()
	c, _ := cfg.Clock.(*fakeClock)
	if cfg.Clock == nil {
		c = newFakeClock()
		cfg.Clock = c
	}
	cfg.Dial, cfg.Close = d.Dial, d.Close
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0.5 }
	}
	k, err := NewKeeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("Close at cleanup: %v (loans still out: %v)", err, k.Loans())
		}
		if d.double > 0 {
			t.Errorf("%d resources closed twice", d.double)
		}
	})
	return k, c
}

// eventually waits, yielding the processor, until cond holds; it fails the
// test after a generous wall-clock bound. It stands in for the moment another
// goroutine reaches a point the test cannot observe otherwise (parked in a
// queue, a dial returned); nothing in the tests sleeps.
func eventually(t interface {
	Helper()
	Fatalf(string, ...any)
}, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// settled reports whether the Keeper's background work (dial goroutines,
// timer callbacks) has all finished.
func settled(k *Keeper[*res]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.shedder && !k.closed {
		return k.bg == 1 // the CPU sampler runs until Close
	}
	return k.bg == 0
}

// checkBalanced asserts the books balance and match what the dialer holds
// open, once nothing is in flight.
// closesDone reports whether k's closers have closed everything queued.
func closesDone(k *Keeper[*res]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.closing) == 0 && k.closerN == 0
}

// closedSoon reports whether r is closed once k's closers have closed
// everything queued so far: closing runs in the background (Config.Close).
func closedSoon(t testing.TB, k *Keeper[*res], r *res) bool {
	t.Helper()
	eventually(t, "the closers to finish", func() bool { return closesDone(k) })
	return r.closed.Load()
}

func checkBalanced(t testing.TB, k *Keeper[*res], d *dialer) {
	t.Helper()
	eventually(t, "the closers to finish", func() bool { return closesDone(k) })
	s := k.Stats()
	if s.Live != s.Idle+s.Busy {
		t.Fatalf("live %d != idle %d + busy %d", s.Live, s.Idle, s.Busy)
	}
	if open := d.open(); open != s.Live {
		t.Fatalf("dialer holds %d open, books say %d live (%+v)", open, s.Live, s)
	}
}

// quietLogger discards what a test provokes on purpose.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
