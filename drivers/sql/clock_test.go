package sqlward

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// fakeClock is a pool.Clock that moves only when Advance is called; due
// timers then run in the goroutine that called Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
	on bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) pool.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, on: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on, t.at = true, t.c.now.Add(d)
	if !was {
		t.c.timers = append(t.c.timers, t)
	}
	return was
}

// Advance moves the clock by d, running every timer that falls due, in
// order, outside the clock's lock.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		kept := c.timers[:0]
		for _, t := range c.timers {
			switch {
			case !t.on:
			case due == nil && !t.at.After(end):
				due = t
			default:
				kept = append(kept, t)
			}
		}
		c.timers = kept
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		if due.at.After(c.now) {
			c.now = due.at
		}
		due.on = false
		c.mu.Unlock()
		due.f()
	}
}

// TestRetirementOnAFakeClock: Limits.Keep closes a connection idle too long
// and Limits.Life one alive too long, however busy, with the Keeper on a
// clock the test moves.
func TestRetirementOnAFakeClock(t *testing.T) {
	clock := newFakeClock()
	fc := &fakeConnector{}
	db, c, err := OpenDB(fc, Config{
		Limits: pool.Limits{Size: 2, Idle: 2, Keep: time.Minute, Life: time.Hour},
		Clock:  clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	exec := func() {
		t.Helper()
		if _, err := db.ExecContext(ctx, "X"); err != nil {
			t.Fatal(err)
		}
	}
	exec()
	first := fc.last()
	clock.Advance(59 * time.Second)
	exec()
	if fc.last() != first {
		t.Fatal("a connection idle for less than Keep was replaced")
	}
	clock.Advance(61 * time.Second) // the eviction timer runs
	if s := c.Stats(); !first.closed || s.IdleRetired != 1 || s.Live != 0 {
		t.Errorf("past Keep: closed %v, %+v", first.closed, s.Books)
	}
	exec()
	second := fc.last()
	if second == first {
		t.Fatal("the retired connection was lent again")
	}
	// Used every 30 s, never idle past Keep: Life still retires it.
	for range 121 {
		clock.Advance(30 * time.Second)
		exec()
	}
	if s := c.Stats(); !second.closed || s.LifeRetired != 1 || s.IdleRetired != 1 {
		t.Errorf("past Life: closed %v, %+v", second.closed, s.Books)
	}
	if len(fc.conns) != 3 {
		t.Errorf("%d connections made, want 3", len(fc.conns))
	}
	honest(t, c)
}
