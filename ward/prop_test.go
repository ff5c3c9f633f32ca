package ward

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// steps draws a sequence of non-negative time steps, often on or near bucket
// boundaries, sometimes long gaps.
func step(t *rapid.T, label string) time.Duration {
	return time.Duration(rapid.OneOf(
		rapid.Int64Range(0, int64(300*time.Millisecond)),
		rapid.SampledFrom([]int64{0, int64(250 * time.Millisecond), int64(time.Second), int64(10 * time.Second)}),
		rapid.Int64Range(0, int64(30*time.Second)),
	).Draw(t, label))
}

// anyDraw draws a roll, including the out-of-range ones callers may pass.
func anyDraw(t *rapid.T, label string) float64 {
	return rapid.OneOf(
		rapid.Float64Range(0, 1),
		rapid.SampledFrom([]float64{0, belowOne, 1, -1, math.NaN(), math.Inf(1)}),
	).Draw(t, label)
}

func TestPropWindowMatchesAModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 12).Draw(t, "size")
		span := time.Duration(rapid.Int64Range(1, int64(5*time.Second)).Draw(t, "span"))
		w := NewWindow[int](size, span, t0)
		width := w.Width()
		bucketOf := func(at time.Time) int64 { return int64(at.Sub(t0) / width) }
		type write struct {
			k int64
			v int
		}
		var writes []write
		now := t0
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			now = now.Add(step(t, "step"))
			if rapid.Bool().Draw(t, "write") {
				v := rapid.IntRange(1, 9).Draw(t, "v")
				*w.Slot(now) += v
				writes = append(writes, write{bucketOf(now), v})
			}
			for _, current := range []bool{true, false} {
				var got, visited int
				w.Each(now, current, func(b *int) { got += *b; visited++ })
				var again int
				w.Each(now, current, func(b *int) { again += *b })
				want := 0
				k := bucketOf(now)
				for _, wr := range writes {
					if wr.k > k-int64(size) && (current || wr.k != k) {
						want += wr.v
					}
				}
				if got != want || again != got {
					t.Fatalf("sum at %v (current %v) = %d then %d, want %d", now.Sub(t0), current, got, again, want)
				}
				if visited > size {
					t.Fatalf("visited %d buckets of %d", visited, size)
				}
			}
		}
	})
}

func TestPropWindowAnyClock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(-2, 8).Draw(t, "size")
		span := time.Duration(rapid.Int64Range(-int64(time.Second), int64(5*time.Second)).Draw(t, "span"))
		w := NewWindow[int](size, span, t0)
		now := t0
		for range rapid.IntRange(1, 50).Draw(t, "ops") {
			now = now.Add(time.Duration(rapid.Int64Range(-int64(20*time.Second), int64(20*time.Second)).Draw(t, "step")))
			*w.Slot(now)++
			// Whatever the clock did, the window has aged out completely two
			// spans after the last write: a write is dated at most one span
			// forward (into the newest bucket), then lives one span.
			later := now.Add(2*w.span + w.width)
			w.Each(later, true, func(b *int) {
				if *b != 0 {
					t.Fatalf("a bucket still holds %d one span after the last write", *b)
				}
			})
		}
	})
}

func TestPropBreaker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := DefaultSre
		p.Size = rapid.IntRange(1, 40).Draw(t, "size")
		p.Window = time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(20*time.Second)).Draw(t, "window"))
		p.Protection = rapid.Float64Range(0, 10).Draw(t, "protection")
		b := NewBreaker(p, t0)
		now := t0
		var open []Call
		refused := 0
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			if rapid.IntRange(0, 20).Draw(t, "back") == 0 {
				now = now.Add(-step(t, "back step"))
			} else {
				now = now.Add(step(t, "step") / 50)
			}
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				r := b.Ratio(now)
				if !(r >= 0 && r < 1) {
					t.Fatalf("Ratio = %v, outside [0, 1)", r)
				}
				roll := anyDraw(t, "roll")
				probe := b.probeDue(now)
				c, ok := b.Allow(now, roll)
				if !ok {
					refused++
					if draw(roll) >= r {
						t.Fatalf("refused at draw %v over the ratio %v", roll, r)
					}
				} else {
					if draw(roll) < r && !probe {
						t.Fatalf("let through at draw %v under the ratio %v with no probe due", roll, r)
					}
					open = append(open, c)
				}
			case 1, 2:
				if len(open) > 0 {
					c := open[len(open)-1]
					open = open[:len(open)-1]
					if rapid.Bool().Draw(t, "pass") {
						c.Pass(now)
					} else {
						c.Fail(now)
					}
				}
			}
			for _, tl := range b.win.buckets {
				if tl.Total != tl.Success+tl.Failure+tl.Drop || tl.Total < 0 {
					t.Fatalf("tally out of balance: %+v", tl)
				}
			}
		}
	})
}

