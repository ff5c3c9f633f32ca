package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// TestGetAllocsBelowGoRedis counts the allocations of one GET through the
// pool and through go-redis's own pool on the same server: the pool's
// connections skip go-redis's look at the socket (see bare), whose raw
// connection and callback allocate on every command, so a GET must
// allocate less than on go-redis's pool whatever CheckIdle says (here:
// the default, a look at every borrow, and an hour).
func TestGetAllocsBelowGoRedis(t *testing.T) {
	ctx := context.Background()
	ref := admin(t)
	key := "wardpool:test:" + t.Name() + ":get"
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
	for _, checkIdle := range []time.Duration{0, -1, time.Hour} {
		p, _ := newPool(t, 1, func(c *Config) { c.CheckIdle = checkIdle })
		pa := testing.AllocsPerRun(200, get(p))
		t.Logf("allocations per GET: go-redis %v, pool with CheckIdle %v: %v", ra, checkIdle, pa)
		if pa >= ra {
			t.Errorf("a GET on the pool with CheckIdle %v allocates %v times, on go-redis's pool %v: want fewer", checkIdle, pa, ra)
		}
		{
			s := p.WardStats()
			if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Made: 1}, CheckFailures: 0}, wardpool.Stats{Books: pool.Books{Made: s.Made}, CheckFailures: s.CheckFailures}); diff != "" {
				t.Errorf("CheckIdle %v: the pool's one connection was not kept: %+v (-want +got):\n%s", checkIdle, s, diff)
			}
		}
	}
}
