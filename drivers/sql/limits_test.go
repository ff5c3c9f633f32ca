package sqlward

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/pool"
)

// TestSetLimits resizes a connector with a connection lent: the pool keeps
// it while at the new Size, and a raised Size lets database/sql open more.
func TestSetLimits(t *testing.T) {
	db, c, mock, _ := newMock(t, one())
	mock.ExpectPing()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetLimits(pool.Limits{Size: 3, Idle: 2}); err != nil {
		t.Fatal(err)
	}
	if got := c.Limits(); got != (pool.Limits{Size: 3, Idle: 2}) {
		t.Fatalf("Limits() = %+v after SetLimits", got)
	}
	if err := c.SetLimits(pool.Limits{Idle: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("SetLimits(Idle -1) = %v, want ErrConfig", err)
	}
	_ = conn.Close()
	if s := c.WardStats(); s.Live != 1 {
		t.Fatalf("live %d after the connection came back at Size 3, want 1", s.Live)
	}
}

// TestZeroSizeIsRefused: no pool is unbounded by omission. The zero Config,
// and any without Limits.Size, is refused with a clear error wrapping
// ErrConfig, as SetLimits without a Size is; pool.DefaultLimits is taken as
// it is. (pgxward and redisward hold the same rule.)
func TestZeroSizeIsRefused(t *testing.T) {
	mc := &refusingConnector{err: errors.New("unused")}
	for _, cfg := range []Config{{}, {Name: "orders", Limits: pool.Limits{Idle: 4}}} {
		_, err := NewConnector(mc, cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Limits.Size is 0") || !strings.Contains(err.Error(), "pool.DefaultLimits") {
			t.Errorf("NewConnector(%+v) = %v, want ErrConfig saying Size is required", cfg, err)
		}
		if _, _, err := OpenDB(mc, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("OpenDB(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	db, c, err := OpenDB(mc, Config{Limits: pool.DefaultLimits})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if c.Limits() != pool.DefaultLimits {
		t.Errorf("Limits() = %+v, want pool.DefaultLimits", c.Limits())
	}
	if err := c.SetLimits(pool.Limits{Idle: 2}); !errors.Is(err, ErrConfig) || c.Limits() != pool.DefaultLimits {
		t.Errorf("SetLimits(Size 0) = %v, limits now %+v", err, c.Limits())
	}
}
