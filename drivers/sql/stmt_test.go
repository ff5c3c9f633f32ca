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

	"github.com/DATA-DOG/go-sqlmock"

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
	if s := c.Stats(); mc.dials.Load() != 1 || s.Loans != 4 {
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

// TestStmtCacheBoundsAndEvicts: the cache holds StmtCache statements; a new
// one makes room by closing the least recently used one no open statement
// holds; with all held, the new one is not kept and its Close closes it;
// a statement that fails leaves the cache and is prepared afresh; and
// StmtCache < 0 prepares on every borrow as database/sql would.
func TestStmtCacheBoundsAndEvicts(t *testing.T) {
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
	_ = exec(a) // B is now the least recently used
	cq := prep("C")
	if cn.prepared["B"] != 0 || cn.prepared["A"] != 1 || cn.prepared["C"] != 1 {
		t.Errorf("after a third statement: %v, want B closed", cn.prepared)
	}
	_ = errors.Join(a.Close(), b.Close(), cq.Close())

	// Held on a *sql.Conn: two statements open, a third is not kept.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := conn.PrepareContext(ctx, "A")
	s2, _ := conn.PrepareContext(ctx, "C")
	s3, err := conn.PrepareContext(ctx, "D")
	if err != nil {
		t.Fatal(err)
	}
	if cn.prepared["D"] != 1 || cn.prepared["A"] != 1 || cn.prepared["C"] != 1 {
		t.Errorf("cache full of held statements: %v", cn.prepared)
	}
	if err := s3.Close(); err != nil || cn.prepared["D"] != 0 {
		t.Errorf("a statement not kept is closed by its Close: %v, %v", cn.prepared, err)
	}
	_ = errors.Join(s1.Close(), s2.Close(), conn.Close())

	// A failing statement leaves the cache.
	cn.mu.Lock()
	cn.fail["A"] = errors.New("prepared statement \"A\" does not exist")
	cn.mu.Unlock()
	if err := exec(prep("A")); err == nil {
		t.Fatal("want the statement's error")
	}
	cn.mu.Lock()
	delete(cn.fail, "A")
	cn.mu.Unlock()
	before := cn.prepares
	if err := exec(prep("A")); err != nil || cn.prepares != before+1 {
		t.Errorf("after a failure: %v, %d prepares, want one more", err, cn.prepares-before)
	}
	if cn.prepared["A"] != 1 {
		t.Errorf("failed statement not closed: %v", cn.prepared)
	}

	// Closing the connection closes what the cache kept.
	if err := c.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !cn.isClosed(t, c) || cn.open() != 0 {
		t.Errorf("after close: %d statements open", cn.open())
	}

	// StmtCache < 0: every borrow prepares, every return closes.
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
