package pgxward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/testenv"
)

// These tests run against the PostgreSQL named by WARDPOOL_PG_DSN and skip
// without it.

// newPool builds a pool on the test server, with edit applied to its
// config, closed when the test ends.
func newPool(t *testing.T, edit func(*Config)) *Pool {
	t.Helper()
	c, err := ParseConfig(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	c.MaxConns = 4
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

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// honest fails the test unless the books add up with nothing lent.
func honest(t *testing.T, p *Pool) {
	t.Helper()
	s := p.Stat()
	k := s.WardStats()
	if s.AcquiredConns() != 0 || s.TotalConns() != s.IdleConns()+s.ConstructingConns() || k.Live != k.Idle+k.Busy {
		t.Errorf("books: acquired %d, total %d, idle %d, constructing %d (%+v)",
			s.AcquiredConns(), s.TotalConns(), s.IdleConns(), s.ConstructingConns(), k)
	}
}

// table makes a table unique to the test and drops it at the end.
func table(t *testing.T, p *Pool) string {
	t.Helper()
	name := fmt.Sprintf("pgxward_%d", time.Now().UnixNano())
	if _, err := p.Exec(ctxT(t), "CREATE TABLE "+name+" (id int PRIMARY KEY, name text)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Exec(context.Background(), "DROP TABLE "+name) })
	return name
}

func TestPoolMethods(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	tbl := table(t, p)

	n, err := p.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"id", "name"},
		pgx.CopyFromRows([][]any{{1, "one"}, {2, "two"}, {3, "three"}}))
	if err != nil || n != 3 {
		t.Fatalf("CopyFrom = %d, %v", n, err)
	}
	honest(t, p)

	tag, err := p.Exec(ctx, "UPDATE "+tbl+" SET name = upper(name) WHERE id > $1", 1)
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("Exec = %v, %v", tag, err)
	}
	honest(t, p)

	// Rows read to the end give the connection back without Close.
	rows, err := p.Query(ctx, "SELECT id, name FROM "+tbl+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var id int
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if rows.Err() != nil || strings.Join(names, ",") != "one,TWO,THREE" {
		t.Fatalf("Query: %v, %v", names, rows.Err())
	}
	honest(t, p)
	rows.Close() // closing again is harmless

	// Rows closed early give it back too.
	rows, err = p.Query(ctx, "SELECT generate_series(1, 1000)")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if p.Stat().AcquiredConns() != 1 {
		t.Errorf("open rows: AcquiredConns = %d, want 1", p.Stat().AcquiredConns())
	}
	rows.Close()
	honest(t, p)

	// A failed query's rows carry the error; the connection is back.
	rows, err = p.Query(ctx, "SELECT nonsense FROM nowhere")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" || !errors.As(rows.Err(), &pgErr) {
		t.Errorf("bad Query: %v / %v", err, rows.Err())
	}
	rows.Close()
	honest(t, p)

	var name string
	if err := p.QueryRow(ctx, "SELECT name FROM "+tbl+" WHERE id = $1", 3).Scan(&name); err != nil || name != "THREE" {
		t.Fatalf("QueryRow = %q, %v", name, err)
	}
	if err := p.QueryRow(ctx, "SELECT name FROM "+tbl+" WHERE id = 99").Scan(&name); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("QueryRow of nothing: %v", err)
	}
	honest(t, p)

	// Batch: closing the results gives the connection back.
	b := &pgx.Batch{}
	b.Queue("INSERT INTO " + tbl + " VALUES (4, 'four')")
	b.Queue("SELECT count(*) FROM " + tbl)
	br := p.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var count int
	if err := br.QueryRow().Scan(&count); err != nil || count != 4 {
		t.Fatalf("batch count = %d, %v", count, err)
	}
	if br.Tx() != nil {
		t.Error("a batch without BeginTx has a Tx")
	}
	if p.Stat().AcquiredConns() != 1 {
		t.Errorf("open batch: AcquiredConns = %d", p.Stat().AcquiredConns())
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	honest(t, p)

	// A batch that begins a transaction: its Tx owns the connection.
	b = &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue("INSERT INTO " + tbl + " VALUES (5, 'five')")
	br = p.SendBatch(ctx, b)
	tx := br.Tx()
	if tx == nil {
		t.Fatal("no Tx from a BeginTx batch")
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Stat().AcquiredConns() != 1 {
		t.Errorf("batch transaction open: AcquiredConns = %d", p.Stat().AcquiredConns())
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	honest(t, p)

	// Transactions: Rollback undoes and gives back, Commit keeps.
	tx, err = p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM "+tbl); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Errorf("second Rollback: %v", err)
	}
	honest(t, p)
	tx, err = p.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	var iso string
	if err := tx.QueryRow(ctx, "SHOW transaction_isolation").Scan(&iso); err != nil || iso != "serializable" {
		t.Errorf("isolation %q, %v", iso, err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM "+tbl); err == nil {
		t.Error("a read-only transaction deleted")
	}
	_ = tx.Rollback(ctx)
	honest(t, p)
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&count); err != nil || count != 5 {
		t.Errorf("count after transactions = %d, %v", count, err)
	}

	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	honest(t, p)
}

func TestConnMethods(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	tbl := table(t, p)

	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO "+tbl+" VALUES (1, 'a')"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"id", "name"},
		pgx.CopyFromRows([][]any{{2, "b"}})); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	rows, err := c.Query(ctx, "SELECT id FROM "+tbl)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	var s string
	if err := c.QueryRow(ctx, "SELECT name FROM "+tbl+" WHERE id=2").Scan(&s); err != nil || s != "b" {
		t.Fatal(s, err)
	}
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = c.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Conn() == nil || c.Conn().IsClosed() {
		t.Fatal("Conn() is not an open connection")
	}
	pid := c.Conn().PgConn().PID()
	if got := p.Stat().AcquiredConns(); got != 1 {
		t.Errorf("AcquiredConns = %d, want 1", got)
	}
	c.Release()
	c.Release() // a second Release is a no-op
	honest(t, p)

	// The connection is reused: the same backend answers.
	c, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Conn().PgConn().PID(); got != pid {
		t.Errorf("second Acquire got backend %d, want the idle %d", got, pid)
	}

	// Hijack: the pool forgets the connection, which stays open.
	total := p.Stat().TotalConns()
	conn := c.Hijack()
	if got := p.Stat().TotalConns(); got != total-1 {
		t.Errorf("TotalConns after Hijack = %d, want %d", got, total-1)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Errorf("hijacked connection: %v", err)
	}
	c.Release() // no-op after Hijack
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second Hijack did not panic")
			}
		}()
		c.Hijack()
	}()
	if err := conn.Close(ctx); err != nil {
		t.Error(err)
	}
	honest(t, p)
}

