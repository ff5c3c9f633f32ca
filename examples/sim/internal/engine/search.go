package engine

import (
	"fmt"
	"time"
)

// Trial is one run of a sizing search.
type Trial struct {
	Size, Idle int
	Keep       time.Duration
	Sum        Summary
	// Fits reports whether the p99 wait was within the target.
	Fits bool
	// Step names the search this run belonged to: "size", "idle", "keep".
	Step string
}

// Keeps are the Keep values the search tries, shortest first.
var Keeps = []time.Duration{
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
}

// Suggest searches for the smallest Size whose p99 acquire wait is within
// target on s's load (Idle equal to Size, s's Keep); then, at that Size, the
// smallest Idle; then, at both, the shortest Keep of Keeps that still fits.
// Each search is a bisection, which assumes more room never makes the p99
// worse; every run is returned, in the order run, so the caller can print
// the table searched. load makes a fresh load for each run (nil: the
// scenario's own). ok is false when even Size maxSize does not fit; the
// trials then show how close it came.
func Suggest(s Scenario, load func() Load, target time.Duration, maxSize int) (best Trial, trials []Trial, ok bool, err error) {
	if target <= 0 || maxSize < 1 {
		return Trial{}, nil, false, fmt.Errorf("target %v and max size %d must be positive", target, maxSize)
	}
	try := func(step string, size, idle int, keep time.Duration) (Trial, error) {
		c := s
		c.Limits.Size, c.Limits.Idle, c.Limits.Keep = size, idle, keep
		var opt Options
		if load != nil {
			opt.Load = load()
		}
		r, err := Run(c, opt)
		if err != nil {
			return Trial{}, err
		}
		t := Trial{Size: size, Idle: idle, Keep: keep, Sum: r.Sum, Fits: r.Sum.P99 <= target, Step: step}
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
			best.Sum, best.Fits = t.Sum, t.Fits
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
