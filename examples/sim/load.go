package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// The load model, said in words: what a search or a run stands on, so that
// a planner who asked "400 a second, 15 ms holds" sees that the answer is
// for that, or for that doubled in a burst.

// busy is the mean number of resources busy for callers arriving at rate a
// second and holding each for hold on average: Little's law, L = λW.
func busy(rate float64, hold time.Duration) float64 { return rate * hold.Seconds() }

// num writes a rate or a count for people: at most three significant
// digits, no exponent.
func num(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// loadModel says, one line a fact, the load a search runs on: the
// synthetic model (Poisson arrivals, exponential holds, the mean busy by
// Little's law), then every burst, slowdown, outage and failover, or that
// there is none; for a recording, what was recorded.
func loadModel(s engine.Scenario, rec *engine.Recording) []string {
	if rec != nil {
		n, held, holds := len(rec.Rows), time.Duration(0), 0
		for _, r := range rec.Rows {
			if r.Acquired >= 0 && r.Release >= 0 {
				held += time.Duration(r.Release - r.Acquired)
				holds++
			}
		}
		span := rec.End().Seconds()
		rate := float64(n) / max(span, 1e-9)
		mean := time.Duration(0)
		if holds > 0 {
			mean = held / time.Duration(holds)
		}
		return []string{
			fmt.Sprintf("load      recorded: %d callers over %.1f s, %s a second on average, at their recorded instants; holds as recorded, mean %v (unserved callers hold -hold %v); dial %v", n, span, num(rate), round(mean), s.Hold, s.Dial),
			fmt.Sprintf("          busy on average, by Little's law (rate × mean hold): %s a second × %v = %s", num(rate), round(mean), num(busy(rate, mean))),
			busiest(rec),
		}
	}
	if len(s.Classes) > 0 {
		return classModel(s)
	}
	lines := []string{
		fmt.Sprintf("load      synthetic: Poisson arrivals at %s a second; holds exponential, mean %v; dial %v; %d s", num(s.Rate), s.Hold, s.Dial, s.Seconds),
		fmt.Sprintf("          busy on average, by Little's law (rate × mean hold): %s a second × %v = %s", num(s.Rate), s.Hold, num(busy(s.Rate, s.Hold))),
	}
	if len(s.Bursts) == 0 {
		lines = append(lines, fmt.Sprintf("burst     none: %s a second from start to end", num(s.Rate)))
	}
	for _, b := range s.Bursts {
		lines = append(lines, "burst     "+burst(s, b)+"; the answer holds through it (-scenario steady has no burst)")
	}
	for _, sl := range s.Slows {
		lines = append(lines, fmt.Sprintf("slowdown  from %v to %v holds grow to x%g and dials to x%g", sl.From, sl.To, sl.Hold, sl.Dial))
	}
	for _, o := range s.Outages {
		lines = append(lines, fmt.Sprintf("outage    from %v to %v %g of dials fail", o.From, o.To, o.Fraction))
	}
	for _, o := range s.Breaks {
		lines = append(lines, fmt.Sprintf("breaks    from %v to %v %g of loans come home broken", o.From, o.To, o.Fraction))
	}
	if s.Failover > 0 {
		lines = append(lines, fmt.Sprintf("failover  at %v the primary moves", s.Failover))
	}
	if s.Timeout > 0 {
		lines = append(lines, fmt.Sprintf("timeout   callers give up after %v", s.Timeout))
	}
	return lines
}

// burst says what b does to s's load.
func burst(s engine.Scenario, b engine.Burst) string {
	r := s.Rate * b.Factor
	return fmt.Sprintf("x%g from %v to %v: %s a second, %s busy on average", b.Factor, b.From, b.To, num(r), num(busy(r, s.Hold)))
}

// busiest names the second of rec in which the most callers asked, so
// that a recording's own burst is seen.
func busiest(rec *engine.Recording) string {
	per := map[int64]int{}
	var top int64
	for _, r := range rec.Rows {
		sec := r.Asked / int64(time.Second)
		per[sec]++
		if per[sec] > per[top] || per[sec] == per[top] && sec < top {
			top = sec
		}
	}
	return fmt.Sprintf("          busiest second: %d callers asked from %d s to %d s", per[top], top, top+1)
}

// measuredLoad is the load a run met, from its own books: the callers
// served a second, their mean hold and, by Little's law, the mean busy.
func measuredLoad(r *engine.Result) string {
	m := r.Sum
	secs := float64(r.Scenario.Seconds)
	model := "Poisson arrivals, exponential holds"
	if r.Replayed {
		model = "recorded arrivals and holds"
	} else if len(r.Scenario.Classes) > 0 {
		model = "the classes' loads"
	}
	mean := time.Duration(0)
	if m.Holds > 0 {
		mean = m.Held / time.Duration(m.Holds)
	}
	return fmt.Sprintf("load           %s: %s served a second × mean hold %v = %s busy on average (Little's law)",
		model, num(float64(m.Holds)/secs), round(mean), num(m.Held.Seconds()/secs))
}

// peakRate is s's arrival rate at the height of its bursts.
func peakRate(s engine.Scenario) float64 {
	top := s.Rate
	for _, b := range s.Bursts {
		r := s.Rate
		for _, c := range s.Bursts {
			if c.From < b.To && b.From < c.To {
				r *= c.Factor // overlapping bursts multiply
			}
		}
		top = max(top, r)
	}
	return top
}
