package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	pools := pgxBenchPools(b)
	// Which pool goes first alternates from one goroutine count to the
	// next, starting with a coin toss. (-count repeats each sub-benchmark
	// back to back; repeat whole runs of the process instead to get pairs
	// measured side by side: see README.md.)
	flip := rand.IntN(2) == 1
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
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	elapsed := runRound(b, q, g, lat)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Nanoseconds())/1e3, "p99-µs")
}

// Querier must cover what the benchmark calls on both pools.
var _ pgxward.Querier = (*pgxpool.Pool)(nil)

// benchPool is one of the two pools under comparison.
type benchPool struct {
	name string
	q    pgxward.Querier
}

// pgxBenchPools opens both pools on the test server, warm, closed when the
// benchmark ends: pgxpool first, then drivers/pgx.
func pgxBenchPools(b *testing.B) []benchPool {
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
	b.Cleanup(ward.Close)

	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = pgxBenchConns
	ref, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ref.Close)

	pools := []benchPool{{"pgxpool", ref}, {"pgxward", ward}}
	for _, p := range pools {
		warm(b, p.q)
	}
	return pools
}

// BenchmarkPgxQueryRowPaired is BenchmarkPgxQueryRow measured so that a
// busy or noisy machine cannot favour either pool: within one run, the two
// pools take turns in rounds of pgxPairRound operations each (g goroutines
// sharing the round's operations), pgxpool first in odd rounds and second
// in even ones, and each pool's ops/s and latency percentiles are computed
// over its own rounds only. b.N operations go to each pool. ns/op is the
// wall time of both pools' operations divided by 2*b.N; read the named
// metrics, and ratio (pgxward's ops/s over pgxpool's).
func BenchmarkPgxQueryRowPaired(b *testing.B) {
	pools := pgxBenchPools(b)
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			lat := [2][]time.Duration{make([]time.Duration, b.N), make([]time.Duration, b.N)}
			var spent [2]time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; round++ {
				n := min(pgxPairRound, b.N-done)
				for k := range 2 {
					i := k
					if round%2 == 1 {
						i = 1 - k
					}
					spent[i] += runRound(b, pools[i].q, g, lat[i][done:done+n])
				}
				done += n
			}
			b.StopTimer()
			var ops [2]float64
			for i, p := range pools {
				ops[i] = float64(b.N) / spent[i].Seconds()
				slices.Sort(lat[i])
				b.ReportMetric(ops[i], p.name+"-ops/s")
				b.ReportMetric(float64(lat[i][len(lat[i])/2].Nanoseconds())/1e3, p.name+"-p50-µs")
				b.ReportMetric(float64(lat[i][(len(lat[i])*99)/100].Nanoseconds())/1e3, p.name+"-p99-µs")
			}
			b.ReportMetric(ops[1]/ops[0], "ratio")
		})
	}
}

// pgxPairRound is how many operations one pool runs before the other takes
// its turn.
const pgxPairRound = 256

// runRound runs len(lat) QueryRow+Scan calls on q over g goroutines,
// recording each one's latency in lat, and returns the round's wall time.
func runRound(b *testing.B, q pgxward.Querier, g int, lat []time.Duration) time.Duration {
	return timedRound(b, g, lat, func(ctx context.Context, _ int, n *int) error {
		return q.QueryRow(ctx, "SELECT 1").Scan(n)
	})
}

// timedRound runs call len(lat) times, the i-th with i, over g
// goroutines, recording each call's latency in lat, and returns the
// round's wall time; the first error fails the benchmark. n is a scan
// target of the calling goroutine's own, so that no call allocates one.
func timedRound(b *testing.B, g int, lat []time.Duration, call func(ctx context.Context, i int, n *int) error) time.Duration {
	ctx := context.Background()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range min(g, len(lat)) {
		wg.Go(func() {
			var n int
			for {
				i := next.Add(1) - 1
				if i >= int64(len(lat)) {
					return
				}
				t0 := time.Now()
				if err := call(ctx, int(i), &n); err != nil {
					e := err // only this copy escapes, not every query's err
					failed.CompareAndSwap(nil, &e)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if e := failed.Load(); e != nil {
		b.Fatal(*e)
	}
	return d
}

// BenchmarkPgxAcquireRelease measures the pools' own cost, without a round
// trip to the server: Acquire and Release of an idle connection, from 1
// goroutine and from 8 (through b.SetParallelism on GOMAXPROCS), for both
// pools on the same server in the same run.
func BenchmarkPgxAcquireRelease(b *testing.B) {
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
	warm(b, ward)
	warm(b, ref)

	pools := []struct {
		name string
		f    func() error
	}{
		{"pgxpool", func() error {
			c, err := ref.Acquire(ctx)
			if err == nil {
				c.Release()
			}
			return err
		}},
		{"pgxward", func() error {
			c, err := ward.Acquire(ctx)
			if err == nil {
				c.Release()
			}
			return err
		}},
	}
	for _, par := range []int{0, 1} {
		for _, p := range pools {
			if par == 0 {
				b.Run("g=1/"+p.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := p.f(); err != nil {
							b.Fatal(err)
						}
					}
				})
				continue
			}
			b.Run("parallel/"+p.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := p.f(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
