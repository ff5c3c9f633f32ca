package main

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/examples/sim/internal/plot"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// table prints one row a second: the gauges at its end and the counts of
// what happened in it, under a legend that says which is which.
func table(w io.Writer, r *engine.Result) {
	for _, l := range tableLegend {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "%4s %5s %5s %7s %7s %7s %5s %8s\n", "sec", "lent", "idle", "queued", "deepest", "waited", "made", "retired")
	for _, x := range r.Rows {
		fmt.Fprintf(w, "%4d %5d %5d %7d %7d %7d %5d %8d\n", x.Sec, x.Lent, x.Idle, x.Queued, x.QueueMax, x.Waited, x.Answers[pool.Make], x.Retired)
	}
}

// tableLegend names the table's columns: the gauges are read at the end
// of each second, which a queue that comes and goes within it never is.
var tableLegend = []string{
	"one row a second. At the second's end: lent (out on loan), idle (ready to lend), queued (callers waiting).",
	"Within it: deepest (the most callers queued at once), waited (callers served later than they asked:",
	"after a queue or their own dial), made (dials the pool asked for), retired (resources closed:",
	"stale, evicted or over Idle).",
}

// summary prints what a planner reads first.
func summary(w io.Writer, r *engine.Result) {
	s := r.Scenario
	m := r.Sum
	fmt.Fprintf(w, "%s: %s\n", s.Name, label(s, ""))
	fmt.Fprintln(w, measuredLoad(r))
	if !r.Replayed {
		for _, b := range s.Bursts {
			fmt.Fprintf(w, "burst          %s\n", burst(s, b))
		}
	}
	fmt.Fprintf(w, "acquire wait   p50 %v  p99 %v  max %v\n", round(m.P50), round(m.P99), round(m.Max))
	fmt.Fprintf(w, "saturated      %v in all; longest queue %s\n", round(m.Saturated), episode(m.Longest))
	fmt.Fprintf(w, "opened         %d resources (peak %d live); %d dials, %d to a dead backend\n", m.Opened, m.Peak, m.Dials, m.DeadDials)
	fmt.Fprintf(w, "callers        %d: %d served, %d timed out, %d shed, %d dial errors\n", m.Arrived, m.Served, m.TimedOut, m.Refused, m.DialErrors)
	for _, l := range classSummary(r) {
		fmt.Fprintln(w, l)
	}
	if s.Failover > 0 {
		fmt.Fprintf(w, "failover       at %v, classifier %s: %s\n", s.Failover, classifyOf(s), failover(m.Failover))
		fmt.Fprintf(w, "switchover     %s\n", switchover(s, m.Failover))
	}
	if s.ServerMax > 0 || m.Full.Refused > 0 {
		fmt.Fprintf(w, "full backend   %s: %s\n", fullForm(s), fullFigures(m.Full))
	}
	if s.RotateAt > 0 {
		fmt.Fprintf(w, "rotation       at %v, %s: %s\n", s.RotateAt, rotationForm(s), rotation(m.Rotation))
	}
	if g := guards(r); g != "" {
		fmt.Fprintf(w, "guards         %s\n", g)
	}
}

// guardCounts is, for a comparison, how many answers each of a run's
// guards gave in the pool's stead, or "no ward".
func guardCounts(r *engine.Result) string {
	on := r.Scenario.GuardsOn()
	if len(on) == 0 {
		return "no ward"
	}
	byName := map[string]ward.Guard{"breaker": ward.GuardBreaker, "backoff": ward.GuardBackoff,
		"bucket": ward.GuardBucket, "shedder": ward.GuardShedder, "limiter": ward.GuardLimiter}
	var out []string
	for _, g := range on {
		out = append(out, fmt.Sprintf("%s %d", g, r.Sum.Guards[byName[g]]))
	}
	return strings.Join(out, ", ")
}

