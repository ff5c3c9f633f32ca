package sqlward

import (
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// TestMockClassesCarriedByContext: Config.Classes reach the Keeper, and a
// query's class travels in its context: an unknown one fails the query
// with a *wardpool.ClassError, a known one is counted in its class's books.
func TestMockClassesCarriedByContext(t *testing.T) {
	cfg := one()
	cfg.Classes = []pool.Class{{Name: "interactive", Reserve: 1}}
	db, c, mock, _ := newMock(t, cfg)
	ctx := ctxT(t)
	mock.ExpectExec("INSERT INTO t").WillReturnResult(sqlmock.NewResult(1, 1))
	if _, err := db.ExecContext(wardpool.WithClass(ctx, "interactive"), "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(wardpool.WithClass(ctx, "bulk"), "INSERT INTO t VALUES (2)")
	var ce *wardpool.ClassError
	if !errors.As(err, &ce) || ce.Class != "bulk" {
		t.Fatalf("a query of an unknown class: %v, want a *wardpool.ClassError", err)
	}
	s := c.WardStats()
	if len(s.Classes) != 2 || s.Classes[0].Name != "interactive" || s.Classes[0].Taken != 1 {
		t.Fatalf("class books: %+v", s.Classes)
	}
	honest(t, c)
}
