package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool"
)

// Trial is one what-if held to the real run it predicts: a real run at
// the plan's Size, the interval it predicts for the p99 wait at WhatIf
// (its holds resampled, engine.Resample, each caller carrying the delay
// the machine added to its wait beyond the model's: see residuals), and
// the same arrivals run for
// real at WhatIf with sleeps drawn afresh from the same distribution: the
// next run of a service meets the same kind of load, not the same holds,
// and that is what the interval is for.
type Trial struct {
	Seed     uint64
	Interval engine.Interval
	// Measured is the real run's p99 wait at WhatIf, and Wake its p99
	// wake-up (see Figures.Handoff99), a delay in the measured wait that
	// no prediction has.
	Measured, Wake time.Duration
	// HoldFrom and HoldTo are the mean holds measured in the run the
	// interval was predicted from and in the run it predicts: where they
	// differ beyond the draw of the sleeps, the machine ran the two runs
	// differently, which no resampling of the first can know.
	HoldFrom, HoldTo time.Duration
}

// Inside reports whether the real p99 fell within the interval.
func (t Trial) Inside() bool { return t.Interval.Contains(t.Measured) }

// Coverage is the trials at one offered load.
type Coverage struct {
	Load   float64
	Trials []Trial
}

// Inside counts the trials whose real p99 fell within the interval.
func (c Coverage) Inside() int {
	n := 0
	for _, t := range c.Trials {
		if t.Inside() {
			n++
		}
	}
	return n
}

