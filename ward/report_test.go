package ward

import (
	"math"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The calls a runtime uses to tell the guards afterwards of calls it let
// through on their word (Cold, Admit, Settle, Lease) leave each guard
// exactly as asking would have.

// Two shedders driven alike, one asked with Allow and Done and the other
// told with Admit and Settle wherever Cold said it could be: equal, field
// for field, after every step.
func TestShedderAdmitAndSettleAreAllowAndDone(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		t0 := time.Unix(1000, 0)
		p := DefaultShed
		p.Size, p.Window, p.Latency = 4, 2*time.Second, 200*time.Millisecond
		asked, told := NewShedder(p, t0), NewShedder(p, t0)
		now := t0
		var starts []time.Time
		for range rapid.IntRange(1, 100).Draw(rt, "steps") {
			now = now.Add(step(rt, "step") / 10)
			cpu := rapid.SampledFrom([]int{0, 500, 899, 900, 1000, -5, 2000}).Draw(rt, "cpu")
			if len(starts) == 0 || rapid.Bool().Draw(rt, "start") {
				cold := told.Cold(cpu)
				_, ok := asked.Allow(now, cpu)
				if cold {
					if !ok {
						rt.Fatalf("Allow refused at cpu %d while Cold", cpu)
					}
					told.Admit()
				} else if _, ok2 := told.Allow(now, cpu); ok2 != ok {
					rt.Fatal("equal shedders answered differently")
				}
				if ok {
					starts = append(starts, now)
				}
			} else {
				i := rapid.IntRange(0, len(starts)-1).Draw(rt, "end")
				good := rapid.Bool().Draw(rt, "ok")
				asked.Done(starts[i], now, good)
				if rapid.Bool().Draw(rt, "after") {
					told.SettleAfter(t0, now.Sub(t0), now.Sub(starts[i]), good)
				} else {
					told.Settle(now, now.Sub(starts[i]), good)
				}
				starts = append(starts[:i], starts[i+1:]...)
			}
			if !reflect.DeepEqual(asked, told) {
				rt.Fatalf("the shedders differ:\nasked %+v\ntold  %+v", asked, told)
			}
		}
	})
}

func TestShedderColdOnlyUnderTheCPUAndNotCooling(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := DefaultShed
	p.Latency = time.Millisecond
	s := NewShedder(p, t0)
	if !s.Cold(0) || !s.Cold(899) || s.Cold(900) || s.Cold(5000) || !s.Cold(-1) {
		t.Fatal("Cold does not follow the CPU threshold (held to 0..1000)")
	}
	// Hot and full: a refusal, after which it cools for Cool.
	for range 50 {
		s.Allow(t0, 1000)
	}
	if _, ok := s.Allow(t0, 1000); ok {
		t.Fatal("a hot, full shedder admitted")
	}
	if s.Cold(0) {
		t.Fatal("Cold while cooling after a refusal")
	}
	// A cool reading after Cool ends the cooling, through Allow.
	s.Allow(t0.Add(2*time.Second), 0)
	if !s.Cold(0) {
		t.Fatal("not Cold after the cooling ended")
	}
}

func TestLimiterSettleIsReleaseAndLeaseIsAcquire(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := Aimd{Initial: rapid.IntRange(1, 6).Draw(rt, "initial"), Min: 1, Max: 8,
			Slow: time.Duration(rapid.IntRange(0, 3).Draw(rt, "slow")) * 100 * time.Millisecond, Backoff: 0.5}
		asked, told := NewLimiter(p), NewLimiter(p)
		t0 := time.Unix(1000, 0)
		for range rapid.IntRange(1, 100).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "acquire") {
				ok := asked.Acquire(t0)
				if !ok {
					continue // told would not have leased either
				}
				if !told.Lease() {
					rt.Fatal("Lease says Acquire would refuse, and it did not")
				}
			} else {
				held := time.Duration(rapid.IntRange(-100, 500).Draw(rt, "held")) * time.Millisecond
				good := rapid.Bool().Draw(rt, "ok")
				asked.Release(t0, t0.Add(held), good)
				told.Settle(held, good)
			}
			if *asked != *told {
				rt.Fatalf("the limiters differ: asked %+v, told %+v", asked, told)
			}
		}
		// Lease takes a lease whatever the limit, and says so.
		for told.Inflight() < told.Limit() {
			told.Lease()
		}
		n := told.Inflight()
		if told.Lease() || told.Inflight() != n+1 {
			rt.Fatalf("Lease at or over the limit: %+v, from %d out", told, n)
		}
	})
}

// SlotAfter is Slot at base plus an offset, including where the window
// starts over (an instant a whole span before the newest bucket).
func TestWindowSlotAfterIsSlot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, at := range []time.Duration{0, 50 * time.Millisecond, 3 * time.Second, 40 * time.Second, -time.Minute} {
		a, b := NewWindow[Total](4, time.Second, t0), NewWindow[Total](4, time.Second, t0)
		a.Slot(t0.Add(20 * time.Second)).Add(1)
		b.Slot(t0.Add(20 * time.Second)).Add(1)
		a.Slot(t0.Add(20*time.Second + at)).Add(7)
		b.SlotAfter(t0.Add(20*time.Second), at).Add(7)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("at %v: Slot left %+v, SlotAfter %+v", at, a, b)
		}
	}
}

// Offsets at the ends of a Duration neither wrap nor panic: the count lands
// in a bucket of a window that moved forward, or started over.
func TestWindowSlotAfterSaturates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, at := range []time.Duration{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1} {
		w := NewWindow[Total](4, time.Second, t0)
		w.SlotAfter(t0.Add(time.Hour), at).Add(7)
		sum := int64(0)
		for _, b := range w.buckets {
			sum += b.Sum
		}
		if sum != 7 {
			t.Fatalf("at %v: the window holds %d, want the 7 written", at, sum)
		}
	}
}