// guards says what each guard of the run's ward did, with its knobs: how
// many answers it gave in the pool's stead, and the gauge it moves.
func guards(r *engine.Result) string {
	s, m := r.Scenario, r.Sum
	var out []string
	n := func(g ward.Guard) int { return m.Guards[g] }
	if s.Breaker {
		out = append(out, fmt.Sprintf("breaker shed %d", n(ward.GuardBreaker)))
	}
	if s.Backoff {
		out = append(out, fmt.Sprintf("backoff deferred makes %d times", n(ward.GuardBackoff)))
	}
	if s.Bucket {
		out = append(out, fmt.Sprintf("bucket (%g a second, burst %g) deferred makes %d times", s.BucketRate, s.BucketBurst, n(ward.GuardBucket)))
	}
	if s.Shedder {
		out = append(out, fmt.Sprintf("shedder (hot at %d‰, floor %g; CPU %d‰ + %d‰ a busy resource, %d‰ at most) shed %d",
			s.ShedCPU, s.ShedFloor, s.CPUIdle, s.CPUPerLoan, m.CPUMax, n(ward.GuardShedder)))
	}
	if s.Limiter {
		out = append(out, fmt.Sprintf("limiter (AIMD from %d in [%d, %d], x%g on a failure or a hold over %v) answered Wait %d times; limit %d to %d",
			min(max(s.Limit.Initial, s.Limit.Min), s.Limit.Max), s.Limit.Min, s.Limit.Max, s.Limit.Backoff, s.Limit.Slow, n(ward.GuardLimiter), m.LimitMin, m.LimitMax))
	}
	return strings.Join(out, "; ")
}

// classifyOf is the scenario's classifier, named.
func classifyOf(s engine.Scenario) string {
	if s.Classify == "" {
		return engine.ClassifyReset
	}
	return s.Classify
}

// rotationForm names the scenario's rotation: at once or over a window.
func rotationForm(s engine.Scenario) string {
	if s.RotateOver <= 0 {
		return "at once"
	}
	return fmt.Sprintf("over %v", s.RotateOver)
}

// rotation is a rotation's figures, for the summary.
func rotation(m engine.RotationSum) string {
	return fmt.Sprintf("from %v to %v %d dials (peak %d a second), %d callers waited, %d timed out, wait p99 %v max %v",
		m.From, m.To, m.Dials, m.DialsPeak, m.Waited, m.TimedOut, round(m.P99), round(m.Max))
}

// holdForm names the scenario's hold through a failover, or "none".
func holdForm(s engine.Scenario) string {
	if s.HoldFor <= 0 {
		return "none"
	}
	every := s.HoldEvery
	if every <= 0 {
		every = pool.DefaultHoldEvery
	}
	return fmt.Sprintf("for %v, a dial every %v", s.HoldFor, every)
}

// fullForm names the scenario's connection limit and what a refusal for
// want of room does; without a limit, only a Keeper recording's
// refusals refuse (engine.Options.DialFull): "no limit; refused as recorded".
func fullForm(s engine.Scenario) string {
	how := "the caller waits"
	if s.Full == engine.FullFail {
		how = "the caller fails"
	}
	if s.ServerMax <= 0 {
		return "no limit; refused as recorded: " + how
	}
	return fmt.Sprintf("takes %d, refused: %s", s.ServerMax, how)
}

// fullFigures is what a full backend did, in a line.
func fullFigures(f engine.FullSum) string {
	return fmt.Sprintf("%d dials refused (peak %d a second), %d waits, %d callers put back; at most %d connections",
		f.Refused, f.Peak, f.Waits, f.PutBack, f.Conns)
}

// failedCalls counts the callers a run failed: writes that failed on the
// old node, dial errors, timeouts and refusals.
func failedCalls(m engine.Summary) int {
	return m.Failover.Failed + m.DialErrors + m.TimedOut + m.Refused
}

// since is an instant after the failover, or "none" (-1).
func since(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return round(d).String()
}

