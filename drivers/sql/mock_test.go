package sqlward

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// noLeftovers checks, at the end of the test, that no goroutine the test
// started is still running.
func noLeftovers(t *testing.T) {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// honest fails the test unless the books add up with nothing lent. A dial
// still in flight (one a caller gave up waiting for) counts as busy.
func honest(t *testing.T, c *Connector) {
	t.Helper()
	s := c.WardStats()
	if diff := cmp.Diff(pool.Books{Busy: s.Dialing, Live: s.Idle + s.Dialing}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
		t.Errorf("books with nothing lent: %+v, %d dialing (-want +got):\n%s", s.Books, s.Dialing, diff)
	}
}

// mockConnector opens sqlmock connections: the driver boundary under test.
type mockConnector struct {
	drv   driver.Driver
	dsn   string
	dials atomic.Int32
	fail  atomic.Pointer[error]
}

func (m *mockConnector) Connect(context.Context) (driver.Conn, error) {
	m.dials.Add(1)
	if e := m.fail.Load(); e != nil {
		return nil, *e
	}
	return m.drv.Open(m.dsn)
}

func (m *mockConnector) Driver() driver.Driver { return m.drv }

var mockSeq atomic.Int32

// newMock returns a sqlmock and a *sql.DB on a Connector in front of it.
// sqlmock hands out one connection object for all opens, which suits the
// one-connection pools these tests use.
func newMock(t *testing.T, cfg Config) (*sql.DB, *Connector, sqlmock.Sqlmock, *mockConnector) {
	t.Helper()
	dsn := fmt.Sprintf("sqlward_mock_%d", mockSeq.Add(1))
	mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.MonitorPingsOption(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mdb.Close() })
	mc := &mockConnector{drv: mdb.Driver(), dsn: dsn}
	db, c, err := OpenDB(mc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, c, mock, mc
}

func one() Config { return Config{Limits: pool.Limits{Size: 1}} }

func TestMockQueriesGoThroughTheKeeper(t *testing.T) {
	db, c, mock, mc := newMock(t, one())
	ctx := ctxT(t)
	mock.ExpectExec("INSERT INTO t").WithArgs(1, "a").WillReturnResult(sqlmock.NewResult(1, 1))
	mock.ExpectQuery("SELECT name FROM t").WithArgs(1).
		WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow("a"))
	mock.ExpectBegin()
	mock.ExpectExec("DELETE FROM t").WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectCommit()

	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", 1, "a"); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.QueryRowContext(ctx, "SELECT name FROM t WHERE id = ?", 1).Scan(&name); err != nil || name != "a" {
		t.Fatal(name, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM t"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
	// One dial, reused for all three; database/sql keeps nothing idle.
	s := c.WardStats()
	if mc.dials.Load() != 1 || s.Made != 1 || s.Loans != 3 || s.Reused != 2 || s.Idle != 1 {
		t.Errorf("dials %d, books %+v", mc.dials.Load(), s.Books)
	}
	// database/sql keeps its handle idle; the handle holds no connection
	// between uses (the Keeper has it idle).
	if db.Stats().Idle != 1 || c.WardStats().Busy != 0 {
		t.Errorf("database/sql holds %d idle handles, the Keeper %d busy connections", db.Stats().Idle, c.WardStats().Busy)
	}
	honest(t, c)
}

// TestMockBadConnDestroyed: a connection the driver calls broken is
// destroyed, and database/sql's retry gets a new one.
func TestMockBadConnDestroyed(t *testing.T) {
	db, c, mock, mc := newMock(t, one())
	ctx := ctxT(t)
	mock.ExpectExec("UPDATE a").WillReturnError(driver.ErrBadConn)
	mock.ExpectExec("UPDATE a").WillReturnResult(sqlmock.NewResult(0, 1))
	if _, err := db.ExecContext(ctx, "UPDATE a"); err != nil {
		t.Fatalf("database/sql's retry failed: %v", err)
	}
	s := c.WardStats()
	if mc.dials.Load() != 2 || s.Dropped != 1 || s.Made != 2 {
		t.Errorf("dials %d, books %+v", mc.dials.Load(), s.Books)
	}
	// The bad connection is closed on a closer goroutine, and sqlmock's
	// Close reads the expectations the test is about to add: let it end.
	clocktest.Eventually(t, "the bad connection's close", func() bool { s := c.WardStats(); return s.Closing == 0 && s.Closed >= 1 })

	// Through a prepared statement too. (On a *sql.Conn: a statement
	// prepared on the *sql.DB is prepared again on every borrow, see the
	// package doc.)
	mock.ExpectPrepare("UPDATE b").ExpectExec().WillReturnError(driver.ErrBadConn)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := conn.PrepareContext(ctx, "UPDATE b")
	if err != nil {
		t.Fatal(err)
	}
	// database/sql retries, and finds the *sql.Conn closed.
	if _, err := stmt.ExecContext(ctx); !errors.Is(err, sql.ErrConnDone) {
		t.Fatalf("bad statement exec = %v", err)
	}
	_ = stmt.Close()
	_ = conn.Close()
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
	if s := c.WardStats(); s.Dropped != 2 {
		t.Errorf("after a bad statement: %+v", s.Books)
	}
	honest(t, c)
}

// TestMockErrorsPassThrough: an ordinary error reaches the caller as the
// driver made it, and the connection is kept.
func TestMockErrorsPassThrough(t *testing.T) {
	db, c, mock, _ := newMock(t, one())
	ctx := ctxT(t)
	boom := errors.New("duplicate key")
	mock.ExpectExec("INSERT").WillReturnError(boom)
	mock.ExpectQuery("SELECT").WillReturnError(boom)
	if _, err := db.ExecContext(ctx, "INSERT"); !errors.Is(err, boom) {
		t.Errorf("Exec = %v", err)
	}
	if _, err := db.QueryContext(ctx, "SELECT"); !errors.Is(err, boom) {
		t.Errorf("Query = %v", err)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Dropped: 0, Made: 1}, pool.Books{Dropped: s.Dropped, Made: s.Made}); diff != "" {
			t.Errorf("an ordinary error cost the connection (-want +got):\n%s", diff)
		}
	}
	honest(t, c)
}

