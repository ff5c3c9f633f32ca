package ward

import (
	"testing"
	"time"
)

// TestDecisionsAllocateNothing holds every decision to zero allocations in
// steady state.
func TestDecisionsAllocateNothing(t *testing.T) {
	now := t0
	step := func() time.Time { now = now.Add(3 * time.Millisecond); return now }
	br := NewBreaker(DefaultSre, t0)
	sh := NewShedder(DefaultShed, t0)
	bu := NewBucket(1000, 100, t0)
	sl := NewSliding(64, time.Second)
	co := NewCounter(64, time.Second)
	pe := NewPeriod(64, time.Second, true)
	li := NewLimiter(DefaultAimd)
	bo := DefaultBackoff
	win := NewWindow[Tally](40, 10*time.Second, t0)
	// Let the sliding log grow to its quota first: growing is not steady state.
	for range 200 {
		sl.Take(step())
	}
	i := 0
	for name, f := range map[string]func(){
		"Breaker.Allow+Pass": func() {
			now := step()
			if c, ok := br.Allow(now, 0.5); ok {
				c.Pass(now)
			}
		},
		"Breaker.Allow+Fail": func() {
			now := step()
			if c, ok := br.Allow(now, float64(i%10)/10); ok {
				c.Fail(now)
			}
			i++
		},
		"Breaker.Ratio": func() { br.Ratio(step()) },
		"Shedder.Allow+Pass": func() {
			now := step()
			if tk, ok := sh.Allow(now, 950); ok {
				tk.Pass(now.Add(time.Millisecond))
			}
		},
		"Bucket.Take":   func() { bu.Take(step(), 1) },
		"Bucket.Next":   func() { bu.Next(step(), 5) },
		"Sliding.Take":  func() { sl.Take(step()) },
		"Counter.Take":  func() { co.Take(step()) },
		"Period.Take":   func() { pe.Take(step()) },
		"Backoff.Delay": func() { bo.Delay(2, 0.3, 0) },
		"Window.Slot":   func() { win.Slot(step()).Add(Success) },
		"Window.Each":   func() { win.Each(step(), false, func(*Tally) {}) },
		"Limiter.Cycle": func() {
			now := step()
			if li.Acquire(now) {
				li.Release(now, now.Add(time.Millisecond), true)
			}
		},
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}
