package redisward

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/pool"
)

func TestSetLimits(t *testing.T) {
	ctx := context.Background()
	p, err := New(ctx, Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 4, Idle: 4}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if err := p.SetLimits(pool.Limits{Size: 2, Idle: 1}); err != nil {
		t.Fatal(err)
	}
	if got := p.Limits(); got != (pool.Limits{Size: 2, Idle: 1}) {
		t.Fatalf("Limits() = %+v after SetLimits", got)
	}
	if err := p.SetLimits(pool.Limits{Size: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("SetLimits(Size -1) = %v, want ErrConfig", err)
	}
}
