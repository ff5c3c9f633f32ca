package sqlward

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/pool"
)

// TestMockPrepareOncePerConnection: a statement prepared on the *sql.DB is
// prepared once on the pool's one connection, not again on each borrow;
// its Close leaves it prepared, and the connection's Close closes it.
func TestMockPrepareOncePerConnection(t *testing.T) {
	db, c, mock, mc := newMock(t, one())
	ctx := ctxT(t)
	ep := mock.ExpectPrepare("SELECT name FROM t").WillBeClosed()
	for i := range 3 {
		ep.ExpectQuery().WithArgs(i).WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow(fmt.Sprint(i)))
	}
	stmt, err := db.PrepareContext(ctx, "SELECT name FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // three borrows: sqlmock fails a second Prepare
		var name string
		if err := stmt.QueryRowContext(ctx, i).Scan(&name); err != nil || name != fmt.Sprint(i) {
			t.Fatalf("query %d: %q, %v", i, name, err)
		}
	}
	if err := stmt.Close(); err != nil {
		t.Fatal(err)
	}
	if s := c.WardStats(); mc.dials.Load() != 1 || s.Loans != 4 {
		t.Errorf("dials %d, books %+v", mc.dials.Load(), s.Books)
	}
	if err := mock.ExpectationsWereMet(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("before the connection closed: %v, want the statement still open", err)
	}
	if err := c.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Errorf("after the connection closed: %v", err)
	}
}

// stmtConn is a driver connection that counts its prepared statements.
type stmtConn struct {
	fakeConn
	prepared map[string]int // open statements by query
	prepares int
	fail     map[string]error // a query's statements fail with this
}

func (s *stmtConn) Prepare(query string) (driver.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepares++
	s.prepared[query]++
	return &countedStmt{c: s, query: query}, nil
}

func (s *stmtConn) open() (n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.prepared {
		n += v
	}
	return n
}

type countedStmt struct {
	c      *stmtConn
	query  string
	closed bool
}

func (s *countedStmt) Close() error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.closed {
		return errors.New("closed twice")
	}
	s.closed = true
	s.c.prepared[s.query]--
	return nil
}

func (s *countedStmt) NumInput() int { return -1 }

