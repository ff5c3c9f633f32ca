package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/examples/sim/internal/plot"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Panel titles, also the data-panel attribute a test finds series by.
const (
	panelCallers   = "Callers per second"
	panelResources = "Resources and queue at each second's end"
	panelAnswers   = "Pool answers per second"
	panelWait      = "Acquire wait of the callers served or failed that second"
	panelBreaker   = "Breaker: share of new dials refused"
	panelBackoff   = "Backoff: makes held back for"
	panelBucket    = "Bucket: tokens for makes at each second's end"
	panelShedder   = "Shedder: the CPU model at each second's end, and callers shed"
	panelLimiter   = "Limiter: concurrency limit and loans at each second's end"
)

// answerColors colours each answer of the pool, in pool.Kind order.
var answerColors = [...]string{
	pool.Ready: "#2ca02c", pool.Stale: "#8c564b", pool.Make: "#1f77b4",
	pool.Wait: "#ff7f0e", pool.Later: "#9467bd", pool.Shed: "#d62728",
}

// figure draws runs (one, or two side by side) with their labels, and a
// p99 target as a line on the wait panels when target is positive.
func figure(runs []*engine.Result, labels []string, target time.Duration) *plot.Figure {
	a := runs[0]
	s := a.Scenario
	k := bucket(len(a.Rows))
	f := &plot.Figure{
		Title:  "wardpool sim: " + s.Name,
		X0:     float64(k),
		Step:   float64(k),
		XLabel: "virtual time (s)",
	}
	if s.Note != "" {
		f.Text = append(f.Text, s.Note+".")
	}
	f.Text = append(f.Text, loadLine(a))
	if k == 1 {
		f.Text = append(f.Text, "Each point is one second: counts are of that second, gauges as they stood at its end; wait percentiles are of the acquires that ended in it.")
	} else {
		f.Text = append(f.Text, fmt.Sprintf("Each point is %d seconds: counts are their mean a second; gauges, queues, waits, refusal and backoff the most any of the %d seconds had.", k, k))
	}
	warded := false
	var more guardPanels
	for _, r := range runs {
		s := r.Scenario
		warded = warded || s.Breaker || s.Backoff
		more.bucket, more.shedder, more.limiter = more.bucket || s.Bucket, more.shedder || s.Shedder, more.limiter || s.Limiter
	}
	apart := queueApart(runs)
	for i, r := range runs {
		c := column(r, labels[i], warded, apart, more)
		if target > 0 {
			for j := range c.Panels {
				if c.Panels[j].Unit == "ms" && strings.HasPrefix(c.Panels[j].Title, "Acquire wait") {
					c.Panels[j].Rule.Y, c.Panels[j].Rule.Label = ms(target), "target p99 "+target.String()
				}
			}
		}
		f.Columns = append(f.Columns, c)
		for j, l := range footer(r) {
			lead := "   "
			if j == 0 {
				lead = string(rune('A'+i)) + ": "
			}
			f.Footer = append(f.Footer, lead+l)
		}
	}
	f.Footer = append(f.Footer, trades(runs)...)
	return f
}

