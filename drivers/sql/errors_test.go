package sqlward

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
)

// TestAcquireErrorSaysWhy: a query that times out waiting for the Keeper
// fails with the context's error for errors.Is, and says that the one
// connection was busy.
func TestAcquireErrorSaysWhy(t *testing.T) {
	db, c, mock, _ := newMock(t, one())
	ctx := ctxT(t)
	held, err := db.Conn(ctx) // the pool's only connection
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	mock.ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	_, err = db.QueryContext(short, "SELECT 1")
	var ae *AcquireError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
		t.Fatalf("query = %v (%T), want an *AcquireError wrapping DeadlineExceeded", err, err)
	}
	if ae.Busy != 1 || ae.Size != 1 || ae.LastDialError != nil {
		t.Errorf("%+v", ae)
	}
	if !strings.Contains(err.Error(), "1 of 1 resource busy") || !strings.HasPrefix(err.Error(), c.Name()+": ") {
		t.Errorf("message %q", err)
	}
	if s := c.WardStats(); s.Canceled != 1 {
		t.Errorf("canceled %d, want 1", s.Canceled)
	}
}

// TestAcquireErrorNamesTheLastDialError: after a dial failed, a query that
// times out waiting for the next dial (a server that no longer answers)
// says what the last dial error was (in LastDialError: not in the chain
// errors.Is walks, where a timed-out dial would read as the caller's own
// deadline).
func TestAcquireErrorNamesTheLastDialError(t *testing.T) {
	base := &failingConnector{err: errors.New("connection refused")}
	c, err := NewConnector(base, one())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); !errors.Is(err, base.err) {
		t.Fatalf("Connect = %v, want the dial's error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Connect(ctx)
	var ae *AcquireError
	if !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(ae.LastDialError, base.err) {
		t.Fatalf("Connect = %v, want an *AcquireError naming the dial error", err)
	}
	if !strings.Contains(err.Error(), "last dial failed ") {
		t.Errorf("message %q", err)
	}
}

// failingConnector is a base connector whose first Connect fails with err
// and whose later ones hang until their context ends.
type failingConnector struct {
	err   error
	calls atomic.Int32
}

func (f *failingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if f.calls.Add(1) == 1 {
		return nil, f.err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (f *failingConnector) Driver() driver.Driver { return fakeDriver{} }

// TestDialErrorsNameThePool: a base connector that cannot connect fails
// Connect, and the queries of a *sql.DB on it, with a *PoolError naming
// the pool (Config.Name), through which errors.Is still finds the base
// connector's error.
func TestDialErrorsNameThePool(t *testing.T) {
	refused := errors.New("connection refused")
	base := &refusingConnector{err: refused}
	cfg := one()
	cfg.Name = "orders"
	db, c, err := OpenDB(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	check := func(what string, err error) {
		t.Helper()
		var pe *PoolError
		if !errors.As(err, &pe) || pe.Pool != "orders" || !errors.Is(err, refused) ||
			err.Error() != "orders: sqlward: connect: connection refused" {
			t.Errorf("%s = %q (%T), want a *PoolError naming orders around the dial's error", what, err, err)
		}
	}
	_, err = c.Connect(ctx)
	check("Connect", err)
	check("PingContext", db.PingContext(ctx))
	_, err = db.QueryContext(ctx, "SELECT 1")
	check("QueryContext", err)
	_, err = db.ExecContext(ctx, "DELETE FROM t")
	check("ExecContext", err)
}

// refusingConnector is a base connector whose every Connect fails with err.
type refusingConnector struct{ err error }

func (r *refusingConnector) Connect(context.Context) (driver.Conn, error) { return nil, r.err }
func (r *refusingConnector) Driver() driver.Driver                        { return fakeDriver{} }
