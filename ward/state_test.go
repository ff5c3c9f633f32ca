package ward

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// stater is what every guard's state pair (state.go) makes of it.
type stater interface {
	AppendState(dst []byte, origin time.Time) []byte
	ReadState(src []byte, origin time.Time) (int, error)
}

// guardOp is one call, its arguments drawn, applied to a guard at now; it
// returns the answer, rendered.
type guardOp[G stater] func(g G, now time.Time) string

// checkRebuilt drives g through a drawn sequence of calls, writes its state
// out, reads it into fresh() against an origin moved by shift, and then
// holds the two to the same answers and the same state, call for call, the
// copy's instants moved by shift too.
func checkRebuilt[G stater](t *rapid.T, g G, fresh func() G, shift time.Duration, draw func(*rapid.T) guardOp[G]) {
	now := t0
	tick := func() {
		d := step(t, "step")
		if rapid.IntRange(0, 9).Draw(t, "back") == 0 {
			d = -d // a clock stepped back, now and then
		}
		now = now.Add(d)
	}
	for range rapid.IntRange(0, 40).Draw(t, "before") {
		tick()
		draw(t)(g, now)
	}
	state := g.AppendState(nil, t0)
	c := fresh()
	n, err := c.ReadState(append(bytes.Clone(state), 0xff), t0.Add(shift))
	if err != nil || n != len(state) {
		t.Fatalf("ReadState = %d, %v; want %d, nil", n, err, len(state))
	}
	if diff := cmp.Diff(state, c.AppendState(nil, t0.Add(shift)), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("rebuilt state (-written +rebuilt):\n%s", diff)
	}
	for i := range rapid.IntRange(1, 40).Draw(t, "after") {
		tick()
		op := draw(t)
		want, got := op(g, now), op(c, now.Add(shift))
		if want != got {
			t.Fatalf("call %d after the rebuild: original answers %s, rebuilt %s", i, want, got)
		}
		a, b := g.AppendState(nil, t0), c.AppendState(nil, t0.Add(shift))
		// bytes.Equal first: cmp.Diff on every call would slow the property.
		if !bytes.Equal(a, b) {
			t.Fatalf("call %d after the rebuild: state (-original +rebuilt):\n%s", i, cmp.Diff(a, b))
		}
	}
}

func drawShift(t *rapid.T) time.Duration {
	return time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, "shift"))
}

func TestStateBreaker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Sre{K: rapid.Float64Range(1, 3).Draw(t, "k"), Floor: rapid.Float64Range(0, 3).Draw(t, "floor"),
			Protection: rapid.Float64Range(0, 10).Draw(t, "protection"),
			Probe:      time.Duration(rapid.Int64Range(-1, int64(2*time.Second)).Draw(t, "probe")),
			Size:       rapid.IntRange(1, 12).Draw(t, "size"),
			Window:     time.Duration(rapid.Int64Range(1, int64(10*time.Second)).Draw(t, "window"))}
		checkRebuilt(t, NewBreaker(p, t0), func() *Breaker { return new(Breaker) }, drawShift(t),
			func(t *rapid.T) guardOp[*Breaker] {
				roll := anyDraw(t, "roll")
				switch rapid.IntRange(0, 3).Draw(t, "op") {
				case 0:
					return func(b *Breaker, now time.Time) string { _, ok := b.Allow(now, roll); return fmt.Sprint(ok) }
				case 1:
					return func(b *Breaker, now time.Time) string { b.Pass(now); return "" }
				case 2:
					return func(b *Breaker, now time.Time) string { b.Fail(now); return "" }
				}
				return func(b *Breaker, now time.Time) string { return fmt.Sprint(b.Ratio(now)) }
			})
	})
}

func TestStateShedder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Shed{Size: rapid.IntRange(1, 12).Draw(t, "size"),
			Window:  time.Duration(rapid.Int64Range(1, int64(5*time.Second)).Draw(t, "window")),
			CPU:     rapid.IntRange(0, 1000).Draw(t, "cpu"),
			Latency: time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "latency")),
			Beta:    rapid.Float64Range(0, 1).Draw(t, "beta"),
			Cool:    time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "cool")),
			Floor:   rapid.Float64Range(0, 1).Draw(t, "floor")}
		checkRebuilt(t, NewShedder(p, t0), func() *Shedder { return new(Shedder) }, drawShift(t),
			func(t *rapid.T) guardOp[*Shedder] {
				cpu := rapid.IntRange(-10, 1010).Draw(t, "reading")
				held := time.Duration(rapid.Int64Range(-10, int64(2*time.Second)).Draw(t, "held"))
				ok := rapid.Bool().Draw(t, "ok")
				if rapid.Bool().Draw(t, "allow") {
					return func(s *Shedder, now time.Time) string {
						_, yes := s.Allow(now, cpu)
						return fmt.Sprint(yes, s.Flying())
					}
				}
				return func(s *Shedder, now time.Time) string { s.Settle(now, held, ok); return fmt.Sprint(s.Flying()) }
			})
	})
}