func TestAcquireFuncAllIdleResetStat(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)

	var conns []*Conn
	for range 3 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	s := p.Stat()
	if s.IdleConns() != 3 || s.TotalConns() != 3 || s.NewConnsCount() != 3 || s.MaxConns() != 4 ||
		s.AcquireCount() != 3 || s.EmptyAcquireCount() != 3 {
		t.Errorf("stat after 3 dials: idle %d total %d new %d max %d acquires %d empty %d", s.IdleConns(),
			s.TotalConns(), s.NewConnsCount(), s.MaxConns(), s.AcquireCount(), s.EmptyAcquireCount())
	}

	err := p.AcquireFunc(ctx, func(c *Conn) error {
		if p.Stat().AcquiredConns() != 1 {
			t.Errorf("inside AcquireFunc: AcquiredConns = %d", p.Stat().AcquiredConns())
		}
		return errors.New("mine")
	})
	if err == nil || err.Error() != "mine" {
		t.Errorf("AcquireFunc = %v, want f's error", err)
	}
	honest(t, p)

	all := p.AcquireAllIdle(ctx)
	if len(all) != 3 || p.Stat().IdleConns() != 0 || p.Stat().AcquiredConns() != 3 {
		t.Errorf("AcquireAllIdle: %d conns, stat %+v", len(all), p.Stat().WardStats())
	}
	for _, c := range all {
		if err := c.Ping(ctx); err != nil {
			t.Error(err)
		}
		c.Release()
	}
	honest(t, p)

	// A canceled acquire is counted as such.
	held := p.AcquireAllIdle(ctx)
	extra, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Acquire(short)
		errc <- err
	}()
	clocktest.Eventually(t, "the Acquire queued", func() bool { return p.Stat().WardStats().Waiting == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire on a full pool = %v, want Canceled", err)
	}
	if p.Stat().CanceledAcquireCount() != 1 {
		t.Errorf("CanceledAcquireCount = %d, want 1", p.Stat().CanceledAcquireCount())
	}
	for _, c := range held {
		c.Release()
	}
	if p.Stat().AcquireDuration() <= 0 {
		t.Errorf("AcquireDuration = %v", p.Stat().AcquireDuration())
	}

	// Reset closes the idle ones now and the lent one when it comes back.
	p.Reset()
	if s := p.Stat(); s.IdleConns() != 0 || s.TotalConns() != 1 {
		t.Errorf("after Reset: idle %d total %d", s.IdleConns(), s.TotalConns())
	}
	extra.Release()
	if s := p.Stat(); s.TotalConns() != 0 {
		t.Errorf("after Reset and Release: total %d", s.TotalConns())
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	honest(t, p)

	cfg := p.Config()
	cfg.MaxConns = 99
	if p.Config().MaxConns != 4 {
		t.Error("Config() is not a copy")
	}
}

// TestReleaseDestroysDirty: a connection left inside a transaction or in
// the middle of a query is destroyed, never lent again.
func TestReleaseDestroysDirty(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if s := p.Stat(); s.TotalConns() != 0 || s.WardStats().Dropped != 1 {
		t.Errorf("in-transaction release kept: total %d, %+v", s.TotalConns(), s.WardStats())
	}
	c, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, "SELECT generate_series(1, 100000)")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	c.Release() // rows still open: the connection is busy
	if s := p.Stat(); s.TotalConns() != 0 || s.WardStats().Dropped != 2 {
		t.Errorf("busy release kept: total %d, %+v", s.TotalConns(), s.WardStats())
	}
	honest(t, p)
}

