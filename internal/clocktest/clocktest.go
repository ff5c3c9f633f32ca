// Package clocktest is a fake wardpool.Clock for the tests of packages built on
// wardpool.Keeper: time moves only when Advance is called, and the timers that
// come due run then, in order, on the caller's goroutine. No test sleeps.
package clocktest

import (
	"sync"
	"time"

	"github.com/wardpool/wardpool"
)

// Clock is a wardpool.Clock whose time moves only by Advance. It is safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	c      *Clock
	at     time.Time
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

// AfterFunc arranges for f to run when Advance passes d from now.
func (c *Clock) AfterFunc(d time.Duration, f func()) wardpool.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f, active: true}
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
	t.at, t.active = t.c.now.Add(d), true
	for _, x := range t.c.timers {
		if x == t {
			return was
		}
	}
	t.c.timers = append(t.c.timers, t) // pruned by an Advance since
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
// time, earliest first, outside the clock's lock (a timer may set another).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *timer
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
