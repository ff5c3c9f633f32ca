package wardpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward/shared"
)

// Two replicas of a service share a budget of two connections to one
// backend (here over the in-memory store; in production a
// drivers/redis Store). The first takes both; the second's caller waits as
// on a full pool until its ctx ends, then is served once the first closes
// one.
func ExampleShared() {
	store := shared.NewMemStore(nil)
	replica := func(name string) (*wardpool.Keeper[int], *shared.Budget) {
		cfg := shared.DefaultBudget
		cfg.Slots = 2
		b := shared.NewBudget(shared.Link{Store: store}, "orders-db", name, cfg)
		n := 0
		k, err := wardpool.NewKeeper(wardpool.Config[int]{
			Limits: pool.Limits{Size: 10},
			Dial:   func(context.Context) (int, error) { n++; return n, nil },
			Close:  func(int) error { return nil },
			Shared: wardpool.Shared{Budget: b},
		})
		if err != nil {
			panic(err)
		}
		return k, b
	}
	a, _ := replica("a")
	b, budgetB := replica("b")
	ctx := context.Background()
	l1, _ := a.Acquire(ctx)
	l2, _ := a.Acquire(ctx)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := b.Acquire(short)
	cancel()
	fmt.Println("b while a holds both: gave up at its deadline:", errors.Is(err, context.DeadlineExceeded), "- budget waits:", b.SharedStats().BudgetWaits > 0)

	l1.Destroy() // closed: its slot goes back to the fleet
	l3, err := b.Acquire(ctx)
	fmt.Println("b after a closed one:", err, "- b holds", budgetB.Held())

	l2.Release()
	l3.Release()
	a.Close(ctx)
	b.Close(ctx)
	// Output:
	// b while a holds both: gave up at its deadline: true - budget waits: true
	// b after a closed one: <nil> - b holds 1
}
