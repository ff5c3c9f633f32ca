package redisward_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	redisward "github.com/wardpool/wardpool/drivers/redis"
	"github.com/wardpool/wardpool/ward"
	"github.com/wardpool/wardpool/ward/shared"
)

// A pool of at most eight connections with a breaker in front of the
// server's dials, used through its commands, its *redis.Client, and a loan.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := redisward.ParseURL("redis://127.0.0.1:6379/0?pool_size=8")
	if err != nil {
		log.Fatal(err)
	}
	cfg.Ward.Breaker = ward.NewBreaker(ward.DefaultSre, time.Now())
	cfg.LeakAfter = time.Minute
	p, err := redisward.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	// One command on whichever connection is free.
	if err := p.Do(ctx, "SET", "greeting", "hello").Err(); err != nil {
		log.Fatal(err)
	}
	// Code written for go-redis takes the pool as a redis.Cmdable.
	var rdb redis.Cmdable = p.Client()
	v, err := rdb.Get(ctx, "greeting").Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v)

	// Several commands on one connection.
	l, err := p.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release()
	id, err := l.Client().ClientID(ctx).Result()
	fmt.Println(id > 0, err)
}

// Replicas of a service share one circuit breaker through a Store on the
// same Redis: each process builds the same breaker over its own pool.
func ExampleNewStore() {
	ctx := context.Background()
	cfg, err := redisward.ParseURL("redis://127.0.0.1:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	p, err := redisward.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	link := shared.Link{Store: redisward.NewStore(p, "myservice:"), Timeout: 50 * time.Millisecond}
	b := shared.NewBreaker(link, "payments-api", shared.DefaultBreaker)
	call, ok, err := b.Allow(ctx, time.Now())
	if err != nil {
		log.Printf("breaker store: %v (this replica decided alone)", err)
	}
	if !ok {
		return // refused: the payments API is failing for every replica
	}
	if callPayments() != nil {
		_ = call.Fail(ctx, time.Now())
		return
	}
	_ = call.Pass(ctx)
}

func callPayments() error { return nil }

// Replicas of a service share one budget of connections to a database: each
// leases a slot before it dials and gives it back when the connection
// closes. A *redis.ClusterClient or a failover client works as well as a
// Pool.
func ExampleNewClientStore() {
	ctx := context.Background()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer c.Close()
	cfg := shared.DefaultBudget
	cfg.Slots = 40
	link := shared.Link{Store: redisward.NewClientStore(c, "myservice:"), Timeout: 50 * time.Millisecond}
	budget := shared.NewBudget(link, "orders-db", "host-7:pid-4242", cfg)
	defer budget.Leave(ctx)
	if ok, _ := budget.Lease(ctx); !ok {
		return // the fleet's budget is spent: wait as for a full pool
	}
	// … dial; when the connection closes:
	_ = budget.Return(ctx)
}
