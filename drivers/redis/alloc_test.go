package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGetAllocsBelowGoRedis counts the allocations of one GET through the
// pool and through go-redis's own pool on the same server: with the
// default CheckIdle the pool's connections skip go-redis's look at the
// socket (see bare), so a GET must allocate less than on go-redis's pool,
// whose look allocates on every command. With a positive CheckIdle the
// look stays on, and a GET allocates no more than on go-redis's pool.
func TestGetAllocsBelowGoRedis(t *testing.T) {
	ctx := context.Background()
	ref := admin(t)
	p, k := newPool(t, 1, nil)
	q, _ := newPool(t, 1, func(c *Config) { c.CheckIdle = time.Hour })
	key := k + "get"
	if err := ref.Set(ctx, key, "value", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func(pr interface {
		Process(context.Context, redis.Cmder) error
	}) func() {
		return func() {
			if err := pr.Process(ctx, redis.NewStringCmd(ctx, "get", key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ra := testing.AllocsPerRun(200, get(ref))
	pa := testing.AllocsPerRun(200, get(p))
	qa := testing.AllocsPerRun(200, get(q))
	t.Logf("allocations per GET: go-redis %v, pool %v, pool with CheckIdle 1h %v", ra, pa, qa)
	if pa >= ra {
		t.Errorf("a GET on the pool allocates %v times, on go-redis's pool %v: want fewer", pa, ra)
	}
	if qa > ra {
		t.Errorf("a GET on the pool with CheckIdle allocates %v times, on go-redis's pool %v: want no more", qa, ra)
	}
	if s := p.Stats(); s.CheckFailures != 0 || s.Made != 1 {
		t.Errorf("the pool's one connection was not kept: %+v", s)
	}
}