// TestMockPingOnBorrow: a connection that fails its ping on borrow is
// replaced without the caller noticing.
func TestMockPingOnBorrow(t *testing.T) {
	cfg := one()
	cfg.PingIdle = -1 // ping on every borrow
	db, c, mock, mc := newMock(t, cfg)
	ctx := ctxT(t)
	mock.ExpectExec("A").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectPing().WillReturnError(errors.New("gone"))
	mock.ExpectExec("B").WillReturnResult(sqlmock.NewResult(0, 0))
	for _, q := range []string{"A", "B"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
	if s := c.WardStats(); mc.dials.Load() != 2 || s.CheckFailures != 1 || s.Dropped != 1 {
		t.Errorf("dials %d, %+v", mc.dials.Load(), s)
	}
	honest(t, c)
}

func TestMockDialErrors(t *testing.T) {
	db, c, _, mc := newMock(t, one())
	refused := errors.New("connection refused")
	mc.fail.Store(&refused)
	err := db.PingContext(ctxT(t))
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), "sqlward: connect") {
		t.Errorf("Ping on a refusing driver = %v", err)
	}
	if s := c.WardStats(); s.Live != 0 || s.Failed == 0 {
		t.Errorf("books: %+v", s.Books)
	}
}

// TestMockBreakerSheds: with a Breaker in the Ward, a driver that keeps
// failing to connect stops being asked.
func TestMockBreakerSheds(t *testing.T) {
	cfg := one()
	cfg.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())}
	db, c, _, mc := newMock(t, cfg)
	refused := errors.New("connection refused")
	mc.fail.Store(&refused)
	ctx := ctxT(t)
	shed := 0
	for range 100 {
		err := db.PingContext(ctx)
		if errors.Is(err, wardpool.ErrShed) {
			shed++
		} else if !errors.Is(err, refused) {
			t.Fatalf("Ping = %v", err)
		}
	}
	// database/sql tries each Connect up to three times on ErrBadConn only,
	// so one Ping is one Connect here.
	if d := mc.dials.Load(); d > 50 || shed < 50 {
		t.Errorf("100 pings on a dead driver: %d dials, %d shed", d, shed)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Shed: uint64(shed), Live: 0}, pool.Books{Shed: s.Shed, Live: s.Live}); diff != "" {
			t.Errorf("books (-want +got):\n%s", diff)
		}
	}
}

