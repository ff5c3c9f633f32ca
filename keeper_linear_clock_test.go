package wardpool

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
)

// The clock of the linearizability check (see keeper_linear_test.go): the
// tests' fake clock, whose time moves only between rounds, and whose due
// timers run when the check says, each run an operation of the history;
// and whose next reading the check can hold, to move the time while a
// landing waits to read it (holdNext).

// linClock is clocktest's Clock with the check's recorder: fire and
// fireEach run the timers due, as late as a starved process's timers run,
// while the callers go on.
type linClock struct {
	*clocktest.Clock
	rec *linRecorder
	// sampler says the Keeper has a shedder, whose CPU sampler is the timer
	// set for cpuEvery: it runs like any timer but is no operation of the
	// history, for it changes nothing the specification holds (to the
	// specification a timer's run is an Evict). No other timer of the
	// check's configurations is ever set for exactly cpuEvery.
	sampler bool
	// hold, when set, is taken by the next reading of the clock, which
	// waits until the check lets it go (see hold).
	hold atomic.Pointer[linHold]
}

// linHold is one held reading of the clock: held is closed when a reader
// took it and waits, release lets the reader go on.
type linHold struct {
	held, release chan struct{}
}

// hold makes the next reading of the clock, by whoever makes it, wait
// until release is closed: a reader descheduled just before it reads the
// time, which may move meanwhile. The check holds a dial's landing so
// (see linWorld.straddle): the runtime reads the time once it holds its
// lock, to register what the dial made.
func (c *linClock) holdNext() *linHold {
	h := &linHold{held: make(chan struct{}), release: make(chan struct{})}
	c.hold.Store(h)
	return h
}

// Now is the clock's reading, after the hold, if one is set.
func (c *linClock) Now() time.Time {
	if c.hold.Load() != nil {
		if h := c.hold.Swap(nil); h != nil {
			close(h.held)
			<-h.release
		}
	}
	return c.Clock.Now()
}

func newLinClock(rec *linRecorder) *linClock {
	return &linClock{Clock: clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)), rec: rec}
}

// step moves the time d on, running no timer.
func (c *linClock) step(d time.Duration) { c.Step(d) }

// fire runs, one after the other on the caller's goroutine, every timer due
// now (and any a run sets that is due), each recorded as an operation of
// client's.
func (c *linClock) fire(client int) {
	for due := c.Due(); len(due) > 0; due = c.Due() {
		for _, r := range due {
			c.run(client, r)
		}
	}
}

// fireEach runs every timer due now, each on a goroutine of its own, as
// time.AfterFunc does, and waits for them all; each run is an operation
// of its own client, from first (first, first+1, ...).
func (c *linClock) fireEach(first int) {
	var wg sync.WaitGroup
	for i, r := range c.Due() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(first+i, r)
		}()
	}
	wg.Wait()
}

// run runs the due timer r as an operation of client's, or, for the CPU
// sampler, as no operation.
func (c *linClock) run(client int, r clocktest.Run) {
	if c.sampler && r.D == cpuEvery {
		r.F()
		c.rec.mu.Lock()
		c.rec.samples++
		c.rec.mu.Unlock()
		return
	}
	n, _ := c.rec.next()
	call := c.rec.tick()
	r.F()
	c.rec.add(client, linIn{kind: linTimer, n: n}, call, c.rec.tick(), linOut{})
}