// A Relay's Pass is SettleAfter(base, at, held, true) then Admit, in every
// state, and Passes is that many Passes inside the Span: two shedders
// driven alike, one told through relays and the other call by call, equal
// field for field after every pass. Runs of passes come between ordinary
// calls (hot readings, refusals, failures), with offsets that go forward,
// stand still, step back, or jump whole windows.
func TestShedderRelayPassIsSettleAndAdmit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		t0 := time.Unix(1000, 0)
		p := DefaultShed
		p.Size, p.Latency = rapid.IntRange(1, 8).Draw(rt, "buckets"), 200*time.Millisecond
		p.Window = rapid.SampledFrom([]time.Duration{1, time.Microsecond, 2 * time.Second, time.Hour, math.MaxInt64}).Draw(rt, "window")
		p.Beta = rapid.SampledFrom([]float64{0, 0.5, 0.9, 0.999, 1}).Draw(rt, "beta")
		relayed, called := NewShedder(p, t0), NewShedder(p, t0)
		now := t0
		for range rapid.IntRange(1, 20).Draw(rt, "rounds") {
			// Ordinary calls first, the same on both.
			for range rapid.IntRange(0, 5).Draw(rt, "calls") {
				now = now.Add(step(rt, "step") / 10)
				cpu := rapid.SampledFrom([]int{0, 950, 1000}).Draw(rt, "cpu")
				_, ok1 := relayed.Allow(now, cpu)
				_, ok2 := called.Allow(now, cpu)
				if ok1 != ok2 {
					rt.Fatal("equal shedders answered differently")
				}
				if ok1 && rapid.Bool().Draw(rt, "end") {
					good := rapid.Bool().Draw(rt, "ok")
					relayed.Done(now, now, good)
					called.Done(now, now, good)
				}
			}
			// Then a run of passes against one base.
			base := now.Add(time.Duration(rapid.Int64Range(-int64(time.Second), int64(time.Second)).Draw(rt, "base")))
			r := relayed.Relay(base)
			at := time.Duration(0)
			for range rapid.IntRange(0, 40).Draw(rt, "passes") {
				switch rapid.IntRange(0, 9).Draw(rt, "move") {
				case 0:
					at -= time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(rt, "back"))
				case 1:
					at += time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(rt, "jump"))
				case 2:
					at = rapid.SampledFrom([]time.Duration{math.MaxInt64, math.MinInt64}).Draw(rt, "end")
				default:
					at += time.Duration(rapid.Int64Range(0, int64(time.Millisecond)).Draw(rt, "on"))
				}
				held := time.Duration(rapid.Int64Range(-int64(time.Millisecond), int64(time.Second)).Draw(rt, "held"))
				if lo, hi := r.Span(); lo < hi && rapid.Bool().Draw(rt, "batch") {
					// A batch of passes inside the span, told as one.
					k := rapid.IntRange(0, 50).Draw(rt, "k")
					sum := time.Duration(0)
					for range k {
						// Within the span, a draw no wider than an hour
						// from either end, for an unbounded span.
						at := lo + time.Duration(rapid.Int64Range(0, int64(min(hi-lo, time.Hour))-1).Draw(rt, "in"))
						if rapid.Bool().Draw(rt, "from the top") {
							at = hi - 1 - (at - lo)
						}
						held := time.Duration(rapid.Int64Range(-int64(time.Millisecond), int64(time.Second)).Draw(rt, "held"))
						sum += max(held, 0)
						called.SettleAfter(base, at, held, true)
						called.Admit()
					}
					r.Passes(k, sum)
				} else {
					r.Pass(at, held)
					called.SettleAfter(base, at, held, true)
					called.Admit()
				}
				if !reflect.DeepEqual(relayed, called) {
					rt.Fatalf("after a pass at %v held %v:\nrelayed %+v\ncalled  %+v", at, held, relayed, called)
				}
			}
			now = now.Add(time.Second)
		}
	})
}

// Limiter.Passes(n) is n quick, good Settles each followed by a Lease, and
// Quick is exactly the loans whose Settle does not lower the limit.
func TestLimiterPassesAreSettleAndLease(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := Aimd{Initial: rapid.IntRange(1, 6).Draw(rt, "initial"), Min: 1, Max: rapid.IntRange(1, 12).Draw(rt, "max"),
			Slow: time.Duration(rapid.IntRange(-1, 3).Draw(rt, "slow")) * 100 * time.Millisecond, Backoff: 0.5}
		batched, called := NewLimiter(p), NewLimiter(p)
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				batched.Lease()
				called.Lease()
			case 1:
				held := time.Duration(rapid.IntRange(-100, 500).Draw(rt, "held")) * time.Millisecond
				good := rapid.Bool().Draw(rt, "ok")
				limit := called.limit
				batched.Settle(held, good)
				called.Settle(held, good)
				if good && called.limit < limit && batched.Quick(held) {
					rt.Fatalf("a loan held %v is Quick, but its Settle lowered the limit", held)
				}
				if good && !batched.Quick(held) && called.limit >= limit && limit > float64(called.p.Min) {
					rt.Fatalf("a loan held %v is not Quick, but its Settle kept the limit over Min", held)
				}
			case 2:
				n := rapid.IntRange(0, 40).Draw(rt, "n")
				for range n {
					called.Settle(p.Slow, true)
					called.Lease()
				}
				batched.Passes(n)
			}
			if *batched != *called {
				rt.Fatalf("the limiters differ: batched %+v, called %+v", batched, called)
			}
		}
	})
}
