package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool"
)

// Plan is what one accuracy run does: a real pool (pgxward, so the Keeper)
// against PostgreSQL, callers arriving as a Poisson stream, each holding a
// connection for a server-side pg_sleep of exponential length; then the
// simulator is given the recorded load and predicts the same run.
type Plan struct {
	DSN     string
	Size    int           // the pool's MaxConns
	Hold    time.Duration // the mean pg_sleep
	Seconds float64       // how long callers arrive, per run
	Loads   []float64     // offered load, as a fraction of what Size can serve
	// WhatIf is the Size the what-if predicts from the run at WhatIfLoad
	// and then runs for real with the same arrivals and sleeps; 0: none.
	WhatIf     int
	WhatIfLoad float64
	Seed       uint64
	// CSV, when set, is a directory each run's load is written to, as the
	// simulator's load CSV (go run ./examples/sim -replay FILE replays it).
	CSV string
	// Trials is how many what-ifs from Size to WhatIf are held to their
	// real runs at each load, each on arrivals of its own over
	// TrialSeconds, its p99 predicted as an interval of the middle Level
	// of Resamples resampled runs (see coverage). 0: none.
	Trials       int
	TrialSeconds float64
	Resamples    int
	Level        float64
}

// Figures are one run's acquire waits, saturation and dials.
type Figures struct {
	Callers        int
	P50, P99, Max  time.Duration
	Saturated      time.Duration
	Dials          int
	MeanHold       time.Duration // measured: acquired to released
	SaturatedShare float64       // Saturated over the run's length
	// Handoff99 and HandoffMax are, measured, how long after the release
	// that handed a queued caller its connection the caller's goroutine
	// had it: the scheduler's wake-up. The pool lent it at the release, so
	// the prediction counts it in the loan (see lendings), and it is in
	// the measured waits, not in the predicted ones.
	Handoff99, HandoffMax time.Duration
	// Stall is the longest wait of a caller who found room when it asked
	// (fewer than Size others in the system), less the dial: time the
	// process or the machine did not run it, which no prediction sees.
	Stall time.Duration
}

// Row is one line of the table: a run, measured and predicted.
type Row struct {
	Name      string
	Size      int
	Load      float64 // offered, of Size's capacity (measured holds)
	Measured  Figures
	Predicted Figures
}

// OK reports whether the prediction of p99 meets the goal: within 15%, or
// within 1 ms where the measured p99 is under 5 ms.
func (r Row) OK() bool {
	m, p := r.Measured.P99, r.Predicted.P99
	d := (m - p).Abs()
	if m < 5*time.Millisecond {
		return d <= time.Millisecond
	}
	return float64(d) <= 0.15*float64(m)
}

// Report is the whole table, with what the runs were calibrated with.
type Report struct {
	Plan Plan
	Dial time.Duration // median pgx connect, the simulator's dial
	RTT  time.Duration // mean cost of a hold beyond its sleep, Size at once
	Rows []Row
	// HoldDiff compares the what-if's two real runs caller by caller (the
	// same arrival and the same sleep): the p99 and the largest difference
	// of their holds. The what-if replays the first run's holds; where the
	// second run's differ, so do its waits.
	HoldDiffP99, HoldDiffMax time.Duration
	// Coverage is how often the real run fell inside the predicted
	// interval, at each load (Plan.Trials).
	Coverage []Coverage
}

// arrival is one caller of a schedule.
type arrival struct {
	at    time.Duration // since the start
	sleep time.Duration // its pg_sleep
}

// schedule draws a Poisson stream at rate callers a second over seconds,
// each with an exponential sleep of mean hold. The stream is conditioned on
// its count (round(rate × seconds) arrivals, their instants uniform and
// sorted: a Poisson process given its count) and the sleeps are scaled to
// their mean exactly, so that a short run offers the load it is named for
// rather than one a few percent off, to which waits near saturation are
// very sensitive.
func schedule(seed uint64, rate float64, hold time.Duration, seconds float64) []arrival {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := int(math.Round(rate * seconds))
	out := make([]arrival, n)
	draws := make([]float64, n)
	var sum float64
	for i := range out {
		out[i].at = time.Duration(rng.Float64() * seconds * float64(time.Second))
		draws[i] = rng.ExpFloat64()
		sum += draws[i]
	}
	slices.SortFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	for i := range out {
		// Rounded to the microsecond: pg_sleep's own resolution.
		out[i].sleep = time.Duration(draws[i] * float64(n) / sum * float64(hold)).Round(time.Microsecond)
	}
	return out
}

