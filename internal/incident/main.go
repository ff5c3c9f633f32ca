//go:build unix

// Command incident measures how far past their deadline callers return
// while PostgreSQL misbehaves, with pgxward and pgxpool side by side in the
// same run, against the same server at the same moments.
//
// It starts its own throw-away PostgreSQL on 127.0.0.1 (initdb and pg_ctl
// from Debian's postgresql package, as ./scripts/test installs it; as root
// the server runs as the postgres user) in a temporary directory, which it
// removes at the end. Each pool gets -workers goroutines calling QueryRow
// with a -timeout context on at most -conns connections, in two scenarios:
//
//   - freeze: every process of the server is stopped with SIGSTOP for
//     -freeze, then let go on, and the load runs -after longer;
//   - restart: the server is stopped (pg_ctl -m fast, or -stop immediate
//     for a crash) and started again, and the load runs -after longer once
//     it is back.
//
// For each pool and scenario it prints the calls, how many failed, how many
// returned more than 20 ms or a second past their deadline, and the 99th
// percentile and the largest overrun (how far past the deadline a call
// returned), then the ratio of the largest overruns, pgxward to pgxpool.
// The run is bounded: a few seconds per scenario and round, and a call that
// has not returned 30 s after the end is reported as stuck.
//
// Run it from the module root (it needs no test server; it is not part of
// ./scripts/test):
//
//	go run ./internal/incident
//	go run ./internal/incident -rounds 3 -freeze 3s -workers 32 -conns 8 -timeout 200ms
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
)

// config is the harness's shape, from the command line.
type config struct {
	workers int
	conns   int
	timeout time.Duration
	freeze  time.Duration
	after   time.Duration
	rounds  int
	pause   time.Duration
	stop    string
}

func main() {
	var c config
	flag.IntVar(&c.workers, "workers", 32, "goroutines calling QueryRow, per pool")
	flag.IntVar(&c.conns, "conns", 8, "MaxConns of each pool")
	flag.DurationVar(&c.timeout, "timeout", 200*time.Millisecond, "each call's context timeout")
	flag.DurationVar(&c.freeze, "freeze", 3*time.Second, "how long the server stays stopped (SIGSTOP)")
	flag.DurationVar(&c.after, "after", 2*time.Second, "how long the load goes on after the server is back")
	flag.IntVar(&c.rounds, "rounds", 1, "how many times to run both scenarios")
	flag.DurationVar(&c.pause, "pause", 5*time.Millisecond, "each goroutine's pause between calls")
	flag.StringVar(&c.stop, "stop", "fast", "how the restart stops the server: fast or immediate (pg_ctl -m)")
	flag.Parse()
	if c.stop != "fast" && c.stop != "immediate" {
		fmt.Fprintln(os.Stderr, "incident: -stop is fast or immediate")
		os.Exit(2)
	}
	if c.workers < 1 || c.conns < 1 || c.timeout <= 0 || c.freeze <= 0 || c.after <= 0 || c.rounds < 1 || c.rounds > 20 || c.pause < 0 {
		fmt.Fprintln(os.Stderr, "incident: want -workers, -conns >= 1; -timeout, -freeze, -after > 0; 1 <= -rounds <= 20; -pause >= 0")
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "incident:", err)
		os.Exit(1)
	}
}