// switchover is the switchover's and the hold's figures in a line.
func switchover(s engine.Scenario, f engine.FailoverSum) string {
	how := "not held"
	if s.HoldFor > 0 {
		how = "held " + holdForm(s)
	}
	out := fmt.Sprintf("%s: first dial made %s after, %d dials failed before it (peak %d a second)", how, since(f.FirstMade), f.DownDials, f.DownPeak)
	if s.HoldFor > 0 {
		out += fmt.Sprintf("; %d waits, %d callers put back, %d dials", f.HoldWaits, f.PutBack, f.HoldDials)
		if f.HoldDials > 1 {
			out += fmt.Sprintf(" at least %v apart", round(f.HoldGap))
		}
		if f.HoldLast >= 0 {
			out += fmt.Sprintf(", the last wait %v after", round(f.HoldLast))
		}
	}
	return out
}

// failover is the failover's figures in a line.
func failover(f engine.FailoverSum) string {
	first := "none"
	if f.FirstWrite >= 0 {
		first = round(f.FirstWrite).String()
	}
	open := "(run too short)"
	if f.OldOpen >= 0 {
		open = fmt.Sprint(f.OldOpen)
	}
	return fmt.Sprintf("%d writes failed (%d of them 1 s or more after), first write %s after, %s connections to the old node open 1 s after, %d resets",
		f.Failed, f.FailedLate, first, open, f.Resets)
}

func episode(e engine.Episode) string {
	if e.Len() == 0 {
		return "none"
	}
	return fmt.Sprintf("%v from %.3f s (%d deep)", round(e.Len()), e.From.Seconds(), e.Depth)
}