// calibrate measures the median connect (the simulator's dial) and what a
// hold costs on top of its sleep when size connections sleep at once, as
// in a busy run: the mean of pg_sleep(hold) less hold (the round trip, the
// server's timer slack, and whatever the machine adds). Size over the
// sleep plus that is what the pool can serve.
func calibrate(ctx context.Context, dsn string, size int, hold time.Duration) (dial, over time.Duration, err error) {
	var dials []time.Duration
	conns := make([]*pgx.Conn, 0, max(size, 7))
	defer func() {
		for _, c := range conns {
			_ = c.Close(ctx)
		}
	}()
	for range max(size, 7) {
		t0 := time.Now()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, 0, err
		}
		dials = append(dials, time.Since(t0))
		conns = append(conns, c)
	}
	const rounds = 20
	extra := make([]time.Duration, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() {
			for range rounds {
				t0 := time.Now()
				if _, err := conns[i].Exec(ctx, "SELECT pg_sleep($1)", hold.Seconds()); err != nil {
					errs[i] = err
					return
				}
				extra[i] += time.Since(t0) - hold
			}
		})
	}
	wg.Wait()
	var sum time.Duration
	for i := range size {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		sum += extra[i]
	}
	slices.Sort(dials)
	return dials[len(dials)/2], sum / time.Duration(size*rounds), nil
}

// caller is one caller's record, in nanoseconds since the start.
type caller struct {
	asked, acquired, released int64
	pid                       uint32 // the connection's backend
	// lent is when the pool lent the connection: at acquired, or, for a
	// caller the Keeper handed it to at another's release, at that
	// release (see lendings); the caller's goroutine wakes up after.
	lent int64
	err  error
}

// lendings sets each caller's lent: a caller that asked before the
// previous loan of its connection ended, and had it after, was queued
// when that loan's release handed it the connection, so the pool lent it
// then, and the time until the caller's goroutine ran (the scheduler's
// wake-up) is part of its loan as the pool counts it. It returns those
// wake-ups, sorted.
func lendings(calls []caller) []time.Duration {
	idx := make([]int, len(calls))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ca, cb := &calls[a], &calls[b]
		if ca.pid != cb.pid {
			return int(ca.pid) - int(cb.pid)
		}
		return int(ca.acquired - cb.acquired)
	})
	var wake []time.Duration
	for k, i := range idx {
		c := &calls[i]
		c.lent = c.acquired
		if k == 0 {
			continue
		}
		prev := &calls[idx[k-1]]
		if prev.pid == c.pid && c.asked < prev.released && prev.released <= c.acquired {
			c.lent = prev.released
			wake = append(wake, time.Duration(c.acquired-prev.released))
		}
	}
	slices.Sort(wake)
	return wake
}

// runReal runs the schedule against a fresh pgxward pool of size, and
// returns each caller's instants, the dials, and the time callers were
// queued (see queued).
func runReal(ctx context.Context, dsn string, size int, sched []arrival) ([]caller, int, time.Duration, error) {
	cfg, err := pgxward.ParseConfig(dsn)
	if err != nil {
		return nil, 0, 0, err
	}
	cfg.MaxConns = int32(size)
	p, err := pgxward.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, 0, 0, err
	}
	defer p.Close()

	calls := make([]caller, len(sched))
	var wg sync.WaitGroup
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }

	for i, a := range sched {
		if d := a.at - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &calls[i]
			c.asked = since()
			conn, err := p.Acquire(ctx)
			c.acquired = since()
			if err != nil {
				c.err = err
				return
			}
			c.pid = conn.Conn().PgConn().PID()
			_, c.err = conn.Exec(ctx, "SELECT pg_sleep($1)", a.sleep.Seconds())
			c.released = since()
			conn.Release()
		}()
	}
	wg.Wait()
	for i := range calls {
		if calls[i].err != nil {
			return nil, 0, 0, fmt.Errorf("caller %d: %w", i, calls[i].err)
		}
	}
	lendings(calls)
	return calls, int(p.WardStats().Made + p.WardStats().Failed), queued(calls, size), nil
}

