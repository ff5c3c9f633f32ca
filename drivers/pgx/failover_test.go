package pgxward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

func TestDefaultClassify(t *testing.T) {
	for _, c := range []struct {
		err   error
		want  wardpool.Verdict
		cause string
	}{
		{&pgconn.PgError{Code: "25006"}, wardpool.Reset, "25006"},
		{&pgconn.PgError{Code: "57P01"}, wardpool.Reset, "57P01"},
		{&pgconn.PgError{Code: "57P02"}, wardpool.Reset, "57P02"},
		{&pgconn.PgError{Code: "57P03"}, wardpool.Reset, "57P03"},
		{&pgconn.PgError{Code: "08006"}, wardpool.Reset, "08006"},
		{&pgconn.PgError{Code: "08P01"}, wardpool.Reset, "08P01"},
		{fmt.Errorf("insert: %w", &pgconn.PgError{Code: "25006"}), wardpool.Reset, "25006"},
		{&pgconn.PgError{Code: "53300"}, wardpool.Full, "53300"}, // too_many_connections
		{&pgconn.ConnectError{Config: &pgconn.Config{}}, wardpool.Reuse, ""},
		{&pgconn.PgError{Code: "23505"}, wardpool.Reuse, ""}, // unique_violation
		{&pgconn.PgError{Code: "42601"}, wardpool.Reuse, ""}, // syntax_error
		{&pgconn.PgError{Code: "57014"}, wardpool.Reuse, ""}, // query_canceled
		{&pgconn.PgError{Code: "08"}, wardpool.Reuse, ""},    // not a SQLSTATE
		{errors.New("read tcp: connection reset"), wardpool.Reuse, ""},
		{context.DeadlineExceeded, wardpool.Reuse, ""},
	} {
		v, cause := DefaultClassify(c.err)
		if v != c.want || cause != c.cause {
			t.Errorf("DefaultClassify(%v) = %v, %q; want %v, %q", c.err, v, cause, c.want, c.cause)
		}
	}
}

// offline builds a pool on an address nothing listens on: NewWithConfig
// connects to nothing, so the pool's own calls can be tried without a
// server.
func offline(t *testing.T, edit func(*Config)) *Pool {
	t.Helper()
	c, err := ParseConfig("postgres://u:p@127.0.0.1:1/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestOnPgErrorKeepsTheWorst: every error the server sends is classified,
// the worst verdict of the loan is kept with its cause, and the handler
// that was there before still decides whether pgx closes the connection.
func TestOnPgErrorKeepsTheWorst(t *testing.T) {
	p := offline(t, func(c *Config) {
		c.Classify = func(err error) (wardpool.Verdict, string) {
			switch err.(*pgconn.PgError).Code {
			case "XX000":
				return wardpool.Destroy, "internal"
			case "PANIC":
				panic("classifier exploded")
			}
			return DefaultClassify(err)
		}
		c.Logger = quiet()
	})
	r := &res{p: p}
	calls := 0
	h := p.onPgError(r, func(*pgconn.PgConn, *pgconn.PgError) bool { calls++; return calls%2 == 0 })
	// While the connection is being dialled its errors are the dial's.
	if h(nil, &pgconn.PgError{Code: "25006"}) || r.fail.v != wardpool.Reuse || calls != 1 {
		t.Fatalf("an error of the dial was classified (%+v) or the next handler skipped", r.fail)
	}
	calls = 0
	r.conn = new(pgx.Conn) // dialled: a stand-in, never used
	if h(nil, &pgconn.PgError{Code: "23505"}) || r.fail.v != wardpool.Reuse {
		t.Fatal("a unique violation was not kept, or the next handler's answer was lost")
	}
	h(nil, &pgconn.PgError{Code: "XX000"})
	if r.fail.v != wardpool.Destroy || r.fail.cause != "internal" {
		t.Fatalf("after XX000: %+v", r.fail)
	}
	h(nil, &pgconn.PgError{Code: "25006"})
	h(nil, &pgconn.PgError{Code: "XX000"}) // a milder one later keeps the worst
	if r.fail.v != wardpool.Reset || r.fail.cause != "25006" || r.fail.err.(*pgconn.PgError).Code != "25006" {
		t.Fatalf("after 25006: %+v", r.fail)
	}
	r.fail = failure{}
	h(nil, &pgconn.PgError{Code: "PANIC"})
	if r.fail.v != wardpool.Reuse || p.WardStats().Panics != 1 {
		t.Fatalf("a panicking classifier: %+v, panics %d", r.fail, p.WardStats().Panics)
	}
	if calls != 5 {
		t.Fatalf("the next handler ran %d times, want 5", calls)
	}
	if !p.onPgError(r, nil)(nil, &pgconn.PgError{Code: "23505"}) {
		t.Fatal("without a next handler the connection is not kept open")
	}
}

// readOnlyPool builds a pool whose connections are opened read-only while
// ro is set, as a demoted primary's would be: the server itself answers
// 25006 to a write on them.
func readOnlyPool(t *testing.T, ro *atomic.Bool, edit func(*Config)) *Pool {
	return newPool(t, func(c *Config) {
		c.MaxConns = 8
		c.Logger = quiet()
		c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			if ro.Load() {
				_, err := conn.Exec(ctx, "SET default_transaction_read_only = on")
				return err
			}
			return nil
		}
		if edit != nil {
			edit(c)
		}
	})
}

// TestReadOnlyResetsOnce is the demoted writer on a real server: eight
// connections open read-only, four lent and four idle; the server "moves"
// (new connections are writable); the four writers each get 25006. The
// first Release resets (the idle four are closed), the other three reset
// nothing, and the next write succeeds on a fresh connection.
func TestReadOnlyResetsOnce(t *testing.T) {
	var ro atomic.Bool
	ro.Store(true)
	p := readOnlyPool(t, &ro, nil)
	ctx := ctxT(t)
	tbl := table2(t)
	var lent []*Conn
	for range 8 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lent = append(lent, c)
	}
	for _, c := range lent[4:] {
		c.Release()
	}
	ro.Store(false)
	for i, c := range lent[:4] {
		_, err := c.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", i)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "25006" {
			t.Fatalf("write on a read-only connection: %v, want 25006", err)
		}
		c.Release()
	}
	s := p.WardStats()
	if s.Resets != 1 || s.ResetCauses["25006"] != 1 {
		t.Fatalf("resets %d by cause %v, want one 25006", s.Resets, s.ResetCauses)
	}
	if _, err := p.Exec(ctx, "INSERT INTO "+tbl+" VALUES (100)"); err != nil {
		t.Fatalf("write after the reset: %v", err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Live: 1}, Resets: 1}, wardpool.Stats{Books: pool.Books{Live: s.Live}, Resets: s.Resets}); diff != "" {
			t.Fatalf("after the reset: live %d (want the one new connection), resets %d (-want +got):\n%s", s.Live, s.Resets, diff)
		}
	}
}