// querier is what both pools offer that the load uses.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv, err := startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.stop()
	// An interrupted run still lets the server go on and stops it: a
	// frozen server left behind would hold its port and memory.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			srv.stop()
			os.Exit(130)
		}
	}()
	version, _ := srv.run(ctx, "postgres", "--version")

	wcfg, err := pgxward.ParseConfig(srv.dsn())
	if err != nil {
		return err
	}
	wcfg.MaxConns = int32(c.conns)
	ward, err := pgxward.NewWithConfig(ctx, wcfg)
	if err != nil {
		return err
	}
	defer closeWithin(ward.Close)
	pcfg, err := pgxpool.ParseConfig(srv.dsn())
	if err != nil {
		return err
	}
	pcfg.MaxConns = int32(c.conns)
	peer, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer closeWithin(peer.Close)
	for _, p := range []querier{ward, peer} {
		var n int
		if err := p.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
			return fmt.Errorf("first query: %w", err)
		}
	}

	fmt.Printf("incident: %d goroutines per pool, QueryRow with a %v context, %d connections, pause %v; %s",
		c.workers, c.timeout, c.conns, c.pause, version)
	fmt.Printf("freeze: SIGSTOP for %v, then %v more; restart: pg_ctl -m %s stop and start, then %v more\n",
		c.freeze, c.after, c.stop, c.after)
	for round := 1; round <= c.rounds; round++ {
		rows, err := runRound(ctx, c, srv, ward, peer)
		if err != nil {
			return err
		}
		fmt.Printf("\nround %d\n", round)
		writeTable(os.Stdout, rows)
	}
	return nil
}

// The scenario a call belongs to is the one running when it started.
const (
	phaseWarm = iota
	phaseFreeze
	phaseRestart
	phases
)

var phaseNames = [phases]string{"warm", "freeze", "restart"}

// runRound runs the load on both pools through one freeze and one restart.
func runRound(ctx context.Context, c config, srv *server, ward, peer querier) ([]row, error) {
	var phase atomic.Int32
	var stop atomic.Bool
	pools := []struct {
		name string
		q    querier
	}{{"pgxward", ward}, {"pgxpool", peer}}
	// Each goroutine keeps its own samples, by phase, and reports a call
	// in flight in running so that a stuck one is still counted.
	type worker struct {
		mu      sync.Mutex
		samples [phases][]sample
		start   time.Time
		phase   int32
		busy    bool
	}
	workers := make([][]*worker, len(pools))
	var wg sync.WaitGroup
	for i, p := range pools {
		for range c.workers {
			w := &worker{}
			workers[i] = append(workers[i], w)
			wg.Go(func() {
				var n int
				for !stop.Load() {
					ph := phase.Load()
					cctx, cancel := context.WithTimeout(context.Background(), c.timeout)
					t0 := time.Now()
					w.mu.Lock()
					w.start, w.phase, w.busy = t0, ph, true
					w.mu.Unlock()
					err := p.q.QueryRow(cctx, "SELECT 1").Scan(&n)
					took := time.Since(t0)
					cancel()
					w.mu.Lock()
					w.samples[ph] = append(w.samples[ph], sample{took: took, ok: err == nil, done: true})
					w.busy = false
					w.mu.Unlock()
					if c.pause > 0 {
						time.Sleep(c.pause)
					}
				}
			})
		}
	}

	fail := func(err error) ([]row, error) {
		_ = srv.thaw()
		stop.Store(true)
		return nil, err
	}
	time.Sleep(time.Second) // warm: every connection open
	phase.Store(phaseFreeze)
	if err := srv.freeze(); err != nil {
		return fail(err)
	}
	time.Sleep(c.freeze)
	if err := srv.thaw(); err != nil {
		return fail(err)
	}
	time.Sleep(c.after)
	phase.Store(phaseRestart)
	if err := srv.restart(ctx, c.stop); err != nil {
		return fail(err)
	}
	time.Sleep(c.after)
	stop.Store(true)

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}

	var rows []row
	for _, ph := range []int32{phaseFreeze, phaseRestart} {
		for i, p := range pools {
			var all []sample
			for _, w := range workers[i] {
				w.mu.Lock()
				all = append(all, w.samples[ph]...)
				if w.busy && w.phase == ph {
					all = append(all, sample{took: time.Since(w.start)})
				}
				w.mu.Unlock()
			}
			rows = append(rows, row{scenario: phaseNames[ph], pool: p.name, s: summarize(all, c.timeout)})
		}
	}
	return rows, nil
}

// closeWithin closes a pool, giving up after 10 s: a call stuck on a
// frozen connection would hold Close for ever, and the process is about to
// end anyway.
func closeWithin(closePool func()) {
	done := make(chan struct{})
	go func() { closePool(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
