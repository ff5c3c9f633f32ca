// Package clocktest is the one fake clock of wardpool's tests: time moves
// only when a test moves it, and the timers that come due run when the test
// says, so no test sleeps. Its Clock is a wardpool.Clock; the package does
// not import wardpool, so the runtime's own tests use it too.
//
// Eventually is the one wait on the real scheduler, for a moment another
// goroutine reaches that a test cannot observe otherwise.
package clocktest

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// Timer is what AfterFunc returns: wardpool.Timer is the same interface.
type Timer = interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Clock is a wardpool.Clock whose time moves only by Advance or Step. It is
// safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	c      *Clock
	at     time.Time
	d      time.Duration // what AfterFunc or Reset was asked for
	f      func()
	active bool
}

// New returns a clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arranges for f to run when the clock passes d from now.
func (c *Clock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), d: d, f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

// Stop disarms the timer and reports whether it was armed.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

// Reset arms the timer again for d from now and reports whether it was armed.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.d, t.active = t.c.now.Add(d), d, true
	if !slices.Contains(t.c.timers, t) {
		t.c.timers = append(t.c.timers, t) // pruned since
	}
	return was
}

// Pending returns how many timers are armed.
func (c *Clock) Pending() int {
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

// Advance moves the time d on, running every timer due by then at its own
// time, earliest first, on the caller's goroutine and outside the clock's
// lock (a timer may set another).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		next := c.nextLocked(end)
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
	c.pruneLocked()
	c.mu.Unlock()
}

// Step moves the time d on and runs nothing: the timers due stay due until
// Advance or Due takes them, as a starved process's timers run late.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A Run is a timer that came due, taken out of the clock by Due: the test
// runs it where and when it likes.
type Run struct {
	// D is the duration the timer was set for.
	D time.Duration
	// F is the timer's function.
	F func()
}

// Due disarms every timer due now and returns them, earliest first.
func (c *Clock) Due() []Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due []Run
	for {
		next := c.nextLocked(c.now)
		if next == nil {
			break
		}
		next.active = false
		due = append(due, Run{D: next.d, F: next.f})
	}
	c.pruneLocked()
	return due
}

// nextLocked is the earliest armed timer due by end, or nil.
func (c *Clock) nextLocked(end time.Time) *timer {
	var next *timer
	for _, t := range c.timers {
		if t.active && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
			next = t
		}
	}
	return next
}

func (c *Clock) pruneLocked() {
	c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool { return !t.active })
}

// Eventually waits, yielding the processor, until cond holds, and fails t
// after a generous wall-clock bound (10 s). It stands in for the moment
// another goroutine reaches a point the test cannot observe otherwise
// (parked in a queue, a dial returned).
func Eventually(t interface {
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