// TestMockSizeHolds: the Keeper's Size bounds database/sql although its own
// MaxOpenConns is unlimited.
func TestMockSizeHolds(t *testing.T) {
	db, c, _, _ := newMock(t, one())
	ctx := ctxT(t)
	held, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A second one waits in the Keeper until its context ends.
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := db.Conn(short)
		errc <- err
	}()
	for c.WardStats().Waiting == 0 {
		time.Sleep(time.Millisecond) // until the Keeper has queued it
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("second Conn on a pool of one = %v, want Canceled", err)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Live: 1}, Canceled: 1}, wardpool.Stats{Books: pool.Books{Live: s.Live}, Canceled: s.Canceled}); diff != "" {
			t.Errorf("books (-want +got):\n%s", diff)
		}
	}
	_ = held.Close()
	honest(t, c)
}

func TestMockLeak(t *testing.T) {
	leaks := make(chan Leak, 2)
	cfg := one()
	cfg.LeakAfter = 30 * time.Millisecond
	cfg.OnLeak = func(l Leak) { leaks <- l }
	db, c, _, _ := newMock(t, cfg)
	ctx := ctxT(t)
	conn, err := db.Conn(ctx) // forgotten
	if err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-leaks:
		if l.Returned || l.Item == nil || !strings.Contains(string(l.Stack), "TestMockLeak") {
			t.Errorf("leak report %+v:\n%s", l, l.Stack)
		}
		if n := c.Leaked(); n != 1 {
			t.Errorf("Leaked = %d with the forgotten conn out, want 1", n)
		}
	case <-ctx.Done():
		t.Fatal("forgotten *sql.Conn never reported")
	}
	_ = conn.Close()
	if l := <-leaks; !l.Returned {
		t.Errorf("second report not Returned: %+v", l)
	}
	honest(t, c)
}

func TestCloseAndReset(t *testing.T) {
	db, c, mock, _ := newMock(t, one())
	ctx := ctxT(t)
	mock.ExpectExec("A").WillReturnResult(sqlmock.NewResult(0, 0))
	if _, err := db.ExecContext(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Live: 0, Retired: 1}, pool.Books{Live: s.Live, Retired: s.Retired}); diff != "" {
			t.Errorf("after Reset (-want +got):\n%s", diff)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(ctx); !errors.Is(err, wardpool.ErrClosed) {
		t.Errorf("Connect after db.Close = %v, want wardpool.ErrClosed", err)
	}
	if err := c.CloseContext(ctx); err != nil {
		t.Errorf("CloseContext with nothing out = %v", err)
	}
}

func TestNewConnectorRefuses(t *testing.T) {
	if _, err := NewConnector(nil, Config{}); err == nil {
		t.Error("nil connector accepted")
	}
	m := &mockConnector{}
	if _, err := NewConnector(m, Config{Limits: pool.Limits{Size: -1}}); !errors.Is(err, pool.ErrLimits) && !errors.Is(err, wardpool.ErrConfig) {
		t.Errorf("negative Size: %v", err)
	}
	if _, _, err := OpenDB(m, Config{Limits: pool.Limits{Size: 1}, MinIdle: 5}); err == nil {
		t.Error("MinIdle over Size accepted")
	}
}

// fakeConn is a driver connection with every optional interface under the
// test's control: the methods sqlmock lacks.
type fakeConn struct {
	mu      sync.Mutex
	resets  int
	reset   error // ResetSession's answer
	valid   bool  // IsValid's answer
	closed  bool
	done    chan struct{} // closed by Close
	queries int
}

func (f *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("fake: no prepare") }
func (f *fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("fake: no tx") }