func TestHooks(t *testing.T) {
	var (
		mu                                sync.Mutex
		before, after, prepared, released int
		closed                            []uint32
		idles                             []time.Duration
		prepare                           = func(context.Context, *pgx.Conn) (bool, error) { return true, nil }
		keep                              = true
	)
	p := newPool(t, func(c *Config) {
		c.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
			mu.Lock()
			defer mu.Unlock()
			before++
			cc.RuntimeParams["application_name"] = fmt.Sprintf("pgxward-%d", before)
			return nil
		}
		c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			mu.Lock()
			after++
			mu.Unlock()
			_, err := conn.Exec(ctx, "SET statement_timeout = 12345")
			return err
		}
		c.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
			mu.Lock()
			prepared++
			f := prepare
			mu.Unlock()
			return f(ctx, conn)
		}
		c.AfterRelease = func(*pgx.Conn) bool {
			mu.Lock()
			defer mu.Unlock()
			released++
			return keep
		}
		c.BeforeClose = func(conn *pgx.Conn) {
			mu.Lock()
			defer mu.Unlock()
			closed = append(closed, conn.PgConn().PID())
		}
		c.ShouldPing = func(_ context.Context, sp ShouldPingParams) bool {
			mu.Lock()
			defer mu.Unlock()
			idles = append(idles, sp.IdleDuration)
			return true
		}
	})
	ctx := ctxT(t)
	var app, timeout string
	if err := p.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('statement_timeout')").
		Scan(&app, &timeout); err != nil {
		t.Fatal(err)
	}
	if app != "pgxward-1" || timeout != "12345ms" {
		t.Errorf("BeforeConnect/AfterConnect not applied: %q %q", app, timeout)
	}
	if err := p.Ping(ctx); err != nil { // reuses the idle one: ShouldPing asked
		t.Fatal(err)
	}
	mu.Lock()
	if before != 1 || after != 1 || prepared != 2 || released != 2 || len(idles) != 1 || idles[0] < 0 {
		t.Errorf("hooks: before %d after %d prepared %d released %d idles %v", before, after, prepared, released, idles)
	}
	mu.Unlock()

	// PrepareConn's four answers.
	mine := errors.New("prepare says no")
	cases := []struct {
		ok      bool
		err     error
		total   int32 // connections afterwards
		wantErr error
	}{
		{true, mine, 1, mine},  // given back, caller fails
		{false, mine, 0, mine}, // destroyed, caller fails
	}
	for i, cs := range cases {
		mu.Lock()
		prepare = func(context.Context, *pgx.Conn) (bool, error) { return cs.ok, cs.err }
		mu.Unlock()
		_, err := p.Acquire(ctx)
		if !errors.Is(err, cs.wantErr) {
			t.Errorf("case %d: Acquire = %v, want %v", i, err, cs.wantErr)
		}
		if got := p.Stat().TotalConns(); got != cs.total {
			t.Errorf("case %d: TotalConns = %d, want %d", i, got, cs.total)
		}
	}
	// (false, nil) once: destroyed silently and another dialled.
	var calls atomic.Int32
	mu.Lock()
	prepare = func(context.Context, *pgx.Conn) (bool, error) { return calls.Add(1) > 1, nil }
	mu.Unlock()
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire after one refusal: %v", err)
	}
	c.Release()
	// Always (false, nil): gives up after MaxConns+1 tries.
	mu.Lock()
	prepare = func(context.Context, *pgx.Conn) (bool, error) { return false, nil }
	mu.Unlock()
	if _, err := p.Acquire(ctx); !errors.Is(err, errTooManyTries) {
		t.Errorf("Acquire with PrepareConn always refusing = %v", err)
	}
	honest(t, p)

	// AfterRelease false destroys.
	clocktest.Eventually(t, "the earlier closes", func() bool { return p.k.Stats().Closing == 0 })
	mu.Lock()
	prepare = func(context.Context, *pgx.Conn) (bool, error) { return true, nil }
	keep = false
	mu.Unlock()
	c, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	c.Release()
	if got := p.Stat().TotalConns(); got != 0 {
		t.Errorf("AfterRelease false kept the connection: total %d", got)
	}
	// The Keeper closes in the background: BeforeClose comes a moment later.
	clocktest.Eventually(t, "BeforeClose on the connection AfterRelease refused", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(closed, pid)
	})
	honest(t, p)
}

