package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
		WhatIf: 5, WhatIfLoad: 0.8, Seed: 7, CSV: dir}
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
