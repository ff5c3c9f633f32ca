package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/ward/shared"
)

// The costs of the shared guards on Redis, beside go-redis's own GET in the
// same run: a lease and its return (two scripts, the budget's cost per dial
// and close), a closed shared breaker's look before a dial (one GET), and
// one step of the two-window counter (one script). Compare them as ratios
// to BenchmarkSharedPeerGet; absolute times depend on the machine.

func benchClient(b *testing.B) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(b), PoolSize: 4})
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkSharedPeerGet(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, "wardpool:bench:none").Err(); err != nil && err != redis.Nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSharedBudgetLeaseReturn(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	cfg := shared.BudgetConfig{Slots: 1 << 20, TTL: time.Minute, Borrow: true}
	bud := shared.NewBudget(shared.Link{Store: NewClientStore(c, "wardpool:bench:"), Timeout: time.Second}, "db", "bench", cfg)
	b.Cleanup(func() { bud.Leave(ctx) })
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := bud.Lease(ctx); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if err := bud.Return(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSharedBreakerAllowClosed(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	br := shared.NewBreaker(shared.Link{Store: NewClientStore(c, "wardpool:bench:"), Timeout: time.Second}, "closed", shared.DefaultBreaker)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := br.Allow(ctx, now); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkSharedCounterTake(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	ctr := shared.NewCounter(shared.Link{Store: NewClientStore(c, "wardpool:bench:"), Timeout: time.Second}, "rate", 1<<40, time.Minute, 0)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := ctr.Take(ctx, now); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
