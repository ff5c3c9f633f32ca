package ward

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A pool tells its guards how long a loan was held (Settle) rather than when
// it began: that must leave each guard exactly as the call with both
// instants (Release, Done) would.

func TestLimiterSettleIsRelease(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := Aimd{Initial: rapid.IntRange(1, 6).Draw(rt, "initial"), Min: 1, Max: 8,
			Slow: time.Duration(rapid.IntRange(0, 3).Draw(rt, "slow")) * 100 * time.Millisecond, Backoff: 0.5}
		a, b := NewLimiter(p), NewLimiter(p)
		t0 := time.Unix(1000, 0)
		for range rapid.IntRange(1, 100).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "acquire") {
				if a.Acquire(t0) != b.Acquire(t0) {
					rt.Fatal("two equal limiters answered Acquire differently")
				}
			} else {
				held := time.Duration(rapid.IntRange(-100, 500).Draw(rt, "held")) * time.Millisecond
				good := rapid.Bool().Draw(rt, "ok")
				a.Release(t0, t0.Add(held), good)
				b.Settle(held, good)
			}
			if *a != *b {
				rt.Fatalf("the limiters differ: Release %+v, Settle %+v", a, b)
			}
		}
	})
}

func TestShedderSettleIsDone(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := DefaultShed
		p.Size = rapid.IntRange(1, 8).Draw(rt, "size")
		p.Window = time.Duration(rapid.IntRange(1, 5000).Draw(rt, "window")) * time.Millisecond
		t0 := time.Unix(1000, 0)
		a, b := NewShedder(p, t0), NewShedder(p, t0)
		now := t0
		for range rapid.IntRange(1, 100).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(rt, "step")) * time.Millisecond)
			cpu := rapid.IntRange(0, 1000).Draw(rt, "cpu")
			if rapid.Bool().Draw(rt, "allow") {
				_, okA := a.Allow(now, cpu)
				_, okB := b.Allow(now, cpu)
				if okA != okB {
					rt.Fatal("two equal shedders answered Allow differently")
				}
			} else {
				held := time.Duration(rapid.IntRange(-100, 3000).Draw(rt, "held")) * time.Millisecond
				good := rapid.Bool().Draw(rt, "ok")
				a.Done(now.Add(-held), now, good)
				b.Settle(now, held, good)
			}
			if a.flying != b.flying || a.average != b.average || a.Flying() != b.Flying() {
				rt.Fatalf("the shedders differ: Done %+v, Settle %+v", a, b)
			}
			for i := range a.win.buckets {
				if a.win.buckets[i] != b.win.buckets[i] {
					rt.Fatalf("bucket %d differs: Done %+v, Settle %+v", i, a.win.buckets[i], b.win.buckets[i])
				}
			}
		}
	})
}