// searchFigure draws a -suggest search: each trial's p99 wait over the
// seeds against the target, and the limits it tried.
func searchFigure(s engine.Scenario, replayed bool, trials []engine.Trial, best engine.Trial, ok bool, o options) *plot.Figure {
	f := &plot.Figure{
		Title:  "wardpool sim: -suggest for " + s.Name,
		X0:     1,
		Step:   1,
		XLabel: "trial, in the order run",
	}
	if s.Note != "" {
		f.Text = append(f.Text, s.Note+".")
	}
	f.Text = append(f.Text, loadLine(&engine.Result{Scenario: s, Replayed: replayed}))
	f.Text = append(f.Text, fmt.Sprintf("Each point is one configuration run on %d seeds (from %d); it fits when its p99 wait is within %v on %g%% of them.",
		o.seeds, s.Seed, o.target, engine.FitShare*100))
	c := plot.Column{Title: fmt.Sprintf("no Size up to %d fits", o.maxSize)}
	if ok {
		c.Title = fmt.Sprintf("suggest: Size %d, Idle %d, Keep %v (p99 median %v, worst %v over %d seeds)",
			best.Size, best.Idle, best.Keep, round(best.P99.Median), round(best.P99.Worst), o.seeds)
	}
	var med, judged, worst, size, idle, keep []float64
	for _, t := range trials {
		med = append(med, ms(t.P99.Median))
		judged = append(judged, ms(t.P99.Judged))
		worst = append(worst, ms(t.P99.Worst))
		size = append(size, float64(t.Size))
		idle = append(idle, float64(t.Idle))
		keep = append(keep, t.Keep.Seconds())
	}
	for i := 0; i < len(trials); {
		j := i
		for j < len(trials) && trials[j].Step == trials[i].Step {
			j++
		}
		color := map[string]string{"size": "#1f77b4", "idle": "#2ca02c", "keep": "#9467bd"}[trials[i].Step]
		if color == "" {
			color = "#7f7f7f"
		}
		c.Bands = append(c.Bands, plot.Band{From: float64(i) + 0.5, To: float64(j) + 0.5, Label: trials[i].Step + " search", Color: color})
		i = j
	}
	wait := plot.Panel{Title: "p99 acquire wait of each trial, over the seeds", Unit: "ms", Log: true, Series: []plot.Series{
		{Name: "median", Color: "#2ca02c", Values: med},
		{Name: fmt.Sprintf("%g%% of seeds within", engine.FitShare*100), Color: "#ff7f0e", Values: judged},
		{Name: "worst seed", Color: "#d62728", Dash: true, Values: worst},
	}}
	wait.Rule.Y, wait.Rule.Label = ms(o.target), "target "+o.target.String()
	c.Panels = append(c.Panels, wait, plot.Panel{Title: "Limits tried", Unit: "count", Log: true, Series: []plot.Series{
		{Name: "Size", Color: "#1f77b4", Values: size},
		{Name: "Idle", Color: "#2ca02c", Dash: true, Values: idle},
		{Name: "Keep (s)", Color: "#9467bd", Right: true, Values: keep},
	}})
	f.Columns = []plot.Column{c}
	return f
}