func TestPropShedder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewShedder(DefaultShed, t0)
		now := t0
		var open []Ticket
		admitted, settled := 0, 0
		var lastHot time.Time
		hotSeen := false
		for range rapid.IntRange(1, 300).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 100)
			if rapid.IntRange(0, 3).Draw(t, "op") > 0 {
				cpu := rapid.IntRange(-100, 1100).Draw(t, "cpu")
				before := s.Flying()
				tk, ok := s.Allow(now, cpu)
				if thousandths(cpu) >= s.p.CPU {
					lastHot, hotSeen = now, true
				}
				if ok {
					admitted++
					open = append(open, tk)
				} else {
					if before == 0 {
						t.Fatalf("refused with nothing in flight")
					}
					if thousandths(cpu) < s.p.CPU && (!hotSeen || now.Sub(lastHot) >= s.p.Cool) {
						t.Fatalf("refused at cpu %d, %v after the last hot reading", cpu, now.Sub(lastHot))
					}
				}
			} else if len(open) > 0 {
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				tk := open[i]
				open = append(open[:i], open[i+1:]...)
				settled++
				if rapid.Bool().Draw(t, "pass") {
					tk.Pass(now)
				} else {
					tk.Fail()
				}
			}
			if s.Flying() != admitted-settled {
				t.Fatalf("Flying = %d, want %d", s.Flying(), admitted-settled)
			}
			if s.average < 0 || math.IsNaN(s.average) {
				t.Fatalf("average = %v", s.average)
			}
		}
	})
}

func TestPropBucket(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Rates under 1e-3 put Next's waits past the 292 years time.Sub can
		// measure, which this property's own arithmetic cannot follow.
		rate := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(1e-3, 1000)).Draw(t, "rate")
		burst := rapid.Float64Range(0, 50).Draw(t, "burst")
		b := NewBucket(rate, burst, t0)
		now := t0
		taken := 0.0
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 100)
			n := rapid.Float64Range(0, 5).Draw(t, "n")
			before := b.Tokens(now)
			wait := b.Next(now, n)
			ok := b.Take(now, n)
			if ok != (before >= n) {
				t.Fatalf("Take(%v) = %v with %v tokens", n, ok, before)
			}
			if ok != (wait == 0) {
				t.Fatalf("Next(%v) = %v but Take said %v", n, wait, ok)
			}
			if !ok && wait != Never {
				if !b.Take(now.Add(wait), n) {
					t.Fatalf("no %v tokens %v after Next promised them", n, wait)
				}
				now = now.Add(wait)
				ok = true
			}
			if ok {
				taken += n
			}
			if tk := b.Tokens(now); tk < 0 || tk > b.Burst() {
				t.Fatalf("Tokens = %v outside [0, %v]", tk, b.Burst())
			}
			if limit := b.Burst() + b.Rate()*now.Sub(t0).Seconds() + 1e-6; taken > limit {
				t.Fatalf("took %v by %v, more than burst + rate × time = %v", taken, now.Sub(t0), limit)
			}
		}
	})
}

func TestPropSliding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quota := rapid.IntRange(0, 20).Draw(t, "quota")
		window := time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "window"))
		s := NewSliding(quota, window)
		now := t0
		var admitted []time.Time
		inWindow := func(now time.Time) int {
			n := 0
			for _, a := range admitted {
				if now.Sub(a) < window {
					n++
				}
			}
			return n
		}
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 200)
			if got, want := s.Left(now), quota-inWindow(now); got != want {
				t.Fatalf("Left = %d, want %d", got, want)
			}
			ok := s.Take(now)
			if ok != (inWindow(now) < quota) {
				t.Fatalf("Take = %v with %d of %d in the window: not exact", ok, inWindow(now), quota)
			}
			if ok {
				admitted = append(admitted, now)
			}
		}
	})
}

