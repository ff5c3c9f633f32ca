package shared_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wardpool/wardpool/ward/shared"
)

// Two replicas of a service spend one quota of two calls a minute to a
// provider: the count lives in the store they share (Redis, in production:
// drivers/redis has the Store).
func ExamplePeriod() {
	link := shared.Link{Store: shared.NewMemStore(nil)}
	a := shared.NewPeriod(link, "provider", 2, time.Minute, 1)
	b := shared.NewPeriod(link, "provider", 2, time.Minute, 1)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 15, 0, time.UTC)
	for _, p := range []*shared.Period{a, b, a} {
		q, err := p.Take(ctx, now)
		fmt.Println(q, err)
	}
	fmt.Println("resets in", b.Next(now))
	// Output:
	// under <nil>
	// hit <nil>
	// over <nil>
	// resets in 45s
}

// Two replicas share a budget of three connections: the first borrows the
// whole budget while the second asks for nothing; when the second asks, it
// is refused and the first learns it owes one slot back.
func ExampleBudget() {
	link := shared.Link{Store: shared.NewMemStore(nil)}
	cfg := shared.DefaultBudget
	cfg.Slots = 3
	a := shared.NewBudget(link, "orders-db", "replica-a", cfg)
	b := shared.NewBudget(link, "orders-db", "replica-b", cfg)
	ctx := context.Background()
	a.Renew(ctx)
	b.Renew(ctx)
	for range 3 {
		ok, _ := a.Lease(ctx)
		fmt.Print(ok, " ")
	}
	ok, _ := b.Lease(ctx)
	fmt.Println(ok)
	a.Renew(ctx)
	fmt.Println("a owes", a.Owed())
	a.Return(ctx)
	ok, _ = b.Lease(ctx)
	fmt.Println("b after a gave back:", ok)
	// Output:
	// true true true false
	// a owes 2
	// b after a gave back: true
}