func TestStateBucket(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := rapid.Float64Range(0, 50).Draw(t, "rate")
		burst := rapid.Float64Range(0, 20).Draw(t, "burst")
		checkRebuilt(t, NewBucket(rate, burst, t0), func() *Bucket { return new(Bucket) }, drawShift(t),
			func(t *rapid.T) guardOp[*Bucket] {
				n := rapid.Float64Range(0, 5).Draw(t, "n")
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					return func(b *Bucket, now time.Time) string { return fmt.Sprint(b.Take(now, n)) }
				case 1:
					return func(b *Bucket, now time.Time) string { return fmt.Sprint(b.Next(now, n)) }
				}
				return func(b *Bucket, now time.Time) string { return fmt.Sprint(b.Tokens(now)) }
			})
	})
}

func TestStateLimiter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Aimd{Initial: rapid.IntRange(-1, 30).Draw(t, "initial"), Min: rapid.IntRange(-1, 10).Draw(t, "min"),
			Max:     rapid.IntRange(0, 40).Draw(t, "max"),
			Slow:    time.Duration(rapid.Int64Range(-1, int64(time.Second)).Draw(t, "slow")),
			Backoff: rapid.Float64Range(0, 1).Draw(t, "backoff")}
		checkRebuilt(t, NewLimiter(p), func() *Limiter { return new(Limiter) }, drawShift(t),
			func(t *rapid.T) guardOp[*Limiter] {
				held := time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "held"))
				ok := rapid.Bool().Draw(t, "ok")
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					return func(l *Limiter, now time.Time) string { return fmt.Sprint(l.Acquire(now), l.Limit()) }
				case 1:
					return func(l *Limiter, _ time.Time) string { l.Settle(held, ok); return fmt.Sprint(l.Limit()) }
				}
				return func(l *Limiter, _ time.Time) string { l.Abandon(); return fmt.Sprint(l.Inflight()) }
			})
	})
}

func TestStateBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jitters := []Jitter{Rigid, Full, Equal, Decorrelated, Spread(rapid.Float64Range(0, 1).Draw(t, "spread"))}
		b := &Backoff{Base: time.Duration(rapid.Int64Range(-1, int64(time.Second)).Draw(t, "base")),
			Factor:   rapid.Float64Range(0, 4).Draw(t, "factor"),
			Cap:      time.Duration(rapid.Int64Range(-1, int64(5*time.Second)).Draw(t, "cap")),
			Attempts: rapid.IntRange(-1, 8).Draw(t, "attempts"),
			Jitter:   rapid.SampledFrom(jitters).Draw(t, "jitter")}
		checkRebuilt(t, b, func() *Backoff { return new(Backoff) }, drawShift(t),
			func(t *rapid.T) guardOp[*Backoff] {
				retry := rapid.IntRange(-1, 10).Draw(t, "retry")
				r := anyDraw(t, "draw")
				prev := time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "previous"))
				return func(b *Backoff, _ time.Time) string {
					return fmt.Sprint(b.Delay(retry, r, prev), b.More(retry), b.Jitter)
				}
			})
	})
}

func TestStateSliding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quota := rapid.IntRange(0, 20).Draw(t, "quota")
		window := time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "window"))
		checkRebuilt(t, NewSliding(quota, window), func() *Sliding { return new(Sliding) }, drawShift(t),
			func(t *rapid.T) guardOp[*Sliding] {
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					return func(s *Sliding, now time.Time) string { return fmt.Sprint(s.Take(now)) }
				case 1:
					return func(s *Sliding, now time.Time) string { return fmt.Sprint(s.Left(now)) }
				}
				return func(s *Sliding, now time.Time) string { return fmt.Sprint(s.Next(now)) }
			})
	})
}

// A Counter places its windows on the calendar, so it is rebuilt against
// the same origin.
func TestStateCounter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(0, 20).Draw(t, "limit")
		window := time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "window"))
		checkRebuilt(t, NewCounter(limit, window), func() *Counter { return new(Counter) }, 0,
			func(t *rapid.T) guardOp[*Counter] {
				if rapid.Bool().Draw(t, "take") {
					return func(c *Counter, now time.Time) string { return fmt.Sprint(c.Take(now)) }
				}
				return func(c *Counter, now time.Time) string { return fmt.Sprint(c.Estimate(now)) }
			})
	})
}

func TestStatePeriod(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quota := rapid.IntRange(0, 20).Draw(t, "quota")
		period := time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "period"))
		align := rapid.Bool().Draw(t, "align")
		var shift time.Duration
		if !align {
			shift = drawShift(t) // an aligned period is on the calendar
		}
		checkRebuilt(t, NewPeriod(quota, period, align), func() *Period { return new(Period) }, shift,
			func(t *rapid.T) guardOp[*Period] {
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					return func(p *Period, now time.Time) string { return p.Take(now).String() }
				case 1:
					return func(p *Period, now time.Time) string { return fmt.Sprint(p.Left(now)) }
				}
				return func(p *Period, now time.Time) string { return fmt.Sprint(p.Next(now)) }
			})
	})
}