// TestReadOnlyKeptWithoutClassifier is the same without the classifier
// (wardpool.ReuseAll): the read-only connections stay in the pool, and
// writes go on failing on them. It is what TestReadOnlyResetsOnce's
// classifier buys.
func TestReadOnlyKeptWithoutClassifier(t *testing.T) {
	var ro atomic.Bool
	ro.Store(true)
	p := readOnlyPool(t, &ro, func(c *Config) { c.Classify = wardpool.ReuseAll })
	ctx := ctxT(t)
	tbl := table2(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	ro.Store(false)
	for i := range 3 {
		if _, err := p.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", i); err == nil {
			t.Fatalf("write %d succeeded on the kept read-only connection", i)
		}
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Made: 1}, Resets: 0}, wardpool.Stats{Books: pool.Books{Made: s.Made}, Resets: s.Resets}); diff != "" {
			t.Fatalf("resets %d, made %d; want 0 and 1 (-want +got):\n%s", s.Resets, s.Made, diff)
		}
	}
}

// TestTerminatedBackendResets: a backend ended by pg_terminate_backend
// answers 57P01 admin_shutdown; its loan resets the pool.
func TestTerminatedBackendResets(t *testing.T) {
	p := newPool(t, func(c *Config) { c.Logger = quiet() })
	ctx := ctxT(t)
	a, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, "SELECT pg_terminate_backend($1)", a.Conn().PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	b.Release() // idle: the reset closes it
	_, err = a.Exec(ctx, "SELECT 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P01" {
		t.Skipf("the terminated backend answered %v, not 57P01 (the FATAL was not read)", err)
	}
	a.Release()
	s := p.WardStats()
	if s.Resets != 1 || s.ResetCauses["57P01"] != 1 || s.Idle != 0 {
		t.Fatalf("resets %d %v, idle %d; want one 57P01 reset and nothing idle", s.Resets, s.ResetCauses, s.Idle)
	}
	honest(t, p)
}

// table2 makes a table unique to the test on a pool of its own (the
// test's pool may be read-only), dropped at the end.
func table2(t *testing.T) string { return table(t, newPool(t, nil)) }

// quiet is a logger for what a test provokes on purpose.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// writer is what the storm test drives: pgxward's Pool or pgxpool's.
type writer interface {
	Acquire(ctx context.Context) (conn, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// conn is a lent connection of either pool.
type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Release()
}

type wardWriter struct{ *Pool }

func (w wardWriter) Acquire(ctx context.Context) (conn, error) { return w.Pool.Acquire(ctx) }

type peerWriter struct{ *pgxpool.Pool }

func (w peerWriter) Acquire(ctx context.Context) (conn, error) { return w.Pool.Acquire(ctx) }

// storm is the demoted writer under 32 writers: 32 connections opened
// read-only are all lent when the server "moves" (connections opened from
// now on are writable); each writer's write fails with 25006 and it gives
// its connection back; then 64 more writes run, 32 at a time. It returns
// the failures of those 64.
func storm(t *testing.T, p writer, ro *atomic.Bool, tbl string) int {
	t.Helper()
	ctx := ctxT(t)
	ro.Store(true)
	var lent []conn
	for range 32 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lent = append(lent, c)
	}
	ro.Store(false)
	var wg sync.WaitGroup
	for i, c := range lent {
		wg.Go(func() {
			defer c.Release()
			_, err := c.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", i)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "25006" {
				t.Errorf("write on a read-only connection: %v, want 25006", err)
			}
		})
	}
	wg.Wait()
	var failed atomic.Int32
	for round := range 2 {
		for i := range 32 {
			wg.Go(func() {
				if _, err := p.Exec(ctx, "INSERT INTO "+tbl+" VALUES ($1)", 100+round*32+i); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
	}
	return int(failed.Load())
}

// TestStormResetsOnceBesidePgxpool: 32 writers get 25006 from connections
// of one generation; the first return resets, the other 31 reset nothing
// (the connections dialled since are kept), and the writes after fail no
// more. pgxpool, in the same run, keeps its read-only connections: its
// figure is logged beside ours.
func TestStormResetsOnceBesidePgxpool(t *testing.T) {
	var ro atomic.Bool
	dsn := testenv.PostgresDSN(t)
	afterConnect := func(ctx context.Context, conn *pgx.Conn) error {
		if ro.Load() {
			_, err := conn.Exec(ctx, "SET default_transaction_read_only = on")
			return err
		}
		return nil
	}
	p := readOnlyPool(t, &ro, func(c *Config) { c.MaxConns = 32 })
	tbl := table2(t)
	ours := storm(t, wardWriter{p}, &ro, tbl)
	s := p.WardStats()
	if s.Resets != 1 || s.ResetCauses["25006"] != 1 {
		t.Fatalf("resets %d %v after a storm of 32, want exactly one 25006", s.Resets, s.ResetCauses)
	}
	if ours != 0 {
		t.Errorf("pgxward: %d of 64 writes failed after the storm, want 0", ours)
	}
	p.Close() // the server is shared: one pool of 32 at a time

	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns, pc.AfterConnect = 32, afterConnect
	pp, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	theirs := storm(t, peerWriter{pp}, &ro, tbl)
	t.Logf("writes failed of the 64 after 32 writers met 25006: pgxward %d (resets %d), pgxpool %d", ours, s.Resets, theirs)
}

// TestOwnReadOnlyTransactionKept: a write inside a transaction the
// application began READ ONLY gets 25006 from a server that reports itself
// writable; it resets nothing and the connection is kept.
func TestOwnReadOnlyTransactionKept(t *testing.T) {
	p := newPool(t, func(c *Config) { c.Logger = quiet() })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Conn().PgConn().ParameterStatus("default_transaction_read_only") == "" {
		c.Release()
		t.Skip("the server does not report default_transaction_read_only (PostgreSQL before 14)")
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "CREATE TEMP TABLE pgxward_own_ro (id int)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" {
		t.Fatalf("write in a READ ONLY transaction: %v, want 25006", err)
	}
	_ = tx.Rollback(ctx)
	c.Release()
	{
		s := p.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Idle: 1, Dropped: 0}, Resets: 0}, wardpool.Stats{Books: pool.Books{Idle: s.Idle, Dropped: s.Dropped}, Resets: s.Resets}); diff != "" {
			t.Fatalf("resets %d, idle %d, dropped %d; want the connection kept and no reset (-want +got):\n%s", s.Resets, s.Idle, s.Dropped, diff)
		}
	}
}