// isClosed reports whether Close was called within 10 s: closing runs in
// the background, on the pool's closers. It waits for the Close itself (a
// closer may have taken the connection off the queue, Stats.Closing, and
// not yet called Close).
func (f *fakeConn) isClosed(t *testing.T, _ *Connector) bool {
	t.Helper()
	select {
	case <-f.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func (f *fakeConn) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.done)
	}
	return nil
}

func (f *fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries++
	return driver.RowsAffected(1), nil
}

func (f *fakeConn) ResetSession(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets++
	return f.reset
}

func (f *fakeConn) IsValid() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.valid
}

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("fake: use the connector")
}

type fakeConnector struct {
	mu    sync.Mutex
	conns []*fakeConn
}

func (fc *fakeConnector) Connect(context.Context) (driver.Conn, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	c := &fakeConn{valid: true, done: make(chan struct{})}
	fc.conns = append(fc.conns, c)
	return c, nil
}
func (fc *fakeConnector) Driver() driver.Driver { return fakeDriver{} }

func (fc *fakeConnector) last() *fakeConn {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.conns[len(fc.conns)-1]
}

var _ io.Closer = (*Connector)(nil)

// TestResetterAndValidator: ResetSession before every reuse (not the first
// use); ErrBadConn from it or false from IsValid replaces the connection
// without the caller noticing; other reset errors are ignored, as
// database/sql ignores them.
func TestResetterAndValidator(t *testing.T) {
	noLeftovers(t)
	fc := &fakeConnector{}
	db, c, err := OpenDB(fc, one())
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
	if first.resets != 0 {
		t.Errorf("a fresh connection was reset %d times", first.resets)
	}
	exec()
	if first.resets != 1 {
		t.Errorf("reuse reset %d times, want 1", first.resets)
	}

	first.mu.Lock()
	first.reset = errors.New("some hiccup")
	first.mu.Unlock()
	exec()
	if len(fc.conns) != 1 || c.WardStats().Dropped != 0 {
		t.Errorf("an ordinary reset error replaced the connection: %d conns", len(fc.conns))
	}

	first.mu.Lock()
	first.reset = driver.ErrBadConn
	first.mu.Unlock()
	exec()
	second := fc.last()
	if second == first || !first.isClosed(t, c) || c.WardStats().CheckFailures != 1 {
		t.Errorf("ErrBadConn from ResetSession: conns %d, first closed %v, %+v", len(fc.conns), first.isClosed(t, c), c.WardStats())
	}

	second.mu.Lock()
	second.valid = false
	second.mu.Unlock()
	exec() // the return finds it invalid
	if !second.isClosed(t, c) || c.WardStats().Live != 0 {
		t.Errorf("IsValid false on return: closed %v, %+v", second.isClosed(t, c), c.WardStats().Books)
	}
	exec()
	if len(fc.conns) != 3 {
		t.Errorf("%d connections, want 3", len(fc.conns))
	}
	honest(t, c)
}

// TestFallbacks: for a driver connection without the context methods,
// database/sql's own fallbacks run (ErrSkip sends it to Prepare; Begin
// without BeginTx refuses options it cannot honour), and the errors reach
// the caller with the connection kept.
func TestFallbacks(t *testing.T) {
	fc := &fakeConnector{}
	db, c, err := OpenDB(fc, one())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	if _, err := db.QueryContext(ctx, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "fake: no prepare") {
		t.Errorf("Query without QueryerContext = %v, want the driver's Prepare error", err)
	}
	if _, err := db.BeginTx(ctx, nil); err == nil || !strings.Contains(err.Error(), "fake: no tx") {
		t.Errorf("Begin = %v, want the driver's Begin error", err)
	}
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only Begin = %v", err)
	}
	if _, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable}); err == nil || !strings.Contains(err.Error(), "isolation") {
		t.Errorf("serializable Begin = %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("Ping without a Pinger = %v", err)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 1, Dropped: 0}, pool.Books{Made: s.Made, Dropped: s.Dropped}); diff != "" {
			t.Errorf("books (-want +got):\n%s", diff)
		}
	}
	honest(t, c)
}
