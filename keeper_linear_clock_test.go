package wardpool

import (
	"slices"
	"sync"
	"time"
)

// The fake clock of the linearizability check (see keeper_linear_test.go):
// time moves only between rounds, and the Keeper's timers run when a
// worker says so.

// linClock is a Clock whose time moves only by step, and whose timers run
// only when fire is called: as late as a starved process's timers, and
// while the callers go on. Each timer's run is an operation of the history.
type linClock struct {
	rec    *linRecorder
	mu     sync.Mutex
	now    time.Time
	timers []*linClockTimer
	// sampler says the Keeper has a shedder, whose CPU sampler is the timer
	// set for cpuEvery: it runs like any timer but is no operation of the
	// history, for it changes nothing the specification holds (to the
	// specification a timer's run is an Evict). No other timer of the
	// check's configurations is ever set for exactly cpuEvery.
	sampler bool
}

type linClockTimer struct {
	c      *linClock
	at     time.Time
	f      func()
	active bool
	quiet  bool // the CPU sampler: no operation (see linClock.sampler)
}

func newLinClock(rec *linRecorder) *linClock {
	return &linClock{rec: rec, now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func (c *linClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *linClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &linClockTimer{c: c, at: c.now.Add(d), f: f, active: true, quiet: c.sampler && d == cpuEvery}
	c.timers = append(c.timers, t)
	return t
}

func (t *linClockTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *linClockTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	if !slices.Contains(t.c.timers, t) {
		t.c.timers = append(t.c.timers, t)
	}
	return was
}

// step moves the time d on, running no timer.
func (c *linClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fire runs, one after the other on the caller's goroutine, every timer due
// now, each recorded as an operation of client's.
func (c *linClock) fire(client int) {
	for {
		c.mu.Lock()
		var due *linClockTimer
		for _, t := range c.timers {
			if t.active && !t.at.After(c.now) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.timers = slices.DeleteFunc(c.timers, func(t *linClockTimer) bool { return !t.active })
			c.mu.Unlock()
			return
		}
		due.active = false
		c.mu.Unlock()
		if due.quiet {
			due.f()
			c.rec.mu.Lock()
			c.rec.samples++
			c.rec.mu.Unlock()
			continue
		}
		n, _ := c.rec.next()
		call := c.rec.tick()
		due.f()
		c.rec.add(client, linIn{kind: linTimer, n: n}, call, c.rec.tick(), linOut{})
	}
}

// fireEach runs every timer due now, each on a goroutine of its own, as
// time.AfterFunc does, and waits for them all; each run is an operation
// of its own client, from first (first, first+1, ...).
func (c *linClock) fireEach(first int) {
	c.mu.Lock()
	var due []*linClockTimer
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			due = append(due, t)
		}
	}
	c.timers = slices.DeleteFunc(c.timers, func(t *linClockTimer) bool { return !t.active })
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i, t := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t.quiet {
				t.f()
				c.rec.mu.Lock()
				c.rec.samples++
				c.rec.mu.Unlock()
				return
			}
			n, _ := c.rec.next()
			call := c.rec.tick()
			t.f()
			c.rec.add(first+i, linIn{kind: linTimer, n: n}, call, c.rec.tick(), linOut{})
		}()
	}
	wg.Wait()
}