// compare prints the runs side by side, and what the others did during the
// first one's longest queue.
func compare(w io.Writer, runs []*engine.Result, labels []string, origin time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, f func(*engine.Result) string) {
		fmt.Fprint(tw, name)
		for _, r := range runs {
			fmt.Fprint(tw, "\t"+f(r))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "")
	for i := range runs {
		fmt.Fprintf(tw, "\t%c: %s", 'A'+i, labels[i])
	}
	fmt.Fprintln(tw)
	d := func(f func(engine.Summary) time.Duration) func(*engine.Result) string {
		return func(r *engine.Result) string { return round(f(r.Sum)).String() }
	}
	n := func(f func(engine.Summary) int) func(*engine.Result) string {
		return func(r *engine.Result) string { return fmt.Sprint(f(r.Sum)) }
	}
	row("wait p50", d(func(m engine.Summary) time.Duration { return m.P50 }))
	row("wait p99", d(func(m engine.Summary) time.Duration { return m.P99 }))
	row("wait max", d(func(m engine.Summary) time.Duration { return m.Max }))
	row("time saturated", d(func(m engine.Summary) time.Duration { return m.Saturated }))
	row("longest queue", func(r *engine.Result) string { return episode(r.Sum.Longest) })
	row("connections opened", n(func(m engine.Summary) int { return m.Opened }))
	row("peak live", n(func(m engine.Summary) int { return m.Peak }))
	row("dials / to a dead backend", func(r *engine.Result) string { return fmt.Sprintf("%d / %d", r.Sum.Dials, r.Sum.DeadDials) })
	row("callers served", n(func(m engine.Summary) int { return m.Served }))
	row("timed out / shed / dial errors", func(r *engine.Result) string {
		return fmt.Sprintf("%d / %d / %d", r.Sum.TimedOut, r.Sum.Refused, r.Sum.DialErrors)
	})
	if slices.ContainsFunc(runs, func(r *engine.Result) bool { return r.Scenario.Ward() }) {
		row("guards answered instead", guardCounts)
	}
	if names := classNames(runs); len(names) > 0 {
		row("classes", func(r *engine.Result) string { return classesForm(r.Scenario) })
		for _, name := range names {
			cls := func(f func(*engine.Result, engine.ClassSum) string) func(*engine.Result) string {
				return func(r *engine.Result) string {
					if c, ok := classOf(r, name); ok {
						return f(r, c)
					}
					return "-"
				}
			}
			row(name+": wait p50 / p99 / max", cls(func(_ *engine.Result, c engine.ClassSum) string {
				return fmt.Sprintf("%v / %v / %v", round(c.P50), round(c.P99), round(c.Max))
			}))
			row("  served / a second", cls(func(r *engine.Result, c engine.ClassSum) string {
				return fmt.Sprintf("%d / %s", c.Served, num(c.PerSecond(r.Scenario.Seconds)))
			}))
			row("  timed out / failed / most held after 1 s", cls(func(_ *engine.Result, c engine.ClassSum) string {
				return fmt.Sprintf("%d / %d / %d", c.TimedOut, c.Failed, c.Peak)
			}))
		}
	}
	if slices.ContainsFunc(runs, func(r *engine.Result) bool { return r.Scenario.Failover > 0 }) {
		row("failover: classifier", func(r *engine.Result) string {
			if r.Scenario.Failover <= 0 {
				return "no failover"
			}
			return classifyOf(r.Scenario)
		})
		row("writes failed / 1 s or more after", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d", r.Sum.Failover.Failed, r.Sum.Failover.FailedLate)
		})
		row("first write after failover", func(r *engine.Result) string {
			if f := r.Sum.Failover.FirstWrite; r.Scenario.Failover > 0 && f >= 0 {
				return round(f).String()
			}
			return "none"
		})
		row("old-node connections 1 s after", func(r *engine.Result) string {
			if n := r.Sum.Failover.OldOpen; n >= 0 && r.Scenario.Failover > 0 {
				return fmt.Sprint(n)
			}
			return "-"
		})
		row("resets", func(r *engine.Result) string { return fmt.Sprint(r.Sum.Failover.Resets) })
		row("hold", func(r *engine.Result) string { return holdForm(r.Scenario) })
		row("calls failed", func(r *engine.Result) string { return fmt.Sprint(failedCalls(r.Sum)) })
		row("  writes / dial errors / timed out", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d / %d", r.Sum.Failover.Failed, r.Sum.DialErrors, r.Sum.TimedOut)
		})
		row("switchover: first dial made", func(r *engine.Result) string { return since(r.Sum.Failover.FirstMade) })
		row("  failed dials / peak a second", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d", r.Sum.Failover.DownDials, r.Sum.Failover.DownPeak)
		})
		row("  held: waits / put back", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d", r.Sum.Failover.HoldWaits, r.Sum.Failover.PutBack)
		})
		row("  held: dials / least gap", func(r *engine.Result) string {
			if r.Sum.Failover.HoldDials == 0 {
				return "-"
			}
			return fmt.Sprintf("%d / %v", r.Sum.Failover.HoldDials, round(r.Sum.Failover.HoldGap))
		})
	}
	if slices.ContainsFunc(runs, func(r *engine.Result) bool { return r.Scenario.ServerMax > 0 || r.Sum.Full.Refused > 0 }) {
		row("server connections", func(r *engine.Result) string { return fullForm(r.Scenario) })
		if !slices.ContainsFunc(runs, func(r *engine.Result) bool { return r.Scenario.Failover > 0 }) {
			row("calls failed", func(r *engine.Result) string { return fmt.Sprint(failedCalls(r.Sum)) }) // else above
		}
		row("  refused dials / peak a second", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d", r.Sum.Full.Refused, r.Sum.Full.Peak)
		})
		row("  full: waits / put back", func(r *engine.Result) string {
			return fmt.Sprintf("%d / %d", r.Sum.Full.Waits, r.Sum.Full.PutBack)
		})
		row("  most connections at once", func(r *engine.Result) string { return fmt.Sprint(r.Sum.Full.Conns) })
	}
	if slices.ContainsFunc(runs, func(r *engine.Result) bool { return r.Scenario.RotateAt > 0 }) {
		rot := func(f func(engine.RotationSum) string) func(*engine.Result) string {
			return func(r *engine.Result) string {
				if r.Scenario.RotateAt <= 0 || r.Sum.Rotation.To <= 0 {
					return "-"
				}
				return f(r.Sum.Rotation)
			}
		}
		row("rotation", func(r *engine.Result) string {
			if r.Scenario.RotateAt <= 0 {
				return "no rotation"
			}
			return fmt.Sprintf("at %v, %s", r.Scenario.RotateAt, rotationForm(r.Scenario))
		})
		row("  read over", rot(func(m engine.RotationSum) string { return fmt.Sprintf("%v to %v", m.From, m.To) }))
		row("  dials / peak a second", rot(func(m engine.RotationSum) string { return fmt.Sprintf("%d / %d", m.Dials, m.DialsPeak) }))
		row("  callers waited / timed out", rot(func(m engine.RotationSum) string { return fmt.Sprintf("%d / %d", m.Waited, m.TimedOut) }))
		row("  wait p99 / max", rot(func(m engine.RotationSum) string { return fmt.Sprintf("%v / %v", round(m.P99), round(m.Max)) }))
	}
	tw.Flush()
	for _, l := range trades(runs) {
		fmt.Fprintln(w, l)
	}
	// A's worst queues, and what the others did over the same stretches.
	eps := slices.Clone(runs[0].Episodes)
	slices.SortStableFunc(eps, func(a, b engine.Episode) int { return cmp.Compare(b.Len(), a.Len()) })
	if len(eps) > 0 {
		fmt.Fprintln(w, "\nA's longest queues, and the same stretches of time under the others:")
	}
	for _, e := range eps[:min(3, len(eps))] {
		fmt.Fprintf(w, "  at %s A queued callers for %v (%d deep);", when(origin, e.From), round(e.Len()), e.Depth)
		for i, r := range runs[1:] {
			q, longest := within(r.Episodes, e.From, e.To)
			fmt.Fprintf(w, " %c for %v of it (longest stretch %v)", 'B'+i, round(q), round(longest))
		}
		fmt.Fprintln(w)
	}
}

