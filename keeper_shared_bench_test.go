package wardpool

import (
	"context"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward/shared"
)

// BenchmarkKeeperSharedReuse is an acquire and release of an idle resource
// on a Keeper without shared guards and on one with a budget and a shared
// breaker (over the in-memory store): a loan that reuses a resource asks
// the store nothing, so the two should cost the same.
func BenchmarkKeeperSharedReuse(b *testing.B) {
	for _, withShared := range []bool{false, true} {
		name := "plain"
		if withShared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config[*res]{Limits: pool.Limits{Size: 4}}
			if withShared {
				store := shared.NewMemStore(nil)
				bc := shared.DefaultBudget
				bc.Slots = 4
				link := shared.Link{Store: store, Timeout: time.Minute}
				cfg.Shared = Shared{Budget: shared.NewBudget(link, "db", "bench", bc), Breaker: shared.NewBreaker(link, "db", shared.DefaultBreaker)}
			}
			d := &dialer{}
			k, _ := newTestKeeper(b, d, cfg)
			ctx := context.Background()
			l, err := k.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			l.Release()
			b.ReportAllocs()
			for b.Loop() {
				l, err := k.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}