// stall is the longest wait of a caller who found room when it asked,
// less dial: see Figures.Stall.
func stall(calls []caller, size int, dial time.Duration) time.Duration {
	asks := make([]int64, len(calls))
	rels := make([]int64, len(calls))
	for i, c := range calls {
		asks[i], rels[i] = c.asked, c.released
	}
	slices.Sort(asks)
	slices.Sort(rels)
	var most time.Duration
	for _, c := range calls {
		in, _ := slices.BinarySearch(asks, c.asked+1)
		out, _ := slices.BinarySearch(rels, c.asked+1)
		if in-1-out < size {
			most = max(most, time.Duration(c.acquired-c.asked)-dial)
		}
	}
	return most
}

// queued is how long callers were queued, as the simulator counts it: the
// union of the waits of the callers who found size others in the system
// (asked and not yet released) when they asked. Arrivals are served in
// order, so those and only those waited for a release rather than taking
// an idle connection or dialing a new one.
func queued(calls []caller, size int) time.Duration {
	asks := make([]int64, len(calls))
	rels := make([]int64, len(calls))
	for i, c := range calls {
		asks[i], rels[i] = c.asked, c.released
	}
	slices.Sort(asks)
	slices.Sort(rels)
	var spans [][2]int64
	for _, c := range calls {
		// Others in the system at c.asked: asked before it (or at it, but
		// not c itself), not yet released.
		in, _ := slices.BinarySearch(asks, c.asked+1)
		out, _ := slices.BinarySearch(rels, c.asked+1)
		if in-1-out >= size {
			spans = append(spans, [2]int64{c.asked, c.acquired})
		}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	var total, end int64
	for _, sp := range spans {
		from := max(sp[0], end)
		if sp[1] > from {
			total += sp[1] - from
		}
		end = max(end, sp[1])
	}
	return time.Duration(total)
}

// measured computes the figures of a real run.
func measured(calls []caller, dials int, saturated time.Duration) Figures {
	waits := make([]time.Duration, len(calls))
	var held, end time.Duration
	for i, c := range calls {
		waits[i] = time.Duration(c.acquired - c.asked)
		held += time.Duration(c.released - c.acquired)
		end = max(end, time.Duration(c.released))
	}
	slices.Sort(waits)
	f := Figures{Callers: len(calls), Dials: dials, Saturated: saturated}
	if len(waits) > 0 {
		f.P50, f.P99, f.Max = rank(waits, 50), rank(waits, 99), waits[len(waits)-1]
		f.MeanHold = held / time.Duration(len(calls))
	}
	if end > 0 {
		f.SaturatedShare = float64(saturated) / float64(end)
	}
	return f
}

// writeCSV writes calls as a load CSV named after the run into dir; nothing
// when dir is empty.
func writeCSV(dir, name string, calls []caller) error {
	if dir == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("# wardpool accuracy run " + name + ": times in seconds since the start\nasked,acquired,released\n")
	sec := func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 9, 64) }
	for _, c := range calls {
		b.WriteString(sec(c.asked) + "," + sec(c.lent) + "," + sec(c.released) + "\n")
	}
	file := strings.NewReplacer(" ", "-", "%", "", "→", "-to-").Replace(name) + ".csv"
	return os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644)
}

// spread is the p99 and the largest of sorted d; zeros when empty.
func spread(d []time.Duration) (p99, most time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	return rank(d, 99), d[len(d)-1]
}

