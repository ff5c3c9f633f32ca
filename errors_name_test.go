package wardpool_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"go/token"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	redisward "github.com/wardpool/wardpool/drivers/redis"
	sqlward "github.com/wardpool/wardpool/drivers/sql"
	"github.com/wardpool/wardpool/internal/poolerr"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// An acquire's errors name their pool, count in the right number, and are
// not named twice by a driver that names its errors too.
func TestErrorsNameTheirPool(t *testing.T) {
	one := (&wardpool.AcquireError{Pool: "orders", Err: context.DeadlineExceeded, Size: 1, Busy: 1, Waiting: 1, Leaked: 1, Ceiling: -1}).Error()
	for _, want := range []string{"orders: wardpool: acquire gave up", "1 of 1 resource busy", "1 caller waiting", "1 loan held longer"} {
		if !strings.Contains(one, want) {
			t.Errorf("%q does not say %q", one, want)
		}
	}
	two := (&wardpool.AcquireError{Err: context.Canceled, Busy: 2, Waiting: 3, Ceiling: -1}).Error()
	if !strings.HasPrefix(two, "wardpool: ") || !strings.Contains(two, "2 resources busy, 3 callers waiting") {
		t.Errorf("unnamed, plural: %q", two)
	}
	shed := &wardpool.ShedError{Pool: "orders", Guard: ward.GuardShedder}
	if !strings.HasPrefix(shed.Error(), "orders: wardpool: shed by the shedder") || !errors.Is(shed, wardpool.ErrShed) {
		t.Errorf("shed: %q", shed.Error())
	}
	if got := poolerr.Wrap("orders", shed); got != error(shed) {
		t.Errorf("a driver named an error that names its pool again: %v", got)
	}
	if got := poolerr.Wrap("orders", wardpool.ErrClosed); !errors.Is(got, wardpool.ErrClosed) || !strings.HasPrefix(got.Error(), "orders: ") {
		t.Errorf("ErrClosed through a driver: %v", got)
	}
}

// A PoolNetError is a PoolError that is a net.Error: it says what its
// PoolError says, errors.As finds the PoolError in it, and it answers
// Timeout for the network error in its chain (false without one).
func TestPoolNetError(t *testing.T) {
	op := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	ne := &wardpool.PoolNetError{Pool: "orders", Err: fmt.Errorf("connect: %w", op)}
	var asNet net.Error = ne
	if !asNet.Timeout() {
		t.Error("Timeout of a dial that timed out = false")
	}
	var pe *wardpool.PoolError
	if !errors.As(ne, &pe) || pe.Pool != "orders" || pe.Err != ne.Err {
		t.Errorf("errors.As(*PoolNetError, **PoolError) = %v", pe)
	}
	if got, want := ne.Error(), "orders: connect: "+op.Error(); got != want || pe.Error() != want {
		t.Errorf("Error = %q, the PoolError's %q, want %q", got, pe.Error(), want)
	}
	if ne.PoolName() != "orders" || pe.PoolName() != "orders" || !errors.Is(ne, op) {
		t.Errorf("PoolName %q, %q; errors.Is the OpError %v", ne.PoolName(), pe.PoolName(), errors.Is(ne, op))
	}
	bare := &wardpool.PoolNetError{Pool: "orders", Err: errors.New("refused")}
	if bare.Timeout() || bare.Temporary() {
		t.Error("a PoolNetError with no net.Error in its chain says Timeout or Temporary")
	}
}