func (s *countedStmt) Exec([]driver.Value) (driver.Result, error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.closed {
		return nil, errors.New("exec on a closed statement")
	}
	if err := s.c.fail[s.query]; err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (s *countedStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("stmtConn: no rows")
}

type stmtConnector struct {
	mu    sync.Mutex
	conns []*stmtConn
}

func (sc *stmtConnector) Connect(context.Context) (driver.Conn, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := &stmtConn{fakeConn: fakeConn{valid: true, done: make(chan struct{})}, prepared: map[string]int{}, fail: map[string]error{}}
	sc.conns = append(sc.conns, c)
	return c, nil
}

func (sc *stmtConnector) Driver() driver.Driver { return fakeDriver{} }

// TestStmtCacheBounds: the cache keeps StmtCache statements per
// connection for good; one more is prepared on each loan that uses it and
// closed when the loan ends; closing the *sql.Stmt closes nothing kept; a
// statement that fails is closed at the end of the loan and prepared
// afresh; the connection's close closes the rest; and StmtCache < 0
// prepares on every loan and closes at its end, as database/sql would.
func TestStmtCacheBounds(t *testing.T) {
	sc := &stmtConnector{}
	cfg := one()
	cfg.StmtCache = 2
	db, c, err := OpenDB(sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	exec := func(s *sql.Stmt) error { _, err := s.ExecContext(ctx); return err }
	prep := func(q string) *sql.Stmt {
		t.Helper()
		s, err := db.PrepareContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := prep("A"), prep("B")
	for range 3 {
		if err := errors.Join(exec(a), exec(b)); err != nil {
			t.Fatal(err)
		}
	}
	cn := sc.conns[0]
	if cn.prepares != 2 || cn.open() != 2 {
		t.Fatalf("two statements used three times: %d prepares, %d open", cn.prepares, cn.open())
	}
	cq := prep("C") // no room: prepared for this loan, closed at its end
	if cn.prepared["C"] != 0 || cn.prepares != 3 {
		t.Errorf("after Prepare of a third: %v, %d prepares; want C closed", cn.prepared, cn.prepares)
	}
	for range 2 {
		if err := exec(cq); err != nil {
			t.Fatal(err)
		}
	}
	if cn.prepared["C"] != 0 || cn.prepares != 5 || cn.prepared["A"] != 1 || cn.prepared["B"] != 1 {
		t.Errorf("the third used twice: %v, %d prepares; want C prepared on each loan and closed after", cn.prepared, cn.prepares)
	}
	if err := errors.Join(a.Close(), b.Close(), cq.Close()); err != nil || cn.prepared["A"] != 1 {
		t.Errorf("closing the *sql.Stmt closed a kept statement: %v, %v", cn.prepared, err)
	}

	// Within one loan (a *sql.Conn), a statement without room is prepared
	// once and closed when the loan ends.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := cn.prepares
	s1, err := conn.PrepareContext(ctx, "D")
	if err != nil {
		t.Fatal(err)
	}
	_ = errors.Join(exec(s1), exec(s1), s1.Close())
	if cn.prepares != before+1 || cn.prepared["D"] != 1 {
		t.Errorf("in one loan: %d prepares, %v; want D prepared once and open", cn.prepares-before, cn.prepared)
	}
	if err := conn.Close(); err != nil || cn.prepared["D"] != 0 {
		t.Errorf("after the loan: %v, %v; want D closed", cn.prepared, err)
	}

	// A failing statement leaves the cache, closed at the end of the loan.
	cn.mu.Lock()
	cn.fail["A"] = errors.New("prepared statement \"A\" does not exist")
	cn.mu.Unlock()
	fa := prep("A")
	if err := exec(fa); err == nil {
		t.Fatal("want the statement's error")
	}
	if cn.prepared["A"] != 0 {
		t.Errorf("failed statement not closed at the end of its loan: %v", cn.prepared)
	}
	cn.mu.Lock()
	delete(cn.fail, "A")
	cn.mu.Unlock()
	before = cn.prepares
	if err := exec(fa); err != nil || cn.prepares != before+1 || cn.prepared["A"] != 1 {
		t.Errorf("the same statement after a failure: %v, %d prepares, %v; want A prepared afresh and kept", err, cn.prepares-before, cn.prepared)
	}

	// Closing the connection closes what the cache kept.
	if err := c.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !cn.isClosed(t, c) || cn.open() != 0 {
		t.Errorf("after close: %d statements open", cn.open())
	}

	// StmtCache < 0: every loan prepares, and closes at its end.
	sc2 := &stmtConnector{}
	cfg.StmtCache = -1
	db2, _, err := OpenDB(sc2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s, err := db2.PrepareContext(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sc2.conns[0].prepares; n != 4 || sc2.conns[0].open() != 0 {
		t.Errorf("StmtCache -1: %d prepares, %d open; want 4 and 0", n, sc2.conns[0].open())
	}
}

// TestRawReachesTheDriver: (*sql.Conn).Raw hands this package's
// connection; Unwrap and Raw reach the driver's own.
func TestRawReachesTheDriver(t *testing.T) {
	fc := &fakeConnector{}
	db, _, err := OpenDB(fc, one())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		if _, ok := dc.(*fakeConn); ok {
			return errors.New("Raw handed the driver's connection: Unwrap is no longer needed")
		}
		if got := Unwrap(dc); got != any(fc.last()) {
			return fmt.Errorf("Unwrap = %T, want the driver's *fakeConn", got)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	err = Raw(conn, func(dc any) error {
		if dc != any(fc.last()) {
			return fmt.Errorf("Raw handed %T, want the driver's *fakeConn", dc)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if v := Unwrap(42); v != 42 {
		t.Errorf("Unwrap(42) = %v", v)
	}
}

// TestErrorsNameThePool: a refused Connect names the pool, given or by
// default, and errors.Is still finds the sentinel behind it.
func TestErrorsNameThePool(t *testing.T) {
	cfg := one()
	cfg.Name = "orders"
	db, c, err := OpenDB(&fakeConnector{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "orders" {
		t.Errorf("Name() = %q", c.Name())
	}
	_ = db.Close()
	_, err = c.Connect(context.Background())
	var pe *PoolError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &pe) || pe.Pool != "orders" || err.Error() != "orders: wardpool: pool closed" {
		t.Errorf("Connect after Close = %q (%T)", err, err)
	}
	_, c2, err := OpenDB(&fakeConnector{}, Config{Limits: pool.Limits{Size: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !strings.HasPrefix(c2.Name(), "sqlward-") {
		t.Errorf("default name %q", c2.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c2.Connect(ctx); err != context.Canceled && !strings.HasPrefix(err.Error(), c2.Name()+": ") {
		t.Errorf("Connect with a done ctx = %v", err)
	}
}

// TestIdleHandleWaitsInTheKeeper: database/sql keeps its handles idle, and
// an idle handle borrows from the Keeper as database/sql takes it up again
// (its ResetSession). When the one connection is out, a query on the idle
// handle waits there, bounded by its context, and fails with the Keeper's
// *AcquireError, not a bare context error.
func TestIdleHandleWaitsInTheKeeper(t *testing.T) {
	noLeftovers(t)
	fc := &fakeConnector{}
	db, c, err := OpenDB(fc, one())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	a, err := db.Conn(ctx) // handle A, holding the one connection
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *sql.Conn)
	go func() {
		b, err := db.Conn(ctx) // handle B: waits in the Keeper
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	for c.WardStats().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := a.Close(); err != nil { // A goes idle; B gets the connection
		t.Fatal(err)
	}
	b := <-got
	if b == nil {
		t.FailNow()
	}
	defer b.Close()
	if s := db.Stats(); s.Idle != 1 || s.InUse != 1 {
		t.Fatalf("database/sql: %d idle handles, %d in use; want 1 and 1", s.Idle, s.InUse)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = db.ExecContext(short, "X") // on the idle handle A
	var ae *AcquireError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) || ae.Pool == "" || !strings.HasPrefix(err.Error(), ae.Pool+": ") || ae.Busy != 1 {
		t.Fatalf("Exec on an idle handle with the connection out = %v (%T), want the pool's *AcquireError", err, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "X"); err != nil {
		t.Errorf("after the connection came back: %v", err)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 1, Busy: 0}, pool.Books{Made: s.Made, Busy: s.Busy}); diff != "" {
			t.Errorf("books (-want +got):\n%s", diff)
		}
	}
	honest(t, c)
}