// trades says, one line for each pair of runs one with a ward and one
// without, what the ward bought and what callers paid for it: fewer dials
// to a dead backend, against waits or failures. Nothing when the ward made
// no fewer such dials, or when its callers fared no worse.
func trades(runs []*engine.Result) []string {
	var out []string
	for i, a := range runs {
		for j, b := range runs {
			if !a.Scenario.Ward() || b.Scenario.Ward() {
				continue
			}
			x, y := a.Sum, b.Sum
			failedA := x.TimedOut + x.Refused + x.DialErrors
			failedB := y.TimedOut + y.Refused + y.DialErrors
			if x.DeadDials >= y.DeadDials || (x.P99 <= y.P99 && failedA <= failedB) {
				continue
			}
			out = append(out, fmt.Sprintf("trade: %c's ward made %d dials to a dead backend where %c made %d; its callers paid: p99 %v against %v, %d failed (%d timed out, %d shed, %d dial errors) against %d",
				'A'+i, x.DeadDials, 'A'+j, y.DeadDials, round(x.P99), round(y.P99), failedA, x.TimedOut, x.Refused, x.DialErrors, failedB))
		}
	}
	return out
}

// when names an instant of the run: the wall-clock time of a recording
// that has one, else seconds since the start.
func when(origin time.Time, d time.Duration) string {
	if origin.IsZero() {
		return fmt.Sprintf("%.3f s", d.Seconds())
	}
	return origin.Add(d).Format("15:04:05.000")
}

// within is how long, between from and to, episodes had callers queued,
// and the longest single stretch of it.
func within(eps []engine.Episode, from, to time.Duration) (total, longest time.Duration) {
	for _, e := range eps {
		a, z := max(e.From, from), min(e.To, to)
		if z > a {
			total += z - a
			longest = max(longest, z-a)
		}
	}
	return total, longest
}

