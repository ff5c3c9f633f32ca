package sqlward

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestRetirementOnAFakeClock: Limits.Keep closes a connection idle too long
// and Limits.Life one alive too long, however busy, with the Keeper on a
// clock the test moves.
func TestRetirementOnAFakeClock(t *testing.T) {
	clock := clocktest.New(time.Unix(1_000_000, 0))
	fc := &fakeConnector{}
	db, c, err := OpenDB(fc, Config{
		Limits: pool.Limits{Size: 2, Idle: 2, Keep: time.Minute, Life: time.Hour},
		Clock:  clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	exec := func() {
		t.Helper()
		if _, err := db.ExecContext(ctx, "X"); err != nil {
			t.Fatal(err)
		}
	}
	exec()
	first := fc.last()
	clock.Advance(59 * time.Second)
	exec()
	if fc.last() != first {
		t.Fatal("a connection idle for less than Keep was replaced")
	}
	clock.Advance(61 * time.Second) // the eviction timer runs
	if s := c.WardStats(); !first.isClosed(t, c) || s.IdleRetired != 1 || s.Live != 0 {
		t.Errorf("past Keep: closed %v, %+v", first.isClosed(t, c), s.Books)
	}
	exec()
	second := fc.last()
	if second == first {
		t.Fatal("the retired connection was lent again")
	}
	// Used every 30 s, never idle past Keep: Life still retires it.
	for range 121 {
		clock.Advance(30 * time.Second)
		exec()
	}
	if s := c.WardStats(); !second.isClosed(t, c) || s.LifeRetired != 1 || s.IdleRetired != 1 {
		t.Errorf("past Life: closed %v, %+v", second.isClosed(t, c), s.Books)
	}
	if len(fc.conns) != 3 {
		t.Errorf("%d connections made, want 3", len(fc.conns))
	}
	honest(t, c)
}