func TestPropCounter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(0, 20).Draw(t, "limit")
		window := time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "window"))
		c := NewCounter(limit, window)
		now := t0
		perWindow := map[int64]int{}
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 200)
			est := c.Estimate(now)
			if est < 0 {
				t.Fatalf("estimate %v", est)
			}
			ok := c.Take(now)
			if ok != (est < float64(limit)) {
				t.Fatalf("Take = %v at an estimate of %v under limit %d", ok, est, limit)
			}
			if ok {
				k := floorDiv(now.UnixNano(), int64(window))
				perWindow[k]++
				if perWindow[k] > limit {
					t.Fatalf("%d admitted in one window of limit %d", perWindow[k], limit)
				}
			}
		}
	})
}

func TestPropPeriod(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quota := rapid.IntRange(0, 10).Draw(t, "quota")
		period := time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "period"))
		align := rapid.Bool().Draw(t, "align")
		p := NewPeriod(quota, period, align)
		now := t0
		for range rapid.IntRange(1, 200).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 200)
			left := p.Left(now)
			q := p.Take(now)
			switch {
			case left == 0 && q != Over, left == 1 && q != Hit, left > 1 && q != Under:
				t.Fatalf("Take = %v with %d left", q, left)
			}
			if l := p.Left(now); l < 0 || l > quota {
				t.Fatalf("Left = %d outside [0, %d]", l, quota)
			}
			if d := p.Next(now); d < 0 || d > period {
				t.Fatalf("Next = %v outside [0, %v]", d, period)
			}
			if align && p.open && floorMod(p.start.UnixNano(), int64(period)) != 0 {
				t.Fatalf("aligned period opened at %v", p.start)
			}
		}
	})
}

func TestPropBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Backoff{
			Base:     time.Duration(rapid.Int64Range(-10, int64(time.Second)).Draw(t, "base")),
			Factor:   rapid.Float64Range(0, 4).Draw(t, "factor"),
			Cap:      time.Duration(rapid.Int64Range(-10, int64(time.Minute)).Draw(t, "cap")),
			Attempts: rapid.IntRange(-1, 12).Draw(t, "attempts"),
			Jitter:   rapid.SampledFrom([]Jitter{Rigid, Full, Equal, Decorrelated, Spread(0.2), Spread(1)}).Draw(t, "jitter"),
		}
		prevCeil := time.Duration(0)
		for retry := 1; retry <= 40; retry++ {
			c := b.Ceiling(retry)
			if c < prevCeil {
				t.Fatalf("Ceiling(%d) = %v fell from %v", retry, c, prevCeil)
			}
			if b.Cap > 0 && c > b.Cap {
				t.Fatalf("Ceiling(%d) = %v over the cap %v", retry, c, b.Cap)
			}
			prevCeil = c
			d := b.Delay(retry, anyDraw(t, "draw"), time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "prev")))
			if d < 0 {
				t.Fatalf("Delay = %v", d)
			}
			if b.Jitter == Rigid && d != c {
				t.Fatalf("Rigid Delay %v != Ceiling %v", d, c)
			}
			if (b.Jitter == Full || b.Jitter == Equal) && d > c {
				t.Fatalf("%v Delay %v over the ceiling %v", b.Jitter, d, c)
			}
		}
		if got := len(b.Schedule(nil)); got != max(b.Attempts-1, 0) {
			t.Fatalf("Schedule has %d waits for %d attempts", got, b.Attempts)
		}
		retries := 0
		for made := 1; b.More(made); made++ {
			retries++
		}
		if retries != max(b.Attempts-1, 0) {
			t.Fatalf("More allowed %d retries for %d attempts", retries, b.Attempts)
		}
	})
}

