package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/internal/testenv"
)

// BenchmarkPgxQueryRow runs SELECT 1 through QueryRow(...).Scan on
// drivers/pgx and on pgxpool, on the same PostgreSQL (WARDPOOL_PG_DSN) in
// the same run, at 1, 8 and 64 goroutines sharing pgxBenchConns
// connections. The two pools alternate within each goroutine count, so
// that drift in the machine or the server touches both alike.
//
// Besides ns/op (wall time over all goroutines, divided by operations) it
// reports ops/s and the 50th and 99th percentiles of the latency of single
// operations, recorded in a slice allocated before the timer starts.
//
//	WARDPOOL_TEST_PKGS=./bench/ ./scripts/test -run '^$' -bench PgxQueryRow
func BenchmarkPgxQueryRow(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	ctx := context.Background()

	wc, err := pgxward.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	wc.MaxConns = pgxBenchConns
	ward, err := pgxward.NewWithConfig(ctx, wc)
	if err != nil {
		b.Fatal(err)
	}
	defer ward.Close()

	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = pgxBenchConns
	ref, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()

	pools := []struct {
		name string
		q    pgxward.Querier
	}{{"pgxpool", ref}, {"pgxward", ward}}
	for _, p := range pools {
		warm(b, p.q)
	}
	// Which pool goes first alternates from one goroutine count to the
	// next, starting with a coin toss. (-count repeats each sub-benchmark
	// back to back; repeat whole runs of the process instead to get pairs
	// measured side by side: see README.md.)
	flip := time.Now().UnixNano()&1 == 1
	for _, g := range []int{1, 8, 64} {
		order := slices.Clone(pools)
		if flip {
			slices.Reverse(order)
		}
		flip = !flip
		for _, p := range order {
			b.Run(fmt.Sprintf("g=%d/%s", g, p.name), func(b *testing.B) {
				queryRows(b, p.q, g)
			})
		}
	}
}

// pgxBenchConns is the size of both pools.
const pgxBenchConns = 8

// warm opens every connection of q, so that no dial lands in a timed run.
func warm(b *testing.B, q pgxward.Querier) {
	var wg sync.WaitGroup
	for range pgxBenchConns * 2 {
		wg.Go(func() {
			var n int
			if err := q.QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}

// queryRows runs b.N QueryRow+Scan calls spread over g goroutines.
func queryRows(b *testing.B, q pgxward.Querier, g int) {
	ctx := context.Background()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range g {
		wg.Go(func() {
			var n int
			for {
				i := next.Add(1) - 1
				if i >= int64(len(lat)) {
					return
				}
				t0 := time.Now()
				if err := q.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if e := failed.Load(); e != nil {
		b.Fatal(*e)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Nanoseconds())/1e3, "p99-µs")
}

// Querier must cover what the benchmark calls on both pools.
var _ pgxward.Querier = (*pgxpool.Pool)(nil)
