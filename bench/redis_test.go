package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redisward "github.com/wardpool/wardpool/drivers/redis"
	"github.com/wardpool/wardpool/internal/testenv"
)

// BenchmarkRedisGet runs GET of a short value on drivers/redis and on
// go-redis's own pool (a *redis.Client), on the same Redis
// (WARDPOOL_REDIS_ADDR) in the same run, at 1, 8 and 64 goroutines, both
// with default settings (go-redis's PoolSize of 10 per GOMAXPROCS, which
// FromOptions carries over as Limits.Size). All are driven through Process with a
// *redis.StringCmd built per call, so the command costs the same on each
// and what differs is the pool: go-redis is a *redis.Client, redisward is
// Pool.Process, and redisward.Client is the *redis.Client of Pool.Client,
// which adds go-redis's hook dispatch in front of the pool. The order
// reverses between goroutine counts, starting with a coin toss.
//
// Besides ns/op it reports ops/s and the 50th and 99th percentiles of the
// latency of single operations.
//
//	WARDPOOL_TEST_PKGS=./bench/ ./scripts/test -run '^$' -bench RedisGet
func BenchmarkRedisGet(b *testing.B) {
	addr := testenv.RedisAddr(b)
	ctx := context.Background()
	const key = "wardpool:bench:get"

	opt := &redis.Options{Addr: addr}
	ward, err := redisward.New(ctx, redisward.FromOptions(opt))
	if err != nil {
		b.Fatal(err)
	}
	defer ward.Close(ctx)
	ref := redis.NewClient(opt)
	defer ref.Close()
	if err := ref.Set(ctx, key, "value", 0).Err(); err != nil {
		b.Fatal(err)
	}

	pools := []struct {
		name string
		p    processor
	}{{"go-redis", ref}, {"redisward", ward}, {"redisward.Client", ward.Client()}}
	for _, p := range pools {
		warmRedis(b, p.p, key)
	}
	flip := time.Now().UnixNano()&1 == 1
	for _, g := range []int{1, 8, 64} {
		order := slices.Clone(pools)
		if flip {
			slices.Reverse(order)
		}
		flip = !flip
		for _, p := range order {
			b.Run(fmt.Sprintf("g=%d/%s", g, p.name), func(b *testing.B) {
				gets(b, p.p, key, g)
			})
		}
	}
}

// redisBenchConns is the size of both pools: go-redis's default PoolSize.
var redisBenchConns = 10 * runtime.GOMAXPROCS(0)

// processor is what the benchmark calls on both pools.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

var (
	_ processor = (*redis.Client)(nil)
	_ processor = (*redisward.Pool)(nil)
)