// TestQueryRowNeverScannedLeaks: the leak every pgx user has met once is
// reported with the stack of the QueryRow, and again when Scan finally
// gives the connection back.
func TestQueryRowNeverScannedLeaks(t *testing.T) {
	leaks := make(chan Leak, 4)
	p := newPool(t, func(c *Config) {
		c.LeakAfter = 50 * time.Millisecond
		c.OnLeak = func(l Leak) { leaks <- l }
	})
	ctx := ctxT(t)
	row := p.QueryRow(ctx, "SELECT 42")
	var l Leak
	select {
	case l = <-leaks:
	case <-ctx.Done():
		t.Fatal("the unscanned row was never reported")
	}
	if l.Returned || l.Held < 50*time.Millisecond || l.Item == nil ||
		!strings.Contains(string(l.Stack), "TestQueryRowNeverScannedLeaks") {
		t.Errorf("leak report: returned %v held %v conn %v stack:\n%s", l.Returned, l.Held, l.Item, l.Stack)
	}
	if p.Stat().WardStats().Leaks != 1 {
		t.Errorf("Leaks = %d", p.Stat().WardStats().Leaks)
	}
	var n int
	if err := row.Scan(&n); err != nil || n != 42 {
		t.Fatal(n, err)
	}
	select {
	case l = <-leaks:
		if !l.Returned {
			t.Errorf("second report is not Returned: %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("no report on return")
	}
	honest(t, p)
}

// TestRetirement: connections idle past MaxConnIdleTime and alive past
// MaxConnLifetime are closed and counted as pgxpool counts them.
func TestRetirement(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		p := newPool(t, func(c *Config) { c.MaxConnIdleTime = 100 * time.Millisecond })
		ctx := ctxT(t)
		conns := p.AcquireAllIdle(ctx)
		for range 3 {
			c, err := p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
		clocktest.Eventually(t, "idle connections retired", func() bool { return p.Stat().TotalConns() == 0 })
		if s := p.Stat(); s.MaxIdleDestroyCount() != 3 || s.MaxLifetimeDestroyCount() != 0 {
			t.Errorf("idle destroys %d, lifetime destroys %d", s.MaxIdleDestroyCount(), s.MaxLifetimeDestroyCount())
		}
		honest(t, p)
	})
	t.Run("lifetime", func(t *testing.T) {
		p := newPool(t, func(c *Config) {
			c.MaxConnLifetime = 200 * time.Millisecond
			c.MaxConnLifetimeJitter = 50 * time.Millisecond
		})
		ctx := ctxT(t)
		var first uint32
		if err := p.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&first); err != nil {
			t.Fatal(err)
		}
		// Busy all along, it still retires once past its lifetime.
		clocktest.Eventually(t, "a new backend after the lifetime", func() bool {
			var pid uint32
			if err := p.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			return pid != first
		})
		if s := p.Stat(); s.MaxLifetimeDestroyCount() < 1 || s.MaxIdleDestroyCount() != 0 {
			t.Errorf("lifetime destroys %d, idle destroys %d", s.MaxLifetimeDestroyCount(), s.MaxIdleDestroyCount())
		}
		honest(t, p)
	})
}