// queueApart reports whether the queue is drawn against an axis of its
// own: when the deepest queue of the runs is more than twice the most
// resources (lent, idle, being made, or the Size line), one axis for both
// would press the resources into the bottom of the panel.
func queueApart(runs []*engine.Result) bool {
	queue, res := 0, 0
	for _, r := range runs {
		res = max(res, r.Scenario.Limits.Size)
		for _, x := range r.Rows {
			queue = max(queue, x.Queued, x.QueueMax)
			res = max(res, x.Lent, x.Idle, x.Making)
		}
	}
	return queue > 2*max(res, 1)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// loadLine says where the load came from and what is fixed.
func loadLine(r *engine.Result) string {
	s := r.Scenario
	to := "wait for ever"
	if s.Timeout > 0 {
		to = "give up after " + s.Timeout.String()
	}
	if r.Replayed {
		return fmt.Sprintf("Load replayed from a recording: holds as recorded (an estimate of the same work under other limits); dial %v (a parameter); callers %s.", s.Dial, to)
	}
	return fmt.Sprintf("Load: Poisson at %g callers/s, holds exponential with mean %v, dial %v; callers %s; seed %d, %d s.", s.Rate, s.Hold, s.Dial, to, s.Seed, s.Seconds)
}

// column is one run's panels.
// guardPanels says which of the newer guards' panels a figure draws: each
// one some run of it has.
type guardPanels struct{ bucket, shedder, limiter bool }

func column(r *engine.Result, title string, warded, queueApart bool, more guardPanels) plot.Column {
	s := r.Scenario
	// Long runs are drawn k seconds a point: counts as their mean a
	// second, gauges and waits as their most in the k seconds.
	k := bucket(len(r.Rows))
	n := (len(r.Rows) + k - 1) / k
	get := func(f func(*engine.Second) float64) []float64 {
		v := make([]float64, n)
		for i := range r.Rows {
			v[i/k] += f(&r.Rows[i])
		}
		if k > 1 {
			for i := range v {
				v[i] /= float64(min(k, len(r.Rows)-i*k))
			}
		}
		return v
	}
	peak := func(f func(*engine.Second) float64) []float64 {
		v := make([]float64, n)
		for i := range r.Rows {
			v[i/k] = max(v[i/k], f(&r.Rows[i]))
		}
		return v
	}
	c := plot.Column{Title: title}
	for _, b := range s.Bursts {
		c.Bands = append(c.Bands, plot.Band{From: b.From.Seconds(), To: b.To.Seconds(), Label: fmt.Sprintf("burst x%g", b.Factor), Color: "#ff7f0e"})
	}
	for _, sl := range s.Slows {
		c.Bands = append(c.Bands, plot.Band{From: sl.From.Seconds(), To: sl.To.Seconds(), Label: fmt.Sprintf("slowdown: dial to x%g, hold to x%g", sl.Dial, sl.Hold), Color: "#9467bd"})
	}
	for _, o := range s.Outages {
		c.Bands = append(c.Bands, plot.Band{From: o.From.Seconds(), To: o.To.Seconds(), Label: fmt.Sprintf("outage: %g%% of dials fail", o.Fraction*100), Color: "#d62728"})
	}
	if f := s.Failover; f > 0 {
		c.Bands = append(c.Bands, plot.Band{From: f.Seconds(), To: f.Seconds() + 1, Label: "failover: the old node answers read-only", Color: "#8c564b"})
	}
	for _, o := range s.Breaks {
		c.Bands = append(c.Bands, plot.Band{From: o.From.Seconds(), To: o.To.Seconds(), Label: fmt.Sprintf("%g%% of loans come home broken", o.Fraction*100), Color: "#bcbd22"})
	}
	c.Panels = append(c.Panels, plot.Panel{
		Title: panelCallers, Unit: "callers/s",
		Series: []plot.Series{
			{Name: "arrived", Color: "#555", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Arrived) })},
			{Name: "served", Color: "#2ca02c", Values: get(func(x *engine.Second) float64 { return float64(x.Served) })},
			{Name: "served after a wait", Color: "#ff7f0e", Values: get(func(x *engine.Second) float64 { return float64(x.Waited) })},
			{Name: "failed (timeout, shed, dial error)", Color: "#d62728", Values: get(func(x *engine.Second) float64 { return float64(x.TimedOut + x.Refused + x.DialErrors) })},
			{Name: "dial outlived its caller", Color: "#9467bd", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Orphans) })},
		},
	})
	res := plot.Panel{
		Title: panelResources, Unit: "count",
		Series: []plot.Series{
			{Name: "lent", Color: "#1f77b4", Values: peak(func(x *engine.Second) float64 { return float64(x.Lent) })},
			{Name: "idle", Color: "#2ca02c", Values: peak(func(x *engine.Second) float64 { return float64(x.Idle) })},
			{Name: "being made", Color: "#9467bd", Values: peak(func(x *engine.Second) float64 { return float64(x.Making) })},
			{Name: "queued callers", Color: "#d62728", Right: queueApart, Values: peak(func(x *engine.Second) float64 { return float64(x.Queued) })},
			{Name: "most queued in the second", Color: "#d62728", Dash: true, Right: queueApart, Values: peak(func(x *engine.Second) float64 { return float64(x.QueueMax) })},
		},
	}
	if s.Limits.Size > 0 {
		res.Rule.Y, res.Rule.Label = float64(s.Limits.Size), fmt.Sprintf("Size %d", s.Limits.Size)
	}
	c.Panels = append(c.Panels, res)
	ans := plot.Panel{Title: panelAnswers, Unit: "per second", Log: true}
	for k := pool.Ready; k <= pool.Shed; k++ {
		ans.Series = append(ans.Series, plot.Series{Name: k.String(), Color: answerColors[k], Values: get(func(x *engine.Second) float64 { return float64(x.Answers[k]) })})
	}
	ans.Series = append(ans.Series,
		plot.Series{Name: "opened", Color: "#17becf", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Opened) })},
		plot.Series{Name: "retired", Color: "#7f7f7f", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Retired) })},
		plot.Series{Name: "dials failed", Color: "#000", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Failed) })},
		plot.Series{Name: "dropped broken", Color: "#bcbd22", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Dropped) })},
	)
	c.Panels = append(c.Panels, ans)
	c.Panels = append(c.Panels, plot.Panel{
		Title: panelWait, Unit: "ms",
		Series: []plot.Series{
			{Name: "p50", Color: "#2ca02c", Values: peak(func(x *engine.Second) float64 { return ms(x.P50) })},
			{Name: "p99", Color: "#ff7f0e", Values: peak(func(x *engine.Second) float64 { return ms(x.P99) })},
			{Name: "max", Color: "#d62728", Values: peak(func(x *engine.Second) float64 { return ms(x.Max) })},
		},
	})
	if k > 1 {
		for i := range c.Panels {
			switch c.Panels[i].Title {
			case panelResources:
				c.Panels[i].Title = fmt.Sprintf("Resources and queue: the most in each %d s", k)
			case panelWait:
				c.Panels[i].Title = fmt.Sprintf("Acquire wait: the worst second of each %d s", k)
			case panelCallers, panelAnswers:
				c.Panels[i].Title += fmt.Sprintf(" (mean over %d s)", k)
			}
		}
	}
	if warded {
		br := plot.Panel{Title: panelBreaker, Unit: "%", Max: 100}
		bo := plot.Panel{Title: panelBackoff, Unit: "ms"}
		if s.Breaker {
			br.Series = []plot.Series{{Name: "refusal ratio", Color: "#d62728", Values: peak(func(x *engine.Second) float64 { return 100 * x.Refusal })}}
		} else {
			br.Title += " (no breaker)"
		}
		if s.Backoff {
			bo.Series = []plot.Series{{Name: "backoff left", Color: "#9467bd", Values: peak(func(x *engine.Second) float64 { return ms(x.Backoff) })}}
		} else {
			bo.Title += " (no backoff)"
		}
		c.Panels = append(c.Panels, br, bo)
	}
	// The newer guards, each its own panel when some run has it, titled
	// "(no …)" in a run without.
	if more.bucket {
		p := plot.Panel{Title: panelBucket, Unit: "tokens"}
		if s.Bucket {
			p.Series = []plot.Series{{Name: "tokens", Color: "#1f77b4", Values: get(func(x *engine.Second) float64 { return x.Tokens })},
				{Name: "makes deferred", Color: "#9467bd", Dash: true, Values: get(func(x *engine.Second) float64 { return float64(x.Guards[ward.GuardBucket]) })}}
		} else {
			p.Title += " (no bucket)"
		}
		c.Panels = append(c.Panels, p)
	}
	if more.shedder {
		p := plot.Panel{Title: panelShedder, Unit: "‰, per second"}
		if s.Shedder {
			p.Series = []plot.Series{{Name: "CPU ‰", Color: "#d62728", Values: peak(func(x *engine.Second) float64 { return float64(x.CPU) })},
				{Name: "hot at ‰", Color: "#7f7f7f", Dash: true, Values: get(func(*engine.Second) float64 { return float64(s.ShedCPU) })},
				{Name: "shed", Color: "#ff7f0e", Values: get(func(x *engine.Second) float64 { return float64(x.Guards[ward.GuardShedder]) })}}
		} else {
			p.Title += " (no shedder)"
		}
		c.Panels = append(c.Panels, p)
	}
	if more.limiter {
		p := plot.Panel{Title: panelLimiter, Unit: "leases"}
		if s.Limiter {
			p.Series = []plot.Series{{Name: "limit", Color: "#2ca02c", Values: peak(func(x *engine.Second) float64 { return float64(x.Limit) })},
				{Name: "lent", Color: "#1f77b4", Values: peak(func(x *engine.Second) float64 { return float64(x.Lent) })}}
		} else {
			p.Title += " (no limiter)"
		}
		c.Panels = append(c.Panels, p)
	}
	return c
}

// footer is a run's summary in two lines, for the chart.
func footer(r *engine.Result) []string {
	m := r.Sum
	return []string{
		fmt.Sprintf("acquire wait p50 %v, p99 %v, max %v; saturated %v, longest queue %s", round(m.P50), round(m.P99), round(m.Max), round(m.Saturated), episode(m.Longest)),
		fmt.Sprintf("opened %d (peak %d live); dials to a dead backend %d; callers %d: %d timed out, %d shed, %d dial errors",
			m.Opened, m.Peak, m.DeadDials, m.Arrived, m.TimedOut, m.Refused, m.DialErrors),
	}
}

// round shortens a duration for reading: three significant places.
func round(d time.Duration) time.Duration {
	switch a := d.Abs(); {
	case a >= time.Second:
		return d.Round(time.Millisecond)
	case a >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// maxPoints is the most points a series is drawn with; a longer run is
// drawn a bucket of seconds a point.
const maxPoints = 600

// bucket is how many seconds each point of a run of n seconds stands for.
func bucket(n int) int { return max(1, (n+maxPoints-1)/maxPoints) }