// warmRedis opens every connection of p, so that no dial lands in a timed
// run.
func warmRedis(b *testing.B, p processor, key string) {
	var wg sync.WaitGroup
	for range redisBenchConns * 4 {
		wg.Go(func() {
			ctx := context.Background()
			if err := p.Process(ctx, redis.NewStringCmd(ctx, "get", key)); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}

// gets runs b.N GETs spread over g goroutines.
func gets(b *testing.B, p processor, key string, g int) {
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
			for {
				i := next.Add(1) - 1
				if i >= int64(len(lat)) {
					return
				}
				t0 := time.Now()
				cmd := redis.NewStringCmd(ctx, "get", key)
				if err := p.Process(ctx, cmd); err != nil {
					e := err // only this copy escapes, not every GET's err
					failed.CompareAndSwap(nil, &e)
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

// BenchmarkRedisGetPaired is the comparison to read on a loaded machine: at
// each goroutine count, the three pools of BenchmarkRedisGet take turns in
// rounds of redisPairRound GETs (the order rotating round by round), g
// goroutines sharing each round, and each pool's ops/s and latency
// percentiles come from its own rounds only, so a busy second lands on all
// alike. b.N GETs go to each pool. Metrics: <pool>-ns/op (wall time of its
// rounds over b.N), <pool>-allocs/op (counted apart, see getAllocs),
// <pool>-cpu-ns/op (the CPU time, user and system, the process used during
// its rounds, over b.N: the client's cost of a GET, the server's not
// included, and far steadier than wall time on a shared machine; absent
// where the system does not report it), <pool>-ops/s, <pool>-p50-µs,
// <pool>-p99-µs, the ratios of redisward's and redisward.Client's ops/s to
// go-redis's (above 1 is better), and of their CPU time per GET
// (redisward-cpu-ratio, redisward.Client-cpu-ratio: below 1 is better).
// The ns/op and allocs/op that the testing package prints cover all three
// pools together.
//
//	WARDPOOL_TEST_PKGS=./bench/ ./scripts/test -run '^$' -bench RedisGetPaired -benchtime 30000x
func BenchmarkRedisGetPaired(b *testing.B) {
	addr := testenv.RedisAddr(b)
	ctx := context.Background()
	const key = "wardpool:bench:get"
	opt := &redis.Options{Addr: addr}
	ward, err := redisward.New(ctx, redisward.FromOptions(opt))
	if err != nil {
		b.Fatal(err)
	}
	defer ward.Close(ctx)
	ref := redis.NewClient(opt)
	defer ref.Close()
	if err := ref.Set(ctx, key, "value", 0).Err(); err != nil {
		b.Fatal(err)
	}
	pools := []struct {
		name string
		p    processor
	}{{"go-redis", ref}, {"redisward", ward}, {"redisward.Client", ward.Client()}}
	for _, p := range pools {
		warmRedis(b, p.p, key)
	}
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			lat := make([][]time.Duration, len(pools))
			for i := range lat {
				lat[i] = make([]time.Duration, b.N)
			}
			spent := make([]time.Duration, len(pools))
			cpu := make([]time.Duration, len(pools))
			b.ReportAllocs()
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; round++ {
				n := min(redisPairRound, b.N-done)
				for k := range pools {
					i := (k + round) % len(pools)
					c0, _ := processCPU()
					spent[i] += getRound(b, pools[i].p, key, g, lat[i][done:done+n])
					c1, _ := processCPU()
					cpu[i] += c1 - c0
				}
				done += n
			}
			b.StopTimer()
			ops := make([]float64, len(pools))
			for i, p := range pools {
				ops[i] = float64(b.N) / spent[i].Seconds()
				slices.Sort(lat[i])
				b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), p.name+"-ns/op")
				b.ReportMetric(getAllocs(b, p.p, key), p.name+"-allocs/op")
				if _, ok := processCPU(); ok {
					b.ReportMetric(float64(cpu[i].Nanoseconds())/float64(b.N), p.name+"-cpu-ns/op")
				}
				b.ReportMetric(ops[i], p.name+"-ops/s")
				b.ReportMetric(float64(lat[i][len(lat[i])/2].Nanoseconds())/1e3, p.name+"-p50-µs")
				b.ReportMetric(float64(lat[i][(len(lat[i])*99)/100].Nanoseconds())/1e3, p.name+"-p99-µs")
			}
			b.ReportMetric(ops[1]/ops[0], "redisward-ratio")
			b.ReportMetric(ops[2]/ops[0], "redisward.Client-ratio")
			if cpu[0] > 0 {
				b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "redisward-cpu-ratio")
				b.ReportMetric(float64(cpu[2])/float64(cpu[0]), "redisward.Client-cpu-ratio")
			}
		})
	}
}

// getAllocs returns the heap allocations of one GET on p, the
// benchmark's command included, counted by testing.AllocsPerRun outside
// the timed rounds.
func getAllocs(b *testing.B, p processor, key string) float64 {
	ctx := context.Background()
	return testing.AllocsPerRun(200, func() {
		if err := p.Process(ctx, redis.NewStringCmd(ctx, "get", key)); err != nil {
			b.Fatal(err)
		}
	})
}

// redisPairRound is how many GETs one pool runs before the next takes its
// turn.
const redisPairRound = 256

// getRound runs len(lat) GETs on p over g goroutines, recording each one's
// latency in lat, and returns the round's wall time.
func getRound(b *testing.B, p processor, key string, g int, lat []time.Duration) time.Duration {
	ctx := context.Background()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range min(g, len(lat)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(lat)) {
					return
				}
				t0 := time.Now()
				if err := p.Process(ctx, redis.NewStringCmd(ctx, "get", key)); err != nil {
					e := err // only this copy escapes, not every GET's err
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
