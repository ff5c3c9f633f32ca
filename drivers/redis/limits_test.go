package redisward

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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

// TestZeroSizeIsRefused: no pool is unbounded by omission. A Config
// without Limits.Size is refused with a clear error wrapping ErrConfig, as
// SetLimits without a Size is; FromOptions of go-redis's zero Options and
// pool.DefaultLimits are taken. (pgxward and sqlward hold the same rule.)
func TestZeroSizeIsRefused(t *testing.T) {
	ctx := context.Background()
	o := &redis.Options{Addr: "127.0.0.1:1"}
	for _, cfg := range []Config{{Options: o, Lazy: true}, {Options: o, Lazy: true, Limits: pool.Limits{Idle: 4, Keep: time.Minute}}} {
		_, err := New(ctx, cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Limits.Size is 0") || !strings.Contains(err.Error(), "FromOptions") {
			t.Errorf("New(Limits %+v) = %v, want ErrConfig saying Size is required", cfg.Limits, err)
		}
	}
	for _, cfg := range []Config{FromOptions(o), {Options: o, Limits: pool.DefaultLimits}} {
		cfg.Lazy = true
		p, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.Limits().Size < 1 {
			t.Errorf("Limits() = %+v", p.Limits())
		}
		if err := p.SetLimits(pool.Limits{}); !errors.Is(err, ErrConfig) || p.Limits() != cfg.Limits {
			t.Errorf("SetLimits(Size 0) = %v, limits now %+v", err, p.Limits())
		}
		_ = p.Close(ctx)
	}
}
