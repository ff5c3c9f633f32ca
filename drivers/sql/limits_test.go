package sqlward

import (
	"context"
	"errors"
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
	if s := c.Stats(); s.Live != 1 {
		t.Fatalf("live %d after the connection came back at Size 3, want 1", s.Live)
	}
}