func TestPropLimiter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Aimd{
			Initial: rapid.IntRange(-5, 50).Draw(t, "initial"),
			Min:     rapid.IntRange(-5, 20).Draw(t, "min"),
			Max:     rapid.IntRange(-5, 80).Draw(t, "max"),
			Slow:    time.Duration(rapid.Int64Range(-1, int64(time.Second)).Draw(t, "slow")),
			Backoff: rapid.Float64Range(-1, 2).Draw(t, "backoff"),
		}
		l := NewLimiter(p)
		q := l.Policy()
		now := t0
		var starts []time.Time
		for range rapid.IntRange(1, 300).Draw(t, "ops") {
			now = now.Add(step(t, "step") / 100)
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				if l.Acquire(now) {
					starts = append(starts, now)
					if l.Inflight() > l.Limit() {
						t.Fatalf("inflight %d over the limit %d", l.Inflight(), l.Limit())
					}
				} else if l.Inflight() < l.Limit() {
					t.Fatalf("refused with %d of %d out", l.Inflight(), l.Limit())
				}
			case 1:
				if len(starts) > 0 {
					s := starts[0]
					starts = starts[1:]
					l.Release(s, now, rapid.Bool().Draw(t, "ok"))
				}
			case 2:
				if len(starts) > 0 {
					starts = starts[1:]
					before := l.Limit()
					l.Abandon()
					if l.Limit() != before {
						t.Fatalf("Abandon moved the limit from %d to %d", before, l.Limit())
					}
				}
			}
			if l.Limit() < q.Min || l.Limit() > q.Max {
				t.Fatalf("limit %d outside [%d, %d]", l.Limit(), q.Min, q.Max)
			}
			if l.Inflight() != len(starts) {
				t.Fatalf("inflight %d, want %d", l.Inflight(), len(starts))
			}
		}
	})
}

func TestPropGateAndDeadline(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := NewGate(rapid.IntRange(-2, 10).Draw(t, "limit"))
		in := 0
		for range rapid.IntRange(1, 100).Draw(t, "ops") {
			if rapid.Bool().Draw(t, "enter") {
				if g.Enter() {
					in++
				}
			} else if in > 0 {
				g.Leave()
				in--
			}
			if g.Held() != in || (g.Limit() > 0 && g.Held() > g.Limit()) {
				t.Fatalf("held %d, in %d, limit %d", g.Held(), in, g.Limit())
			}
		}
		budget := time.Duration(rapid.Int64Range(-10, int64(time.Hour)).Draw(t, "budget"))
		d := StartDeadline(budget, t0)
		now := t0.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(2*time.Hour)).Draw(t, "now")))
		r, ok := d.Remaining(now)
		if ok != (budget > 0) || r < 0 || r > max(budget, 0) {
			t.Fatalf("Remaining = %v %v for budget %v", r, ok, budget)
		}
		if ok && d.Expired(now) != (r == 0) {
			t.Fatalf("Expired %v with %v remaining", d.Expired(now), r)
		}
	})
}

// TestPropNothingStallsOnAnyClock drives every windowed guard with a clock
// that jumps both ways, and checks that two windows after the last reading
// each admits again: none waits for the clock to catch up.
func TestPropNothingStallsOnAnyClock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		window := time.Duration(rapid.Int64Range(1, int64(10*time.Second)).Draw(t, "window"))
		quota := rapid.IntRange(1, 5).Draw(t, "quota")
		sl := NewSliding(quota, window)
		co := NewCounter(quota, window)
		pe := NewPeriod(quota, window, rapid.Bool().Draw(t, "align"))
		bu := NewBucket(float64(quota)/window.Seconds(), float64(quota), t0)
		sh := NewShedder(Shed{Size: 10, Window: window, CPU: 900, Latency: window, Beta: 0.9, Cool: window, Floor: 0.1}, t0)
		now := t0
		for range rapid.IntRange(1, 100).Draw(t, "ops") {
			now = now.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, "step")))
			sl.Take(now)
			co.Take(now)
			pe.Take(now)
			bu.Take(now, 1)
			sh.Allow(now, rapid.IntRange(0, 1000).Draw(t, "cpu"))
		}
		later := now.Add(2*window + 1)
		if !sl.Take(later) {
			t.Fatalf("Sliding stalled")
		}
		if !co.Take(later) {
			t.Fatalf("Counter stalled at an estimate of %v", co.Estimate(later))
		}
		if pe.Take(later) == Over {
			t.Fatalf("Period stalled")
		}
		if !bu.Take(later, 1) {
			t.Fatalf("Bucket stalled with %v tokens", bu.Tokens(later))
		}
		if _, ok := sh.Allow(later, 0); !ok {
			t.Fatalf("Shedder refused at an idle CPU")
		}
	})
}