// TestQueryCanceledByContext: a query cut short by its context fails with
// the context's error, its connection is not reused, and the pool goes on.
func TestQueryCanceledByContext(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	if err := p.Ping(ctx); err != nil { // a connection ready, so the deadline falls in the query
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Exec(short, "SELECT pg_sleep(30)")
	if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("Exec past its deadline = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
	rows, err := p.Query(short, "SELECT 1")
	if err == nil || rows.Err() == nil {
		t.Error("Query with an ended context succeeded")
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT 7").Scan(&n); err != nil || n != 7 {
		t.Fatalf("after a canceled query: %d, %v", n, err)
	}
	honest(t, p)
}

// TestCloseWaitsForLoans: Close refuses new callers at once and returns
// only when the last loan is back; CloseContext gives up with ctx.
func TestCloseWaitsForLoans(t *testing.T) {
	p := newPool(t, nil)
	ctx := ctxT(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.CloseContext(gone); !errors.Is(err, context.Canceled) {
		t.Errorf("CloseContext with a loan out = %v, want Canceled", err)
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, wardpool.ErrClosed) {
		t.Errorf("Acquire after Close = %v, want wardpool.ErrClosed", err)
	}
	if err := p.QueryRow(ctx, "SELECT 1").Scan(new(int)); !errors.Is(err, wardpool.ErrClosed) {
		t.Errorf("QueryRow after Close = %v", err)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	// The loan is still usable while Close waits.
	if err := c.Ping(ctx); err != nil {
		t.Error(err)
	}
	select {
	case <-done:
		t.Fatal("Close returned with a loan out")
	default:
	}
	conn := c.Conn()
	c.Release()
	<-done
	if !conn.IsClosed() {
		t.Error("the returned connection was not closed")
	}
	if s := p.Stat(); s.TotalConns() != 0 {
		t.Errorf("after Close: total %d", s.TotalConns())
	}
}

// TestConcurrent: 64 goroutines on 8 connections; run it with -race.
func TestConcurrent(t *testing.T) {
	var dials atomic.Int32
	p := newPool(t, func(c *Config) {
		c.MaxConns = 8
		c.AfterConnect = func(context.Context, *pgx.Conn) error { dials.Add(1); return nil }
	})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				var n int
				var err error
				switch i % 4 {
				case 0:
					err = p.QueryRow(ctx, "SELECT $1::int", g).Scan(&n)
				case 1:
					var rows pgx.Rows
					rows, err = p.Query(ctx, "SELECT $1::int", g)
					if err == nil {
						for rows.Next() {
							err = rows.Scan(&n)
						}
						if rows.Err() != nil {
							err = rows.Err()
						}
					}
				case 2:
					_, err = p.Exec(ctx, "SELECT 1")
					n = g
				case 3:
					err = p.AcquireFunc(ctx, func(c *Conn) error { return c.QueryRow(ctx, "SELECT $1::int", g).Scan(&n) })
				}
				if err != nil || n != g {
					failures.Add(1)
					t.Errorf("goroutine %d: %d, %v", g, n, err)
					return
				}
				if tot := p.Stat().TotalConns(); tot > 8 {
					t.Errorf("TotalConns %d > 8", tot)
				}
			}
		})
	}
	wg.Wait()
	if dials.Load() > 8 {
		t.Errorf("%d dials for 8 connections", dials.Load())
	}
	s := p.Stat()
	if s.AcquireCount() != 64*50 || s.TotalConns() > 8 {
		t.Errorf("acquires %d, total %d", s.AcquireCount(), s.TotalConns())
	}
	honest(t, p)
}

// TestLeakLoggedByDefault: without OnLeak the report is a warning on Logger
// naming the backend.
func TestLeakLoggedByDefault(t *testing.T) {
	var buf syncBuffer
	p := newPool(t, func(c *Config) {
		c.LeakAfter = 30 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	ctx := ctxT(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	clocktest.Eventually(t, "a leak warning", func() bool { return strings.Contains(buf.String(), "held longer than LeakAfter") })
	c.Release()
	clocktest.Eventually(t, "a came-back warning", func() bool { return strings.Contains(buf.String(), "came back") })
	if out := buf.String(); !strings.Contains(out, fmt.Sprintf("pid=%d", pid)) || !strings.Contains(out, "TestLeakLoggedByDefault") {
		t.Errorf("log:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMinConnsKeptWarm: MinConns and MinIdleConns open connections in the
// background, before any Acquire, and replace one that is destroyed.
func TestMinConnsKeptWarm(t *testing.T) {
	p := newPool(t, func(c *Config) { c.MinConns = 1; c.MinIdleConns = 2 })
	clocktest.Eventually(t, "two idle connections", func() bool { return p.Stat().IdleConns() == 2 })
	if s := p.Stat(); s.AcquireCount() != 0 || s.NewConnsCount() != 2 {
		t.Errorf("warming: acquires %d, new %d", s.AcquireCount(), s.NewConnsCount())
	}
	c, err := p.Acquire(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	conn := c.Hijack()
	defer conn.Close(context.Background())
	clocktest.Eventually(t, "two idle again", func() bool { return p.Stat().IdleConns() == 2 })
}
