// Command accuracy measures how close the simulator's predictions come to
// what a real pool does. It runs a pgxward pool (a wardpool.Keeper) against
// PostgreSQL with callers arriving as a Poisson stream at several loads,
// each holding its connection for a server-side pg_sleep; records each
// caller's ask, acquire and release; gives that load to the simulator
// (examples/sim's engine, the real pool.Pool in virtual time) with the same
// limits and the measured dial; and prints predicted beside measured: p50,
// p99 and max acquire wait, time saturated, dials. Then the what-if: from
// the run at one load, it predicts the same callers at another Size, runs
// that for real, and compares.
//
// Last, how far a what-if's interval can be trusted: at each load,
// -trials times, a run at -size on fresh arrivals, the p99 at -whatif
// predicted from it as an interval (its holds resampled, -resamples runs,
// the middle -level of them), and -whatif run for real on the same
// arrivals with sleeps drawn afresh; it reports how many real runs fell
// inside their interval, at each load and in all (goal: 9 in 10).
//
//	go run ./examples/sim/accuracy -dsn postgres://… -seconds 20
//
// The DSN defaults to WARDPOOL_PG_DSN (./scripts/test starts a server and
// sets it). Everything is real time: a run lasts -seconds, and there is one
// per load and one more for the what-if; then two of -trial-seconds for
// each trial (with the defaults, 80 s and then 3 × 10 × 2 × 6 s = 6 min).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	pl := Plan{Loads: []float64{0.5, 0.8, 0.95}}
	flag.StringVar(&pl.DSN, "dsn", os.Getenv("WARDPOOL_PG_DSN"), "PostgreSQL connection URL (loopback)")
	flag.IntVar(&pl.Size, "size", 4, "the pool's MaxConns")
	flag.DurationVar(&pl.Hold, "hold", 20*time.Millisecond, "mean pg_sleep a caller holds its connection for")
	flag.Float64Var(&pl.Seconds, "seconds", 20, "seconds of arrivals per run")
	loads := flag.String("loads", "0.5,0.8,0.95", "offered loads, fractions of what -size can serve")
	flag.IntVar(&pl.WhatIf, "whatif", 5, "Size the what-if predicts and then runs (0: none)")
	flag.Float64Var(&pl.WhatIfLoad, "whatif-load", 0.8, "the load whose run the what-if starts from")
	seed := flag.Uint64("seed", 1, "seed of arrivals and sleeps")
	flag.StringVar(&pl.CSV, "csv", "", "directory to write each run's load CSV to (for go run ./examples/sim -replay)")
	flag.IntVar(&pl.Trials, "trials", 10, "what-ifs held to their real runs at each load, for the intervals' coverage (0: none)")
	flag.Float64Var(&pl.TrialSeconds, "trial-seconds", 6, "seconds of arrivals of each trial's two runs")
	flag.IntVar(&pl.Resamples, "resamples", 200, "resampled runs behind each predicted interval")
	flag.Float64Var(&pl.Level, "level", 0.9, "share of the resampled runs an interval spans")
	flag.Parse()
	pl.Seed = *seed
	if pl.DSN == "" {
		fmt.Fprintln(os.Stderr, "accuracy: no -dsn and no WARDPOOL_PG_DSN")
		os.Exit(2)
	}
	pl.Loads = nil
	for _, f := range strings.Split(*loads, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			fmt.Fprintf(os.Stderr, "accuracy: bad load %q\n", f)
			os.Exit(2)
		}
		pl.Loads = append(pl.Loads, v)
	}
	rep, err := Run(context.Background(), pl, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	rep.Table(os.Stdout)
}
