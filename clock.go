package wardpool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is where a Keeper reads the time and sets its timers. Tests pass a
// fake one that moves only when told to; the default is a cached monotonic
// clock (see Config.Clock).
//
// A Clock must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless the
	// returned Timer is stopped first. A d of zero or less fires at once.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer set by Clock.AfterFunc; *time.Timer is one. It is an
// interface literal, so a fake clock can return it without importing this
// package.
type Timer = interface {
	// Stop prevents the call if it has not started, and reports whether it
	// did so.
	Stop() bool
	// Reset makes the timer fire d from now, and reports whether it had
	// been active.
	Reset(d time.Duration) bool
}

// tickEvery is how often the cached clock re-reads the time.
const tickEvery = time.Millisecond

// cachedClock is the default Clock: one goroutine, shared by every Keeper
// that uses it, reads the monotonic clock every millisecond and stores the
// reading, and Now loads it. On virtual machines where time.Now is slow
// that is most of an uncontended Acquire and Release (bench/README.md).
//
// Accuracy: a reading lags the true time by up to one millisecond, more when
// the process is starved of CPU and the ticking goroutine runs late. Readings
// never go backwards: they carry Go's monotonic clock reading. So a wait
// shorter than a millisecond may read as zero and a loan's held time may be
// short by a millisecond; every age the pool enforces (Keep, Life,
// CheckIdle, LeakAfter) is at worst that much late. The goroutine runs
// while any Keeper uses the clock; after the last closes it stops, and Now
// falls back to time.Now.
type cachedClock struct {
	now  atomic.Pointer[time.Time] // the latest reading; nil while not ticking
	mono atomic.Int64              // the same reading, in ns since clockOrigin

	mu    sync.Mutex // guards users and stop
	users int
	stop  chan struct{}
	done  chan struct{}
}

// clockOrigin is where the cached clock's nanosecond readings count from.
var clockOrigin = time.Now()

// store publishes the reading now.
func (c *cachedClock) store(now time.Time) {
	c.mono.Store(int64(now.Sub(clockOrigin)))
	c.now.Store(&now)
}

// defaultClock is shared by every Keeper with no Clock of its own.
var defaultClock = &cachedClock{}

// Now returns the cached reading, or time.Now while the clock is not ticking.
func (c *cachedClock) Now() time.Time {
	if t := c.now.Load(); t != nil {
		return *t
	}
	return time.Now()
}

// AfterFunc is time.AfterFunc.
func (c *cachedClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// acquire starts the ticking goroutine for one more user.
func (c *cachedClock) acquire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if c.users > 1 {
		return
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	c.store(time.Now())
	go c.tick(c.stop, c.done)
}

// release lets go of one user, stopping the goroutine after the last.
func (c *cachedClock) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users--
	if c.users > 0 {
		return
	}
	close(c.stop)
	<-c.done
	c.now.Store(nil)
}

func (c *cachedClock) tick(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// One small allocation a millisecond buys a Now that is one
			// load and a copy. Monotonic readings never go backwards.
			c.store(time.Now())
		}
	}
}
