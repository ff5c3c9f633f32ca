package bench

import (
	"context"
	"fmt"
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
// (WARDPOOL_REDIS_ADDR) in the same run, at 1, 8 and 64 goroutines sharing
// redisBenchConns connections. Both are driven through Process with a
// *redis.StringCmd built per call, so the command costs the same on both
// and what differs is the pool. The order of the two alternates between
// goroutine counts, starting with a coin toss.
//
// Besides ns/op it reports ops/s and the 50th and 99th percentiles of the
// latency of single operations.
//
//	WARDPOOL_TEST_PKGS=./bench/ ./scripts/test -run '^$' -bench RedisGet
func BenchmarkRedisGet(b *testing.B) {
	addr := testenv.RedisAddr(b)
	ctx := context.Background()
	const key = "wardpool:bench:get"

	opt := &redis.Options{Addr: addr, PoolSize: redisBenchConns}
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
	}{{"go-redis", ref}, {"redisward", ward}}
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

// redisBenchConns is the size of both pools.
const redisBenchConns = 8

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
