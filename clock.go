package wardpool

import "time"

// Clock is where a Keeper reads the time and sets its timers. Tests pass a
// fake one that moves only when told to; the default is the system's
// (time.Now and time.AfterFunc). Every timer of a Keeper (eviction, MinIdle
// retries, the leak watch, the CPU sampler, a fleet budget's renewal and
// retries) is set on it, so a fake clock drives all of them.
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

// systemClock is the default Clock: the system's monotonic clock, read
// as base plus the time since base, and time.AfterFunc. It runs nothing of
// its own: an idle Keeper on it wakes only for a timer armed for something
// due.
//
// time.Since reads only the monotonic clock, where time.Now reads the wall
// clock too: on the machine of bench/README.md that is about 30 ns against
// 57 ns, and a loan reads the clock twice (at Acquire and at Release). The
// readings carry base's wall time moved on by the monotonic time since:
// they never jump with a step of the wall clock, and the pool uses only
// their differences.
type systemClock struct{ base time.Time }

// newSystemClock returns the default Clock, its base read now.
func newSystemClock() *systemClock { return &systemClock{base: time.Now()} }

func (c *systemClock) Now() time.Time { return c.base.Add(time.Since(c.base)) }

func (c *systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