func TestStateGate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkRebuilt(t, NewGate(rapid.IntRange(-1, 10).Draw(t, "limit")), func() *Gate { return new(Gate) }, 0,
			func(t *rapid.T) guardOp[*Gate] {
				if rapid.Bool().Draw(t, "enter") {
					return func(g *Gate, _ time.Time) string { return fmt.Sprint(g.Enter(), g.Held()) }
				}
				return func(g *Gate, _ time.Time) string { g.Leave(); return fmt.Sprint(g.Held()) }
			})
	})
}

// Every guard refuses, with ErrState and never a panic, any cut of its own
// state and any byte flipped in it that leaves it out of range, and stays
// as it was.
func TestStateTruncated(t *testing.T) {
	b := NewBreaker(DefaultSre, t0)
	b.Fail(t0)
	s := NewShedder(DefaultShed, t0)
	s.Allow(t0, 950)
	sl := NewSliding(3, time.Second)
	sl.Take(t0)
	w := NewWindow[int](4, time.Second, t0)
	*w.Slot(t0) = 3
	guards := []stater{b, s, NewBucket(5, 2, t0), NewLimiter(DefaultAimd), &DefaultBackoff, sl,
		NewCounter(3, time.Second), NewPeriod(3, time.Second, true), NewGate(4), windowOf{w}}
	for _, g := range guards {
		state := g.AppendState(nil, t0)
		for n := range len(state) {
			if _, err := g.ReadState(state[:n], t0); !errors.Is(err, ErrState) {
				t.Errorf("%T: %d of %d bytes read with %v, want ErrState", g, n, len(state), err)
			}
		}
		if diff := cmp.Diff(state, g.AppendState(nil, t0), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%T: a refused read changed the guard (-before +after):\n%s", g, diff)
		}
	}
}

func FuzzStateRead(f *testing.F) {
	b := NewBreaker(DefaultSre, t0)
	f.Add(uint8(0), b.AppendState(nil, t0))
	f.Add(uint8(1), NewShedder(DefaultShed, t0).AppendState(nil, t0))
	f.Add(uint8(2), NewBucket(5, 2, t0).AppendState(nil, t0))
	f.Add(uint8(3), NewLimiter(DefaultAimd).AppendState(nil, t0))
	f.Add(uint8(4), DefaultBackoff.AppendState(nil, t0))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		var g stater
		switch which % 9 {
		case 0:
			g = new(Breaker)
		case 1:
			g = new(Shedder)
		case 2:
			g = new(Bucket)
		case 3:
			g = new(Limiter)
		case 4:
			g = new(Backoff)
		case 5:
			g = new(Sliding)
		case 6:
			g = new(Counter)
		case 7:
			g = new(Period)
		default:
			g = new(Gate)
		}
		n, err := g.ReadState(data, t0)
		if err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("error %v does not wrap ErrState", err)
			}
			return
		}
		if n > len(data) {
			t.Fatalf("read %d of %d bytes", n, len(data))
		}
		// What was read writes out as a state that reads back to itself.
		out := g.AppendState(nil, t0)
		if m, err := g.ReadState(out, t0); err != nil || m != len(out) {
			t.Fatalf("wrote %x, read back %d bytes, %v", out, m, err)
		}
		// bytes.Equal first: cmp.Diff would slow every fuzz input.
		if again := g.AppendState(nil, t0); !bytes.Equal(again, out) {
			t.Fatalf("wrote, then wrote again (-first +second):\n%s", cmp.Diff(out, again))
		}
	})
}

// windowOf adapts a Window[int] to stater, its buckets written as varints.
type windowOf struct{ w *Window[int] }

func (x windowOf) AppendState(dst []byte, origin time.Time) []byte {
	return x.w.AppendState(dst, origin, func(dst []byte, b *int) []byte { return appendI(dst, int64(*b)) })
}

func (x windowOf) ReadState(src []byte, origin time.Time) (int, error) {
	return x.w.ReadState(src, origin, func(src []byte, b *int) (int, error) {
		r := newReader(src, origin)
		*b = int(r.i())
		return r.done()
	})
}

func TestStateWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 12).Draw(t, "size")
		span := time.Duration(rapid.Int64Range(1, int64(5*time.Second)).Draw(t, "span"))
		checkRebuilt(t, windowOf{NewWindow[int](size, span, t0)}, func() windowOf { return windowOf{new(Window[int])} }, drawShift(t),
			func(t *rapid.T) guardOp[windowOf] {
				v := rapid.IntRange(1, 9).Draw(t, "v")
				current := rapid.Bool().Draw(t, "current")
				if rapid.Bool().Draw(t, "write") {
					return func(x windowOf, now time.Time) string { *x.w.Slot(now) += v; return "" }
				}
				return func(x windowOf, now time.Time) string {
					sum := 0
					x.w.Each(now, current, func(b *int) { sum = sum*31 + *b })
					return fmt.Sprint(sum)
				}
			})
	})
}
