package ward

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// round takes every free lease at now, then releases them all, each held for
// held and ending as ok; it returns how many it took.
func round(l *Limiter, now time.Time, held time.Duration, ok bool) int {
	n := 0
	for l.Acquire(now) {
		n++
	}
	for range n {
		l.Release(now, now.Add(held), ok)
	}
	return n
}

func TestLimiterGrowsUnderAQuietBackend(t *testing.T) {
	l := NewLimiter(DefaultAimd)
	now := t0
	prev := l.Limit()
	for i := range 20 {
		if n := round(l, now, 5*time.Millisecond, true); n != prev {
			t.Fatalf("round %d took %d leases, want the limit %d", i, n, prev)
		}
		if prev < DefaultAimd.Max && l.Limit() <= prev {
			t.Fatalf("round %d: limit %d did not grow from %d under a quiet backend", i, l.Limit(), prev)
		}
		prev = l.Limit()
		now = now.Add(time.Second)
	}
	if l.Limit() != DefaultAimd.Max {
		t.Fatalf("limit %d, want it held at Max %d", l.Limit(), DefaultAimd.Max)
	}
}

func TestLimiterShrinksUnderASlowBackend(t *testing.T) {
	l := NewLimiter(DefaultAimd)
	round(l, t0, 2*time.Second, true) // ten leases held over Slow
	if got := l.Limit(); got >= 10 || got < 3 {
		t.Fatalf("limit after ten slow leases = %d, want 10 × 0.9^10 = 3", got)
	}
	for range 50 {
		round(l, t0, 2*time.Second, true)
	}
	if l.Limit() != 1 {
		t.Fatalf("limit under a slow backend = %d, want Min 1", l.Limit())
	}
	// Failures shrink it as well, however quick.
	l = NewLimiter(DefaultAimd)
	round(l, t0, time.Millisecond, false)
	if l.Limit() >= 10 {
		t.Fatalf("limit after ten quick failures = %d, want under 10", l.Limit())
	}
}

// TestLimiterSteadyTimeouts is the failure Gradient2 shows (concurrency-limits
// issue 137): every call ends in the same timeout, so latency never changes.
// The limit must fall to its floor and stay there, not climb to Max.
func TestLimiterSteadyTimeouts(t *testing.T) {
	for _, ok := range []bool{true, false} { // a timeout reported as slow, or as a failure
		l := NewLimiter(DefaultAimd)
		for i := range 200 {
			round(l, t0.Add(time.Duration(i)*5*time.Second), 5*time.Second, ok)
			if l.Limit() > DefaultAimd.Initial {
				t.Fatalf("limit climbed to %d under steady timeouts", l.Limit())
			}
		}
		if l.Limit() != DefaultAimd.Min {
			t.Fatalf("limit after steady timeouts = %d, want Min %d", l.Limit(), DefaultAimd.Min)
		}
	}
}

// TestLimiterDoesNotGrowWhileUnused is AIMD's own failure: a caller that only
// ever has one lease out must not push the limit up to Max, or the limit means
// nothing when load arrives.
func TestLimiterDoesNotGrowWhileUnused(t *testing.T) {
	l := NewLimiter(DefaultAimd)
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if !l.Acquire(now) {
			t.Fatal("refused a single lease")
		}
		l.Release(now, now.Add(time.Millisecond), true)
	}
	if l.Limit() != DefaultAimd.Initial {
		t.Fatalf("limit grew to %d with one lease out at a time", l.Limit())
	}
}

func TestLimiterAbandonLeavesTheLimit(t *testing.T) {
	l := NewLimiter(DefaultAimd)
	for range 10 {
		l.Acquire(t0)
	}
	if l.Acquire(t0) {
		t.Fatal("an eleventh lease under a limit of 10")
	}
	for range 10 {
		l.Abandon()
	}
	if l.Limit() != 10 || l.Inflight() != 0 {
		t.Fatalf("after abandoning: limit %d inflight %d, want 10 0", l.Limit(), l.Inflight())
	}
	l.Abandon()
	l.Release(t0, t0, true)
	if l.Inflight() != 0 {
		t.Fatalf("inflight %d after over-releasing, want 0", l.Inflight())
	}
}

func TestAimdClamped(t *testing.T) {
	for _, c := range []struct{ in, want Aimd }{
		{Aimd{}, Aimd{Initial: 1, Min: 1, Max: 1, Backoff: 0.9}},
		{Aimd{Initial: 50, Min: 5, Max: 3, Backoff: 1}, Aimd{Initial: 5, Min: 5, Max: 5, Backoff: 0.9}},
		{Aimd{Initial: -4, Min: 2, Max: 9, Backoff: 0.5, Slow: -1}, Aimd{Initial: 2, Min: 2, Max: 9, Backoff: 0.5, Slow: -1}},
	} {
		if diff := cmp.Diff(c.want, NewLimiter(c.in).Policy()); diff != "" {
			t.Errorf("NewLimiter(%+v).Policy() (-want +got):\n%s", c.in, diff)
		}
	}
	// With no Slow only failures shrink the limit.
	p := DefaultAimd
	p.Slow = 0
	l := NewLimiter(p)
	round(l, t0, time.Hour, true)
	if l.Limit() <= 10 {
		t.Fatalf("a long success shrank a limiter with no Slow: %d", l.Limit())
	}
}