// Every error a driver returns, and every error in its chain, whose type
// is this module's, is of a type a user can import under the name %T
// prints: exported, in a package outside internal/. Each driver is driven
// to return its pool's errors without a server: a refused dial (a
// network error, so a *wardpool.PoolNetError), a dial that fails
// otherwise, a closed pool, and the errors of its own (a Redis command
// refused on a pooled connection, an acquire whose context ended).
func TestDriverErrorTypesAreImportable(t *testing.T) {
	refused := refusedAddr(t)
	ctx := context.Background()
	seen := map[string]map[string]bool{} // driver -> %T of the errors returned
	check := func(drv, what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s %s: no error", drv, what)
			return
		}
		if seen[drv] == nil {
			seen[drv] = map[string]bool{}
		}
		seen[drv][fmt.Sprintf("%T", err)] = true
		for _, e := range chain(err) {
			if bad := unimportable(e); bad != "" {
				t.Errorf("%s %s: %v: %%T is %T, %s", drv, what, err, e, bad)
			}
		}
	}

	// pgxward
	pc, err := pgxward.ParseConfig("postgres://app@" + refused + "/app?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	pc.Name = "orders"
	pg, err := pgxward.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pg.Acquire(ctx)
	check("pgxward", "Acquire, dial refused", err)
	_, err = pg.Exec(ctx, "SELECT 1")
	check("pgxward", "Exec, dial refused", err)
	pg.Close()
	_, err = pg.Acquire(ctx)
	check("pgxward", "Acquire after Close", err)

	// redisward
	rp, err := redisward.New(ctx, redisward.Config{
		Options: &redis.Options{Addr: refused, DialTimeout: time.Second},
		Limits:  pool.Limits{Size: 1},
		Name:    "sessions",
		Lazy:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.Acquire(ctx)
	check("redisward", "Acquire, dial refused", err)
	check("redisward", "Do, dial refused", rp.Do(ctx, "get", "k").Err())
	check("redisward", "Do SELECT", rp.Do(ctx, "select", 1).Err())
	if err := rp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = rp.Acquire(ctx)
	check("redisward", "Acquire after Close", err)
	_, err = redisward.New(ctx, redisward.Config{
		Options: &redis.Options{Addr: refused, DialTimeout: time.Second},
		Limits:  pool.Limits{Size: 1},
		Name:    "sessions",
	})
	check("redisward", "New, dial refused", err)

	// sqlward
	base := &connector{}
	sc, err := sqlward.NewConnector(base, sqlward.Config{Limits: pool.Limits{Size: 1}, Name: "reports"})
	if err != nil {
		t.Fatal(err)
	}
	base.err = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	_, err = sc.Connect(ctx)
	check("sqlward", "Connect, dial refused", err)
	base.err = errors.New("password authentication failed")
	_, err = sc.Connect(ctx)
	check("sqlward", "Connect, dial failed", err)
	base.err = nil
	held, err := sc.Connect(ctx) // the pool's only connection
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = sc.Connect(short)
	cancel()
	check("sqlward", "Connect, context ended while waiting", err)
	var ae *wardpool.AcquireError
	if !errors.As(err, &ae) {
		t.Errorf("sqlward Connect, context ended while waiting: %v (%T), want an *AcquireError in the chain", err, err)
	}
	held.Close()
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = sc.Connect(ctx)
	check("sqlward", "Connect after Close", err)

	// Each driver returned both of the types its pool's errors come in.
	for _, drv := range []string{"pgxward", "redisward", "sqlward"} {
		for _, want := range []string{"*wardpool.PoolError", "*wardpool.PoolNetError"} {
			if !seen[drv][want] {
				t.Errorf("%s never returned a %s; it returned %v", drv, want, keys(seen[drv]))
			}
		}
	}
	if !seen["redisward"]["*redisward.NotPooledError"] {
		t.Errorf("redisward never returned a *redisward.NotPooledError; it returned %v", keys(seen["redisward"]))
	}
}

// unimportable says why e's type cannot be named by a user as %T prints
// it, or "" when it can or is not this module's.
func unimportable(e error) string {
	typ := reflect.TypeOf(e)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	pkg := typ.PkgPath()
	const module = "github.com/wardpool/wardpool"
	if pkg != module && !strings.HasPrefix(pkg, module+"/") {
		return ""
	}
	if strings.Contains(pkg+"/", "/internal/") {
		return "a type of " + pkg + ", which a user cannot import"
	}
	if !token.IsExported(typ.Name()) {
		return "an unexported type of " + pkg
	}
	return ""
}

// chain returns err and every error errors.Is would visit after it.
func chain(err error) []error {
	var all []error
	for todo := []error{err}; len(todo) > 0; {
		e := todo[0]
		todo = todo[1:]
		if e == nil {
			continue
		}
		all = append(all, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			todo = append(todo, u.Unwrap())
		case interface{ Unwrap() []error }:
			todo = append(todo, u.Unwrap()...)
		}
	}
	return all
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// refusedAddr returns an address on the loopback that nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// connector is a driver.Connector whose Connect fails with err, or makes
// a connection that does nothing when err is nil. Set err only while no
// Connect runs.
type connector struct{ err error }

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	if c.err != nil {
		return nil, c.err
	}
	return nopConn{}, nil
}

func (c *connector) Driver() driver.Driver { return nil }

// nopConn is a driver.Conn that prepares nothing.
type nopConn struct{}

func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("nopConn: no statements") }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, errors.New("nopConn: no transactions") }
