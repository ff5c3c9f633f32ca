package pgxward

import (
	"errors"
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
