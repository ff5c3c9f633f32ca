package ward

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBackoffPreset(t *testing.T) {
	b := DefaultBackoff
	for retry, want := range map[int]time.Duration{
		-1: 0, 0: 0, 1: ms(100), 2: ms(200), 3: ms(400), 4: ms(800), 5: time.Second, 60: time.Second, math.MaxInt: time.Second,
	} {
		if got := b.Ceiling(retry); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", retry, got, want)
		}
	}
	// Three attempts: two retries, the first call included in the count.
	if !b.More(1) || !b.More(2) || b.More(3) {
		t.Fatalf("More(1, 2, 3) = %v %v %v, want true true false", b.More(1), b.More(2), b.More(3))
	}
	// The second retry at a draw of 0.1: 200 ms × (0.8 + 0.4 × 0.1) = 168 ms.
	if got := b.Delay(2, 0.1, 0); got != ms(168) {
		t.Fatalf("Delay(2, 0.1) = %v, want 168ms", got)
	}
	if diff := cmp.Diff([]time.Duration{ms(100), ms(200)}, b.Schedule([]float64{0.5, 0.5})); diff != "" {
		t.Fatalf("Schedule at the middle draw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{ms(80), ms(160)}, b.Schedule(nil)); diff != "" {
		t.Fatalf("Schedule with no draws, the low end (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{ms(120), ms(160)}, b.Schedule([]float64{0.999999999})); diff != "" {
		t.Fatalf("Schedule with one draw (-want +got):\n%s", diff)
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	base := DefaultBackoff
	base.Attempts = 10
	for _, c := range []struct {
		j      Jitter
		lo, hi func(ceiling, previous time.Duration) time.Duration
	}{
		{Rigid, func(c, _ time.Duration) time.Duration { return c }, func(c, _ time.Duration) time.Duration { return c }},
		{Full, func(c, _ time.Duration) time.Duration { return 0 }, func(c, _ time.Duration) time.Duration { return c }},
		{Equal, func(c, _ time.Duration) time.Duration { return c / 2 }, func(c, _ time.Duration) time.Duration { return c }},
		{Spread(0.2), func(c, _ time.Duration) time.Duration { return c * 8 / 10 }, func(c, _ time.Duration) time.Duration { return c * 12 / 10 }},
		{Spread(1), func(c, _ time.Duration) time.Duration { return 0 }, func(c, _ time.Duration) time.Duration { return 2 * c }},
		{Decorrelated, func(_, _ time.Duration) time.Duration { return ms(100) }, func(_, p time.Duration) time.Duration {
			return min(3*max(p, ms(100)), time.Second)
		}},
	} {
		b := base
		b.Jitter = c.j
		for retry := 1; retry <= 8; retry++ {
			for _, prev := range []time.Duration{0, ms(50), ms(150), ms(900)} {
				ceil := b.Ceiling(retry)
				lo, hi := c.lo(ceil, prev), c.hi(ceil, prev)
				for _, r := range []float64{0, 0.25, 0.5, 0.75, belowOne} {
					d := b.Delay(retry, r, prev)
					if d < lo || d > hi {
						t.Errorf("%v: Delay(%d, %v, %v) = %v, outside [%v, %v]", c.j, retry, r, prev, d, lo, hi)
					}
				}
				if d := b.Delay(retry, 0, prev); d != lo {
					t.Errorf("%v: Delay(%d, 0, %v) = %v, want the low end %v", c.j, retry, prev, d, lo)
				}
			}
		}
	}
}

func TestBackoffDecorrelatedGrowsFromThePreviousWait(t *testing.T) {
	b := Backoff{Base: ms(100), Factor: 2, Cap: time.Hour, Attempts: 4, Jitter: Decorrelated}
	got := b.Schedule([]float64{belowOne, belowOne, belowOne})
	want := []time.Duration{ms(300), ms(900), ms(2700)}
	for i := range want {
		if d := got[i] - want[i]; d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("Schedule = %v, want about %v", got, want)
		}
	}
}

func TestBackoffBadInput(t *testing.T) {
	b := Backoff{Base: -time.Second, Factor: math.NaN(), Cap: 0, Attempts: -5, Jitter: Spread(math.Inf(1))}
	if b.Ceiling(3) != 0 || b.More(1) || len(b.Schedule(nil)) != 0 {
		t.Fatalf("bad policy: Ceiling %v More %v Schedule %v", b.Ceiling(3), b.More(1), b.Schedule(nil))
	}
	b = Backoff{Base: time.Second, Factor: 0.5, Attempts: 3}
	if b.Ceiling(5) != time.Second {
		t.Fatalf("a factor under 1 shrank the wait: %v", b.Ceiling(5))
	}
	b = Backoff{Base: time.Second, Factor: 10, Attempts: 3} // no cap
	if b.Ceiling(100) != Never {
		t.Fatalf("an uncapped wait did not saturate: %v", b.Ceiling(100))
	}
	b = DefaultBackoff
	for _, r := range []float64{math.NaN(), -3, math.Inf(-1)} {
		if got := b.Delay(2, r, 0); got != ms(160) {
			t.Errorf("Delay with draw %v = %v, want the low end 160ms", r, got)
		}
	}
	for _, r := range []float64{1, 7, math.Inf(1)} {
		if got := b.Delay(2, r, 0); got != ms(240) {
			t.Errorf("Delay with draw %v = %v, want the high end 240ms", r, got)
		}
	}
	b.Attempts = math.MaxInt
	if n := len(b.Schedule(nil)); n != MaxSchedule {
		t.Fatalf("Schedule of a huge policy has %d waits, want %d", n, MaxSchedule)
	}
	if Spread(2) != Spread(1) || Spread(math.NaN()) != Spread(0) || Spread(-1) != Spread(0) {
		t.Fatal("Spread did not hold f to [0, 1]")
	}
	for j, want := range map[Jitter]string{Rigid: "rigid", Full: "full", Equal: "equal", Decorrelated: "decorrelated", Spread(0.2): "spread(0.2)"} {
		if j.String() != want {
			t.Errorf("%v.String() = %q, want %q", j, j.String(), want)
		}
	}
}