// suggest runs the sizing search, prints the table it searched and its
// answer with the spread over the seeds, and draws the search when -svg or
// -html asks.
func suggest(fsys files, w io.Writer, s engine.Scenario, rec *engine.Recording, o options) error {
	var load func() engine.Load
	if rec != nil {
		load = func() engine.Load { return rec.Load(s.Hold) }
	}
	best, trials, ok, err := engine.Suggest(s, load, o.target, o.maxSize, o.seeds, o.minKeep)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	share := fmt.Sprintf("%d of %d", int(math.Ceil(engine.FitShare*float64(o.seeds))), o.seeds)
	fmt.Fprintf(&b, "question  the smallest Size, then Idle, then Keep keeping the p99 acquire wait within %v on at least %s seeds (%s)\n",
		o.target, share, seedRange(s.Seed, o.seeds))
	if o.minKeep > 0 {
		fmt.Fprintf(&b, "          Keep no shorter than %v (-min-keep): a shorter idle timeout fits a run of seconds and churns connections in a service\n", o.minKeep)
	} else {
		fmt.Fprintf(&b, "          no floor on Keep (-min-keep 0): a Keep this short may close and reopen connections all day in a service\n")
	}
	fmt.Fprintf(&b, "scenario  %s\n", s.Name)
	for _, l := range loadModel(s, rec) {
		fmt.Fprintln(&b, l)
	}
	if rec != nil {
		fmt.Fprintf(&b, "the load is the recording's on every seed: the seeds change only the pool's own draws\n")
	}
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "step\tsize\tidle\tkeep\tp99 median\tp99 %s\tp99 worst\tmissed\tmargin\topened\tfailed\tfits\t\n", pct(engine.FitShare))
	for _, t := range trials {
		fits := "no"
		if t.Fits {
			fits = "yes"
		}
		m := t.Sum
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%v\t%v\t%v\t%d\t%v\t%d\t%d\t%s\t\n", t.Step, t.Size, t.Idle, t.Keep,
			round(t.P99.Median), round(t.P99.Judged), round(t.P99.Worst), t.P99.Missed(o.target), round(o.target-t.P99.Judged),
			m.Opened, m.TimedOut+m.Refused+m.DialErrors, fits)
	}
	tw.Flush()
	fmt.Fprintf(&b, "(p99 of each run; median, %s and worst over the seeds; missed: seeds over the target; margin: target less the %s; opened and failed: seed %d's run)\n\n",
		pct(engine.FitShare), pct(engine.FitShare), s.Seed)
	if !ok {
		fmt.Fprintf(&b, "no Size up to %d keeps the p99 wait within %v on %s seeds (at %d: p99 %v on the %s seed, %v at worst); raise -max-size or look at the dial and hold times\n",
			o.maxSize, o.target, share, o.maxSize, round(best.P99.Judged), pct(engine.FitShare), round(best.P99.Worst))
	} else {
		fmt.Fprintf(&b, "suggest: Size %d, Idle %d, Keep %v\n", best.Size, best.Idle, best.Keep)
		if rec == nil && len(s.Bursts) > 0 {
			fmt.Fprintf(&b, "sized for the load above, bursts included (at its height %s a second); for %s a second throughout, -scenario steady\n",
				num(peakRate(s)), num(s.Rate))
		}
		fmt.Fprintf(&b, "p99 wait over %d seeds: median %v, %s %v, worst %v; margin to the target %v: %v at the %s (%v at worst); missed on %d of %d seeds\n",
			o.seeds, round(best.P99.Median), pct(engine.FitShare), round(best.P99.Judged), round(best.P99.Worst), o.target,
			round(o.target-best.P99.Judged), pct(engine.FitShare), round(o.target-best.P99.Worst), best.P99.Missed(o.target), o.seeds)
		fmt.Fprintf(&b, "this answer rests on %d seeds (%s); -seeds changes how many\n", o.seeds, seedRange(s.Seed, o.seeds))
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	if o.svg == "" && o.html == "" {
		return nil
	}
	fig := searchFigure(s, rec != nil, trials, best, ok, o)
	if o.svg != "" {
		if err := writeFile(fsys, o.svg, fig.WriteSVG); err != nil {
			return err
		}
	}
	if o.html != "" {
		return writeFile(fsys, o.html, func(w io.Writer) error { return page(w, fig, b.String(), nil, nil) })
	}
	return nil
}

func pct(share float64) string { return fmt.Sprintf("%gth pct", share*100) }