// holdDiff is the p99 and the largest difference between the holds of two
// runs of one schedule, caller by caller.
func holdDiff(a, b []caller) (p99, most time.Duration) {
	d := make([]time.Duration, 0, len(a))
	for i := range min(len(a), len(b)) {
		ha, hb := a[i].released-a[i].acquired, b[i].released-b[i].acquired
		d = append(d, time.Duration(hb-ha).Abs())
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return rank(d, 99), d[len(d)-1]
}

// offered is the load calls offered a pool of size over seconds: the
// holds they measured, over what size connections can hold in that time.
func offered(calls []caller, size int, seconds float64) float64 {
	var held time.Duration
	for _, c := range calls {
		held += time.Duration(c.released - c.acquired)
	}
	return held.Seconds() / (float64(size) * seconds)
}

// rank is the nearest-rank percentile p of sorted w, as the simulator
// computes it.
func rank(w []time.Duration, p int) time.Duration {
	k := max((len(w)*p+99)/100, 1)
	return w[k-1]
}

// recording is calls as the simulator's load: each loan as the pool
// counts it, from when it lent the connection (for a queued caller, the
// release that handed it over) to the release.
func recording(calls []caller) *engine.Recording {
	rec := &engine.Recording{Rows: make([]engine.Row, len(calls))}
	for i, c := range calls {
		rec.Rows[i] = engine.Row{Line: i + 1, Asked: c.asked, Acquired: c.lent, Release: c.released}
	}
	slices.SortStableFunc(rec.Rows, func(a, b engine.Row) int { return int(a.Asked - b.Asked) })
	return rec
}

// scenario is the simulator's setting for a replay with limits lim and
// dial, of arrivals over seconds.
func scenario(lim pool.Limits, dial, hold time.Duration, seconds float64) engine.Scenario {
	return engine.Scenario{
		Name:    "accuracy",
		Seconds: int(math.Ceil(seconds)) + 30, // room for the queue to drain
		Seed:    1,
		Rate:    1,
		Hold:    hold,
		Dial:    dial,
		Limits:  lim,
	}
}

// predict asks the simulator for the run of calls (their asks and measured
// holds) with limits lim and dial.
func predict(calls []caller, lim pool.Limits, dial, hold time.Duration, seconds float64) (Figures, error) {
	rec := recording(calls)
	s := scenario(lim, dial, hold, seconds)
	res, err := engine.Run(s, engine.Options{Load: rec.Load(hold)})
	if err != nil {
		return Figures{}, err
	}
	f := Figures{Callers: res.Sum.Served, P50: res.Sum.P50, P99: res.Sum.P99, Max: res.Sum.Max,
		Saturated: res.Sum.Saturated, Dials: res.Sum.Dials}
	return f, nil
}

// Run runs the plan: one real run and its prediction per load, then the
// what-if. progress, when not nil, hears of each run as it ends.
func Run(ctx context.Context, pl Plan, progress io.Writer) (*Report, error) {
	dial, rtt, err := calibrate(ctx, pl.DSN, pl.Size, pl.Hold)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	rep := &Report{Plan: pl, Dial: dial, RTT: rtt}
	// What Size can serve: Size over the mean hold, sleep plus round trip.
	capacity := func(size int) float64 { return float64(size) / (pl.Hold + rtt).Seconds() }
	lim := func(size int) pool.Limits {
		cfg, err := pgxward.ParseConfig(pl.DSN)
		if err != nil {
			return pool.Limits{Size: size, Idle: size}
		}
		return pool.Limits{Size: size, Idle: size, Keep: cfg.MaxConnIdleTime, Life: cfg.MaxConnLifetime}
	}
	one := func(name string, size int, load float64, sched []arrival) (Row, []caller, error) {
		calls, dials, sat, err := runReal(ctx, pl.DSN, size, sched)
		if err != nil {
			return Row{}, nil, err
		}
		m := measured(calls, dials, sat)
		m.Handoff99, m.HandoffMax = spread(lendings(calls))
		m.Stall = stall(calls, size, dial)
		if err := writeCSV(pl.CSV, name, calls); err != nil {
			return Row{}, nil, err
		}
		p, err := predict(calls, lim(size), dial, pl.Hold, pl.Seconds)
		if err != nil {
			return Row{}, nil, err
		}
		r := Row{Name: name, Size: size, Load: offered(calls, size, pl.Seconds), Measured: m, Predicted: p}
		if progress != nil {
			fmt.Fprintf(progress, "%s: measured p99 %v, predicted %v\n", name, m.P99, p.P99)
		}
		return r, calls, nil
	}
	var whatIfFrom []caller
	var whatIfSched []arrival
	for i, load := range pl.Loads {
		sched := schedule(pl.Seed+uint64(i), load*capacity(pl.Size), pl.Hold, pl.Seconds)
		r, calls, err := one(fmt.Sprintf("load %.0f%%", 100*load), pl.Size, load, sched)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, r)
		if load == pl.WhatIfLoad {
			whatIfFrom, whatIfSched = calls, sched
		}
	}
	if pl.WhatIf > 0 && whatIfFrom != nil {
		// Predicted from the run at Size, with the same callers: the
		// planner's question "what if Size were WhatIf?".
		p, err := predict(whatIfFrom, lim(pl.WhatIf), dial, pl.Hold, pl.Seconds)
		if err != nil {
			return nil, err
		}
		// Then the same schedule run for real at WhatIf.
		calls, dials, sat, err := runReal(ctx, pl.DSN, pl.WhatIf, whatIfSched)
		if err != nil {
			return nil, err
		}
		m := measured(calls, dials, sat)
		m.Handoff99, m.HandoffMax = spread(lendings(calls))
		m.Stall = stall(calls, pl.WhatIf, dial)
		r := Row{Name: fmt.Sprintf("what-if %d→%d", pl.Size, pl.WhatIf), Size: pl.WhatIf, Load: offered(calls, pl.WhatIf, pl.Seconds),
			Measured: m, Predicted: p}
		rep.Rows = append(rep.Rows, r)
		rep.HoldDiffP99, rep.HoldDiffMax = holdDiff(whatIfFrom, calls)
		// And the what-if run predicted from its own recording: what of
		// the miss is the model, and what is the holds the two runs had.
		self, err := predict(calls, lim(pl.WhatIf), dial, pl.Hold, pl.Seconds)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, Row{Name: fmt.Sprintf("size %d, own load", pl.WhatIf), Size: pl.WhatIf, Load: r.Load,
			Measured: r.Measured, Predicted: self})
		if progress != nil {
			fmt.Fprintf(progress, "%s: measured p99 %v, predicted %v\n", r.Name, r.Measured.P99, p.P99)
		}
	}
	if pl.Trials > 0 && pl.WhatIf > 0 {
		if rep.Coverage, err = coverage(ctx, pl, dial, capacity, lim, progress); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// Table writes the report as a Markdown table.
func (rep *Report) Table(w io.Writer) {
	pl := rep.Plan
	fmt.Fprintf(w, "Size %d, mean pg_sleep %v, %.0f s of arrivals a run; dial %v and hold overhead %v (measured: median connect; mean beyond the sleep, Size sleeping at once)\n\n",
		pl.Size, pl.Hold, pl.Seconds, rep.Dial.Round(10*time.Microsecond), rep.RTT.Round(time.Microsecond))
	fmt.Fprintln(w, "| run | Size | offered load | mean hold | callers | p50 wait meas / pred | p99 wait meas / pred | max wait meas / pred | saturated meas / pred | dials meas / pred | p99 goal |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rep.Rows {
		m, p := r.Measured, r.Predicted
		ok := "met"
		if !r.OK() {
			ok = "missed"
		}
		fmt.Fprintf(w, "| %s | %d | %.0f%% | %s | %d | %s / %s | %s / %s | %s / %s | %s / %s | %d / %d | %s |\n",
			r.Name, r.Size, 100*r.Load, ms(m.MeanHold), m.Callers, ms(m.P50), ms(p.P50), ms(m.P99), ms(p.P99), ms(m.Max), ms(p.Max),
			ms(m.Saturated), ms(p.Saturated), m.Dials, p.Dials, ok)
	}
	fmt.Fprintf(w, "\nWake-ups, measured (a queued caller's acquire after the release that handed it its connection; in the loan as the pool counts it, not in the predicted wait), p99 / max:")
	for _, r := range rep.Rows {
		if strings.HasSuffix(r.Name, "own load") {
			continue // the what-if's run again
		}
		fmt.Fprintf(w, " %s %s / %s;", r.Name, ms(r.Measured.Handoff99), ms(r.Measured.HandoffMax))
	}
	fmt.Fprintf(w, "\n\nStalls, measured (the longest wait of a caller who found room, less the dial; 0 in the simulator):")
	for _, r := range rep.Rows {
		if !strings.HasSuffix(r.Name, "own load") {
			fmt.Fprintf(w, " %s %s;", r.Name, ms(r.Measured.Stall))
		}
	}
	fmt.Fprintln(w)
	if rep.HoldDiffMax > 0 {
		fmt.Fprintf(w, "\nThe what-if's two real runs, caller by caller (same arrival, same sleep): holds differ by %s at p99, %s at most.\n",
			ms(rep.HoldDiffP99), ms(rep.HoldDiffMax))
	}
	coverageTable(w, pl, rep.Coverage)
}

// ms renders d in milliseconds, two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
