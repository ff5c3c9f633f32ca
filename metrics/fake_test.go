package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// This file holds what the tests run on: a Source that answers a set
// reading and counts how often it is asked, a clock that moves only when
// told, and a Keeper of fake connections on that clock.

// fixed is a Source answering st, counting the readings.
type fixed struct {
	mu    sync.Mutex
	st    pool.Stats
	reads atomic.Int64
}

func (f *fixed) Stats() pool.Stats {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fixed) set(st pool.Stats) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

// fixedLimits is a fixed Source with limits, as a Keeper has.
type fixedLimits struct {
	*fixed
	limits pool.Limits
}

func (f fixedLimits) Limits() pool.Limits { return f.limits }

// sampleStats returns a reading in which every figure differs from every
// other, so that a series reading the wrong field shows.
func sampleStats() pool.Stats {
	return pool.Stats{
		Books: pool.Books{
			Live: 9, Idle: 4, Busy: 5,
			Made: 31, Failed: 3, Loans: 101, Reused: 77,
			Retired: 19, IdleRetired: 7, LifeRetired: 5, Dropped: 2,
			Waited: 13, Deferred: 11, Shed: 6,
		},
		Waiting:        8,
		Dialing:        1,
		Acquires:       97,
		AcquireWait:    2750 * time.Millisecond,
		EmptyAcquires:  23,
		Canceled:       4,
		Checks:         41,
		CheckFailures:  17,
		Leaks:          10,
		DoubleReleases: 12,
		Panics:         14,
	}
}

// clock is a pool.Clock whose time moves only by advance, which runs the
// timers that came due on the caller's goroutine.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	c  *clock
	at time.Time
	f  func()
	on bool
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) AfterFunc(d time.Duration, f func()) pool.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), f: f, on: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on, t.at = true, t.c.now.Add(d)
	return was
}

// advance moves the time on by d, running every timer that comes due.
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *timer
		for _, t := range c.timers {
			if t.on && !t.at.After(end) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		due.on = false
		if due.at.After(c.now) {
			c.now = due.at
		}
		c.mu.Unlock()
		due.f()
	}
}

// conn is a fake connection.
type conn struct{ id int }

// newKeeper returns a Keeper of conns on clk with limits l and leak watch
// after leak (0: off), closed when the test ends.
func newKeeper(t testing.TB, clk *clock, l pool.Limits, leak time.Duration, onLeak func(pool.Leak[*conn])) *pool.Keeper[*conn] {
	t.Helper()
	var next atomic.Int64
	k, err := pool.NewKeeper(pool.Config[*conn]{
		Limits:    l,
		Dial:      func(context.Context) (*conn, error) { return &conn{id: int(next.Add(1))}, nil },
		Close:     func(*conn) error { return nil },
		Clock:     clk,
		LeakAfter: leak,
		OnLeak:    onLeak,
		Rand:      func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return k
}