// coverage runs pl.Trials what-ifs at each load, on fresh arrivals for
// each (seeds apart from the table's), and reports how often the real run
// fell inside the predicted interval. capacity is what a Size serves a
// second; lim the limits of a Size.
func coverage(ctx context.Context, pl Plan, dial time.Duration, capacity func(int) float64, lim func(int) pool.Limits, progress io.Writer) ([]Coverage, error) {
	var out []Coverage
	for i, load := range pl.Loads {
		c := Coverage{Load: load}
		for k := range pl.Trials {
			seed := pl.Seed + uint64(1000*(i+1)+k)
			sched := schedule(seed, load*capacity(pl.Size), pl.Hold, pl.TrialSeconds)
			from, _, _, err := runReal(ctx, pl.DSN, pl.Size, sched)
			if err != nil {
				return nil, err
			}
			rec := recording(from)
			extra, err := residuals(from, rec, lim(pl.Size), dial, pl.Hold, pl.TrialSeconds)
			if err != nil {
				return nil, err
			}
			s := scenario(lim(pl.WhatIf), dial, pl.Hold, pl.TrialSeconds)
			iv, err := engine.Resample(s, rec, pl.Hold, nil, pl.Resamples, pl.Level, Block, extra)
			if err != nil {
				return nil, err
			}
			calls, dials, sat, err := runReal(ctx, pl.DSN, pl.WhatIf, resleep(sched, seed^0xa5a5a5a5, pl.Hold))
			if err != nil {
				return nil, err
			}
			m := measured(calls, dials, sat)
			wake, _ := spread(lendings(calls))
			t := Trial{Seed: seed, Interval: iv, Measured: m.P99, Wake: wake,
				HoldFrom: measured(from, 0, 0).MeanHold, HoldTo: m.MeanHold}
			c.Trials = append(c.Trials, t)
			if progress != nil {
				fmt.Fprintf(progress, "coverage, load %.0f%%, trial %d: predicted p99 at Size %d %v (%.0f%% interval %v to %v), measured %v, inside: %v; mean holds %v then %v\n",
					100*load, k+1, pl.WhatIf, iv.Point, 100*pl.Level, iv.Lo, iv.Hi, m.P99, t.Inside(), t.HoldFrom, t.HoldTo)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// residuals are, for each caller of the recording rec of calls (in its
// order), its measured wait less the wait the simulator gives it replaying
// that same run with the limits it ran with: what the machine added that
// the model has no part of (the process not run when a caller found room,
// a goroutine woken late). That replay is exact to a fraction of a percent
// at p99 otherwise (the table's own-load rows), so the residuals are the
// model's error as the run saw it, and a what-if's interval carries them
// (engine.Resample's extra).
func residuals(calls []caller, rec *engine.Recording, lim pool.Limits, dial, hold time.Duration, seconds float64) ([]time.Duration, error) {
	// The measured waits, in the recording's order (recording sorts the
	// calls stably by ask).
	idx := make([]int, len(calls))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(calls[a].asked - calls[b].asked) })
	model := make([]time.Duration, len(calls))
	_, err := engine.Run(scenario(lim, dial, hold, seconds), engine.Options{
		Load: rec.Load(hold),
		Wait: func(c uint64, w time.Duration) {
			if int(c) < len(model) {
				model[c] = w
			}
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(calls))
	for k, i := range idx {
		out[k] = time.Duration(calls[i].acquired-calls[i].asked) - model[k]
	}
	return out, nil
}

// Block is how long a stretch of callers keeps its holds together when a
// trial's holds are resampled (see engine.Resample): long enough to hold
// a stall of the machine whole.
const Block = time.Second

// resleep returns sched's arrivals with sleeps drawn afresh from seed:
// exponential, scaled to mean hold exactly, as schedule draws them.
func resleep(sched []arrival, seed uint64, hold time.Duration) []arrival {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	out := slices.Clone(sched)
	draws := make([]float64, len(out))
	var sum float64
	for i := range draws {
		draws[i] = rng.ExpFloat64()
		sum += draws[i]
	}
	for i := range out {
		out[i].sleep = time.Duration(draws[i] * float64(len(out)) / sum * float64(hold)).Round(time.Microsecond)
	}
	return out
}

// coverageTable writes the coverage as a Markdown table and a line on the
// goal.
func coverageTable(w io.Writer, pl Plan, cov []Coverage) {
	if len(cov) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhat-if intervals: from a real run at Size %d, the p99 wait at Size %d predicted as an interval spanning %.0f%% of %d runs with the recorded holds, and each caller's delay beyond the model's, resampled (in blocks of %v of callers), then Size %d run for real on the same arrivals with fresh sleeps; %d trials a load, %.0f s of arrivals each.\n\n",
		pl.Size, pl.WhatIf, 100*pl.Level, pl.Resamples, Block, pl.WhatIf, pl.Trials, pl.TrialSeconds)
	fmt.Fprintln(w, "| offered load | inside | interval width, median | mean hold, predicted from / run | each trial: measured p99 in [lo, hi] |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | --- |")
	in, all := 0, 0
	for _, c := range cov {
		var widths []time.Duration
		var each []string
		var from, to time.Duration
		for _, t := range c.Trials {
			widths = append(widths, t.Interval.Hi-t.Interval.Lo)
			from, to = from+t.HoldFrom, to+t.HoldTo
			mark := ""
			if !t.Inside() {
				mark = " **out**"
			}
			each = append(each, fmt.Sprintf("%s in [%s, %s]%s", ms(t.Measured), ms(t.Interval.Lo), ms(t.Interval.Hi), mark))
		}
		slices.Sort(widths)
		median := time.Duration(0)
		if len(widths) > 0 {
			median = widths[(len(widths)-1)/2]
		}
		n := time.Duration(max(len(c.Trials), 1))
		fmt.Fprintf(w, "| %.0f%% | %d of %d | %s | %s / %s | %s |\n", 100*c.Load, c.Inside(), len(c.Trials), ms(median), ms(from/n), ms(to/n), joinSemi(each))
		in += c.Inside()
		all += len(c.Trials)
	}
	verdict := "met"
	if 10*in < 9*all {
		verdict = "missed"
	}
	fmt.Fprintf(w, "\nIn all %d of %d real runs fell inside their interval; the goal, 9 in 10, is %s.\n", in, all, verdict)
}

func joinSemi(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