func seedRange(first uint64, n int) string {
	if n == 1 {
		return fmt.Sprintf("seed %d", first)
	}
	return fmt.Sprintf("seeds %d to %d", first, first+uint64(n)-1)
}

// page writes one self-contained HTML page: the title and text, the
// summary, the chart inline (bare of what the page says itself) and the
// per-second tables of runs. Nothing is fetched from anywhere.
func page(w io.Writer, fig *plot.Figure, summary string, runs []*engine.Result, labels []string) error {
	// The page writes the title, the text and the summary itself; the
	// chart inside it is bare of them, so nothing is said twice.
	bare := *fig
	bare.Bare = true
	var svg bytes.Buffer
	if err := bare.WriteSVG(&svg); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>")
	b.WriteString(html.EscapeString(fig.Title))
	b.WriteString("</title>\n<style>body{font-family:sans-serif;margin:1em 2em;color:#222}svg{max-width:100%;height:auto}" +
		"table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}" +
		"th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}pre{background:#f7f7f7;padding:.5em}</style>\n</head><body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(fig.Title))
	for _, t := range fig.Text {
		fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(t))
	}
	b.WriteString("<h2>Summary</h2>\n<pre>")
	b.WriteString(html.EscapeString(summary))
	b.WriteString("</pre>\n<h2>Chart</h2>\n")
	b.Write(svg.Bytes())
	for i, r := range runs {
		fmt.Fprintf(&b, "<details><summary>%c: %s, one row a second</summary>\n<table><tr>", 'A'+i, html.EscapeString(labels[i]))
		for _, h := range []string{"sec", "arrived", "lent", "idle", "making", "queued", "Ready", "Stale", "Make", "Wait", "Later", "Shed", "opened", "retired", "p50", "p99", "max", "refusal"} {
			fmt.Fprintf(&b, "<th>%s</th>", h)
		}
		b.WriteString("</tr>\n")
		for _, x := range r.Rows {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td>", x.Sec, x.Arrived, x.Lent, x.Idle, x.Making, x.Queued)
			for k := pool.Ready; k <= pool.Shed; k++ {
				fmt.Fprintf(&b, "<td>%d</td>", x.Answers[k])
			}
			fmt.Fprintf(&b, "<td>%d</td><td>%d</td><td>%v</td><td>%v</td><td>%v</td><td>%.2f</td></tr>\n", x.Opened, x.Retired, round(x.P50), round(x.P99), round(x.Max), x.Refusal)
		}
		b.WriteString("</table></details>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// intervals prints, for each configuration run on a recording, its p99
// wait as an interval: the recording's holds resampled (engine.Resample),
// so that a what-if says how much its figure rests on the holds one
// recording happened to have.
func intervals(w io.Writer, rec *engine.Recording, ss []engine.Scenario, opts []func() engine.Options, o options) error {
	fmt.Fprintf(w, "\np99 interval   arrivals as recorded, the holds drawn again from the recorded ones in blocks of %v of callers, %d times (-resamples):\n", resampleBlock, o.resamples)
	for i, s := range ss {
		iv, err := engine.Resample(s, rec, s.Hold, opts[i], o.resamples, o.level, resampleBlock, nil)
		if err != nil {
			return fmt.Errorf("-resamples: %w", err)
		}
		name := ""
		if len(ss) > 1 {
			name = fmt.Sprintf("%c: ", 'A'+i)
		}
		fmt.Fprintf(w, "               %sp99 %v with the holds as recorded; %s of the resampled runs %v to %v\n",
			name, round(iv.Point), pctOf(o.level), round(iv.Lo), round(iv.Hi))
	}
	fmt.Fprintln(w, "               (the holds' luck, and stalls like the recording's landing elsewhere: a change of load is not in it)")
	return nil
}

// resampleBlock is how long a stretch of callers keeps its holds together
// when a replay's holds are resampled: long enough to hold a stall of the
// backend or the machine whole.
const resampleBlock = time.Second

func pctOf(share float64) string { return fmt.Sprintf("%g%%", 100*share) }
