package pgxward

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// TestSetLimits lowers MaxConns on a pool with connections lent and idle:
// the idle ones close at once, a lent one above the new MaxConns closes on
// release, and Stat reports the new MaxConns.
func TestSetLimits(t *testing.T) {
	p := newPool(t, nil) // MaxConns 4
	ctx := ctxT(t)
	var cs []*Conn
	for range 3 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	cs[0].Release()
	if err := p.SetLimits(pool.Limits{Size: 1, Idle: 1, Keep: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if s := p.Stat(); s.MaxConns() != 1 || s.TotalConns() != 2 || s.IdleConns() != 0 {
		t.Fatalf("after SetLimits(Size 1): max %d total %d idle %d, want 1, 2, 0", s.MaxConns(), s.TotalConns(), s.IdleConns())
	}
	cs[1].Release() // above Size: closed
	cs[2].Release() // at Size: kept
	if s := p.Stat(); s.TotalConns() != 1 || s.IdleConns() != 1 {
		t.Fatalf("after the releases: total %d idle %d, want 1, 1", s.TotalConns(), s.IdleConns())
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("query after SetLimits: %v", err)
	}
	if err := p.SetLimits(pool.Limits{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("SetLimits(Size 0) = %v, want ErrConfig", err)
	}
}

// TestZeroSizeIsRefused: no pool is unbounded by omission, as in pgxpool. A
// Config built by hand (the zero Config) and one whose MaxConns is 0 are
// refused with a clear error wrapping ErrConfig, as SetLimits without a
// Size is; ParseConfig's default, DefaultMaxConns, is taken. (redisward
// and sqlward hold the same rule.) No PostgreSQL is needed.
func TestZeroSizeIsRefused(t *testing.T) {
	ctx := context.Background()
	if _, err := NewWithConfig(ctx, &Config{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ParseConfig") {
		t.Errorf("NewWithConfig(&Config{}) = %v, want ErrConfig naming ParseConfig", err)
	}
	c, err := ParseConfig("postgres://app@127.0.0.1:1/app?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	zero := c.Copy()
	zero.MaxConns = 0
	if _, err := NewWithConfig(ctx, zero); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MaxConns is 0") {
		t.Errorf("NewWithConfig(MaxConns 0) = %v, want ErrConfig saying MaxConns is required", err)
	}
	p, err := NewWithConfig(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.Limits().Size; got != int(DefaultMaxConns()) {
		t.Errorf("Size %d, want DefaultMaxConns %d", got, DefaultMaxConns())
	}
	if err := p.SetLimits(pool.Limits{Idle: 2}); !errors.Is(err, ErrConfig) || p.Limits().Size != int(DefaultMaxConns()) {
		t.Errorf("SetLimits(Size 0) = %v, Size now %d", err, p.Limits().Size)
	}
}
