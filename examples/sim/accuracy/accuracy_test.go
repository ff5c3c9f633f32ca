package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/internal/testenv"
)

// TestAccuracy runs the harness at a small size against the PostgreSQL that
// ./scripts/test starts (skipped without one) and prints the table. It
// fails when a run loses callers, when the prediction's dials are off by
// more than one, or when a prediction of a run from its own recording
// misses p99 by more than twice the published goal (30%, or 2 ms under
// 5 ms) plus the longest wake-up or stall the run measured, in two runs
// in a row: a few seconds of arrivals on a machine shared with other
// tests are noisier than the README's full-size run. The what-if's p99 is
// printed, not held: it compares two real runs (see HoldDiff).
func TestAccuracy(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	dir := t.TempDir()
	pl := Plan{DSN: dsn, Size: 4, Hold: 10 * time.Millisecond, Seconds: 3, Loads: []float64{0.5, 0.8, 0.95},
		WhatIf: 5, WhatIfLoad: 0.8, Seed: 7, CSV: dir, Trials: 1, TrialSeconds: 2, Resamples: 50, Level: 0.9}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A p99 missed by more than a run's own noise allows is measured once
	// more before it fails: a second of another package's test on the
	// same two cores can stall a run of a few seconds beyond what its
	// wake-ups and stalls show. Everything else fails at once.
	var rep *Report
	var missed []string
	for attempt := 1; attempt <= 2; attempt++ {
		start := time.Now()
		var err error
		rep, err = Run(ctx, pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		rep.Table(&b)
		t.Logf("accuracy at a small size, attempt %d (%v):\n%s", attempt, time.Since(start).Round(time.Second), b.String())
		if len(rep.Rows) != len(pl.Loads)+2 {
			t.Fatalf("%d rows, want %d", len(rep.Rows), len(pl.Loads)+2)
		}
		if len(rep.Coverage) != len(pl.Loads) {
			t.Fatalf("coverage at %d loads, want %d", len(rep.Coverage), len(pl.Loads))
		}
		for _, c := range rep.Coverage {
			if len(c.Trials) != pl.Trials {
				t.Fatalf("load %v: %d trials, want %d", c.Load, len(c.Trials), pl.Trials)
			}
			for _, tr := range c.Trials {
				if iv := tr.Interval; len(iv.Each) != pl.Resamples || iv.Lo > iv.Hi || tr.Measured <= 0 {
					t.Errorf("load %v: interval %v to %v of %d runs, measured %v", c.Load, iv.Lo, iv.Hi, len(iv.Each), tr.Measured)
				}
			}
		}
		if !strings.Contains(b.String(), "real runs fell inside their interval") {
			t.Errorf("the report does not say the coverage:\n%s", b.String())
		}
		missed = missed[:0]
		for i, r := range rep.Rows {
			m, p := r.Measured, r.Predicted
			if m.Callers == 0 || p.Callers != m.Callers {
				t.Errorf("%s: %d callers measured, %d served in the prediction", r.Name, m.Callers, p.Callers)
			}
			if d := m.Dials - p.Dials; d < -1 || d > 1 || m.Dials > r.Size {
				t.Errorf("%s: %d dials measured, %d predicted (Size %d)", r.Name, m.Dials, p.Dials, r.Size)
			}
			if i == len(pl.Loads) {
				// The what-if compares two real runs: its p99 moves with
				// how the second run's holds differ from the first's
				// (stalls of a shared machine), which the table reports
				// beside it.
				continue
			}
			// Twice the goal, plus the longest delay the run measured
			// that no prediction sees: a waiter's wake-up after the
			// release that handed it its connection, or a stall of a
			// caller who found room (on a loaded machine, with -race,
			// tens of milliseconds).
			diff := (m.P99 - p.P99).Abs()
			allowed := max(2*time.Millisecond, time.Duration(0.30*float64(m.P99))) + max(m.HandoffMax, m.Stall)
			if diff > allowed {
				missed = append(missed, fmt.Sprintf("%s: p99 measured %v, predicted %v (allowed %v)", r.Name, m.P99, p.P99, allowed))
			}
		}
		if t.Failed() || len(missed) == 0 {
			break
		}
	}
	for _, m := range missed {
		t.Error(m)
	}
	// The loads were written as the simulator's CSV, and read back the same.
	data, err := os.ReadFile(filepath.Join(dir, "load-50.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := engine.ReadCSV(bytes.NewReader(data))
	if err != nil || len(rec.Rows) != rep.Rows[0].Measured.Callers {
		t.Fatalf("load-50.csv: %v, %d rows, want %d", err, len(rec.Rows), rep.Rows[0].Measured.Callers)
	}
}

// TestOK holds the goal's arithmetic.
func TestOK(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		m, p time.Duration
		ok   bool
	}{
		{4 * ms, 4*ms + 900*time.Microsecond, true},
		{4 * ms, 5*ms + 100*time.Microsecond, false},
		{100 * ms, 115 * ms, true},
		{100 * ms, 84 * ms, false},
	} {
		r := Row{Measured: Figures{P99: tc.m}, Predicted: Figures{P99: tc.p}}
		if r.OK() != tc.ok {
			t.Errorf("measured %v, predicted %v: OK %v, want %v", tc.m, tc.p, r.OK(), tc.ok)
		}
	}
}

// The coverage table counts the runs inside their intervals, at each load
// and in all, and holds the total to the goal of 9 in 10.
func TestCoverageTable(t *testing.T) {
	ms := time.Millisecond
	iv := func(lo, hi time.Duration) engine.Interval { return engine.Interval{Lo: lo, Hi: hi, Level: 0.9} }
	cov := []Coverage{
		{Load: 0.5, Trials: []Trial{{Interval: iv(1*ms, 3*ms), Measured: 2 * ms}, {Interval: iv(1*ms, 3*ms), Measured: 3 * ms}}},
		{Load: 0.8, Trials: []Trial{{Interval: iv(5*ms, 9*ms), Measured: 10 * ms}, {Interval: iv(5*ms, 9*ms), Measured: 5 * ms}}},
	}
	if cov[0].Inside() != 2 || cov[1].Inside() != 1 {
		t.Fatalf("inside %d and %d, want 2 and 1", cov[0].Inside(), cov[1].Inside())
	}
	var b bytes.Buffer
	coverageTable(&b, Plan{Size: 4, WhatIf: 5, Level: 0.9, Resamples: 10, Trials: 2, TrialSeconds: 2}, cov)
	for _, want := range []string{"| 50% | 2 of 2 |", "| 80% | 1 of 2 |", "10.00 ms in [5.00 ms, 9.00 ms] **out**",
		"In all 3 of 4 real runs fell inside their interval; the goal, 9 in 10, is missed."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
	cov[1].Trials[0].Measured = 7 * ms
	b.Reset()
	coverageTable(&b, Plan{Size: 4, WhatIf: 5, Level: 0.9, Resamples: 10, Trials: 2, TrialSeconds: 2}, cov)
	if !strings.Contains(b.String(), "In all 4 of 4 real runs fell inside their interval; the goal, 9 in 10, is met.") {
		t.Errorf("all inside:\n%s", b.String())
	}
}

// A trial's second run meets the same arrivals with sleeps of its own,
// of the same mean.
func TestResleepKeepsArrivals(t *testing.T) {
	a := schedule(3, 200, 20*time.Millisecond, 2)
	b := resleep(a, 9, 20*time.Millisecond)
	var sa, sb time.Duration
	differ := 0
	for i := range a {
		if a[i].at != b[i].at {
			t.Fatalf("arrival %d moved", i)
		}
		if a[i].sleep != b[i].sleep {
			differ++
		}
		sa += a[i].sleep
		sb += b[i].sleep
	}
	if differ < len(a)/2 || (sa-sb).Abs() > time.Duration(len(a))*time.Microsecond {
		t.Fatalf("%d of %d sleeps differ; totals %v and %v", differ, len(a), sa, sb)
	}
}
