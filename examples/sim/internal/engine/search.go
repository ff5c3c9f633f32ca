package engine

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Trial is one configuration of a sizing search, run on each of the
// search's seeds.
type Trial struct {
	Size, Idle int
	Keep       time.Duration
	// Sum is the summary of the run on the scenario's own seed.
	Sum Summary
	// P99 is how the p99 acquire wait spread over the seeds.
	P99 Spread
	// Fits reports whether the p99 wait was within the target on at least
	// FitShare of the seeds: P99.Judged within it.
	Fits bool
	// Step names the search this run belonged to: "size", "idle", "keep".
	Step string
}

// Spread is how one figure of a configuration varied over the seeds it was
// run on (the scenario's seed and the ones after it).
type Spread struct {
	// Seeds is how many seeds it was run on.
	Seeds int
	// Median is the middle value, the lower of the two middle ones for an
	// even count; Judged the one FitShare of the seeds are at or under
	// (the nearest rank: the 18th smallest of 20); Worst the largest.
	Median, Judged, Worst time.Duration
	// Each holds the value of each seed, in seed order.
	Each []time.Duration
}

// FitShare is the share of its seeds on which a configuration must keep
// its p99 wait within the target to fit. Not all: on a few draws of the
// burst the pool dials for more than 1% of callers whatever its Size (the
// idle ones retired by Keep), and the p99 is then the dial time.
const FitShare = 0.9

// spread is the spread of each.
func spread(each []time.Duration) Spread {
	sorted := slices.Clone(each)
	slices.Sort(sorted)
	sp := Spread{Seeds: len(each), Each: each}
	if n := len(sorted); n > 0 {
		sp.Median, sp.Worst = sorted[(n-1)/2], sorted[n-1]
		sp.Judged = sorted[max(int(math.Ceil(FitShare*float64(n)))-1, 0)]
	}
	return sp
}

// Missed is how many of the seeds had a value over target.
func (sp Spread) Missed(target time.Duration) int {
	n := 0
	for _, d := range sp.Each {
		if d > target {
			n++
		}
	}
	return n
}

// Keeps are the Keep values the search tries, shortest first.
var Keeps = []time.Duration{
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
}

// Suggest searches for the smallest Size whose p99 acquire wait is within
// target on s's load (Idle equal to Size, s's Keep, or minKeep if that is
// longer); then, at that Size, the smallest Idle; then, at both, the
// shortest Keep of Keeps, no shorter than minKeep, that still fits. The
// floor is there because a run of seconds rewards a Keep of a second or
// less, which in a real service would close and reopen connections all day
// (0: no floor).
// A configuration is run on seeds s.Seed, s.Seed+1, … (seeds of them) and
// fits when its p99 is within target on at least FitShare of them: one draw
// of the load can flatter a configuration that the next misses. (A recorded load is the same on every
// seed; only the pool's own draws change.) Each search is a bisection,
// which assumes more room never makes the p99 worse; every trial is
// returned, in the order run, so the caller can print the table searched.
// load makes a fresh load for each run (nil: the scenario's own). ok is
// false when even Size maxSize does not fit; the trials then show how close
// it came.
func Suggest(s Scenario, load func() Load, target time.Duration, maxSize, seeds int, minKeep time.Duration) (best Trial, trials []Trial, ok bool, err error) {
	if target <= 0 || maxSize < 1 || seeds < 1 {
		return Trial{}, nil, false, fmt.Errorf("target %v, max size %d and seeds %d must be positive", target, maxSize, seeds)
	}
	if minKeep < 0 {
		return Trial{}, nil, false, fmt.Errorf("the floor of Keep is %v, want 0 (none) or more", minKeep)
	}
	try := func(step string, size, idle int, keep time.Duration) (Trial, error) {
		c := s
		c.Limits.Size, c.Limits.Idle, c.Limits.Keep = size, idle, keep
		t := Trial{Size: size, Idle: idle, Keep: keep, Step: step}
		each := make([]time.Duration, seeds)
		for i := range seeds {
			c.Seed = s.Seed + uint64(i)
			var opt Options
			if load != nil {
				opt.Load = load()
			}
			r, err := Run(c, opt)
			if err != nil {
				return Trial{}, err
			}
			if i == 0 {
				t.Sum = r.Sum
			}
			each[i] = r.Sum.P99
		}
		t.P99 = spread(each)
		t.Fits = t.P99.Judged <= target
		trials = append(trials, t)
		return t, nil
	}
	// bisect finds the smallest v in [lo, hi] for which fits holds,
	// knowing it holds at hi (checked first).
	bisect := func(lo, hi int, fits func(int) (bool, error)) (int, error) {
		for lo < hi {
			mid := lo + (hi-lo)/2
			ok, err := fits(mid)
			if err != nil {
				return 0, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return hi, nil
	}
	keep := s.Limits.Keep
	if keep > 0 && keep < minKeep {
		keep = minKeep // 0 keeps for ever, which no floor raises
	}
	top, err := try("size", maxSize, maxSize, keep)
	if err != nil || !top.Fits {
		return top, trials, false, err
	}
	size, err := bisect(1, maxSize, func(n int) (bool, error) {
		t, err := try("size", n, n, keep)
		return t.Fits, err
	})
	if err != nil {
		return Trial{}, trials, false, err
	}
	idle, err := bisect(1, size, func(n int) (bool, error) {
		t, err := try("idle", size, n, keep)
		return t.Fits, err
	})
	if err != nil {
		return Trial{}, trials, false, err
	}
	best = Trial{Size: size, Idle: idle, Keep: keep}
	for _, k := range Keeps {
		if k < minKeep {
			continue
		}
		if k >= keep && keep > 0 {
			break // no shorter Keep fits: keep the scenario's own
		}
		t, err := try("keep", size, idle, k)
		if err != nil {
			return Trial{}, trials, false, err
		}
		if t.Fits {
			best.Keep = k
			break
		}
	}
	// The summary of the chosen configuration, from the trial that ran it.
	for _, t := range trials {
		if t.Size == best.Size && t.Idle == best.Idle && t.Keep == best.Keep {
			best.Sum, best.P99, best.Fits = t.Sum, t.P99, t.Fits
		}
	}
	if !best.Fits {
		t, err := try("final", best.Size, best.Idle, best.Keep)
		if err != nil {
			return Trial{}, trials, false, err
		}
		best = t
	}
	return best, trials, true, nil
}
