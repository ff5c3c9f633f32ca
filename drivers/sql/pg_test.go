package sqlward

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// These tests run pgx's database/sql driver against the PostgreSQL named by
// WARDPOOL_PG_DSN and skip without it.

// pgConnector returns pgx's driver.Connector for dsn.
func pgConnector(t *testing.T, dsn string) driver.Connector {
	t.Helper()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return stdlib.GetConnector(*cc)
}

func openPG(t *testing.T, cfg Config) (*sql.DB, *Connector) {
	t.Helper()
	db, c, err := OpenDB(pgConnector(t, testenv.PostgresDSN(t)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, c
}

func sized(n int) Config {
	l := pool.DefaultLimits
	l.Size, l.Idle = n, n
	return Config{Limits: l}
}

func TestPGQueries(t *testing.T) {
	db, c := openPG(t, sized(4))
	ctx := ctxT(t)
	tbl := fmt.Sprintf("sqlward_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+tbl+" (id int PRIMARY KEY, name text)"); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(context.Background(), "DROP TABLE "+tbl)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+tbl+" VALUES ($1, $2)", i, fmt.Sprint("n", i)); err != nil {
			t.Fatal(err)
		}
	}
	if c.WardStats().Busy != 1 {
		t.Errorf("open transaction: Busy = %d", c.WardStats().Busy)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT id, name FROM "+tbl+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id int
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if rows.Err() != nil || n != 3 {
		t.Fatal(n, rows.Err())
	}
	_ = rows.Close()

	// A prepared statement on the *sql.DB still works (prepared again on
	// each borrow).
	stmt, err := db.PrepareContext(ctx, "SELECT name FROM "+tbl+" WHERE id = $1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var name string
		if err := stmt.QueryRowContext(ctx, i).Scan(&name); err != nil || name != fmt.Sprint("n", i) {
			t.Fatal(name, err)
		}
	}
	_ = stmt.Close()

	var pgErr *pgconn.PgError
	if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" VALUES (1, 'dup')"); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("duplicate insert = %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	s := c.WardStats()
	if s.Made != 1 || s.Busy != 0 || db.Stats().Idle != 1 {
		t.Errorf("sequential use made %d connections, %d busy; database/sql idle %d (one handle, holding nothing)", s.Made, s.Busy, db.Stats().Idle)
	}
	honest(t, c)
}

// TestPGTerminatedBackend: kill the backend of the idle connection and query
// again, through sqlward and through plain database/sql on pgx's driver:
// where plain database/sql shows no error, sqlward must not either.
func TestPGTerminatedBackend(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ping := func(yes bool) stdlib.OptionOpenDB {
		return stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return yes })
	}
	for _, sc := range []struct {
		name string
		opts []stdlib.OptionOpenDB
		wait time.Duration
	}{
		// pgx's driver pings in ResetSession after a second idle.
		{"default, idle 1.2s", nil, 1200 * time.Millisecond},
		{"ping always", []stdlib.OptionOpenDB{ping(true)}, 0},
		// Timing decides the default rule "at once" on a loaded machine;
		// never pinging is the deterministic form of it.
		{"never ping", []stdlib.OptionOpenDB{ping(false)}, 0},
	} {
		t.Run(sc.name, func(t *testing.T) {
			seen := map[string]error{}
			plain := sql.OpenDB(stdlib.GetConnector(*cc, sc.opts...))
			plain.SetMaxOpenConns(1)
			defer plain.Close()
			warded, c, err := OpenDB(stdlib.GetConnector(*cc, sc.opts...), sized(1))
			if err != nil {
				t.Fatal(err)
			}
			defer warded.Close()
			for _, name := range []string{"database/sql", "sqlward"} {
				db := map[string]*sql.DB{"database/sql": plain, "sqlward": warded}[name]
				ctx := ctxT(t)
				var pid uint32
				if err := db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					t.Fatal(err)
				}
				kill(t, dsn, pid)
				time.Sleep(sc.wait) // the driver's rule is about real idle time
				var n int
				seen[name] = db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
				var again uint32
				if err := db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&again); err != nil || again == pid {
					t.Errorf("%s: the query after: %d, %v", name, again, err)
				}
			}
			t.Logf("database/sql: %v; sqlward: %v", seen["database/sql"], seen["sqlward"])
			if seen["database/sql"] == nil && seen["sqlward"] != nil {
				t.Errorf("sqlward shows %v where database/sql shows none", seen["sqlward"])
			}
			honest(t, c)
		})
	}
}

func kill(t *testing.T, dsn string, pid uint32) {
	t.Helper()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatalf("backend %d still there", pid)
}

// TestPGConcurrent: 64 goroutines on 8 connections, under -race.
func TestPGConcurrent(t *testing.T) {
	db, c := openPG(t, sized(8))
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var peak atomic.Int64
	for g := range 64 {
		wg.Go(func() {
			for range 50 {
				var n int
				if err := db.QueryRowContext(ctx, "SELECT $1::int", g).Scan(&n); err != nil || n != g {
					t.Errorf("goroutine %d: %d, %v", g, n, err)
					return
				}
				if live := int64(c.WardStats().Live); live > peak.Load() {
					peak.Store(live)
				}
			}
		})
	}
	wg.Wait()
	s := c.WardStats()
	if peak.Load() > 8 || s.Made > 8 || s.Loans != 64*50 {
		t.Errorf("peak %d live, %d made, %d loans", peak.Load(), s.Made, s.Loans)
	}
	honest(t, c)
}

// TestPGBadInput: wrong password, refused port, a canceled query.
func TestPGBadInput(t *testing.T) {
	noLeftovers(t)
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	u.User = url.UserPassword(u.User.Username(), "wrong")
	db, c, err := OpenDB(pgConnector(t, u.String()), sized(2))
	if err != nil {
		t.Fatal(err)
	}
	err = db.PingContext(ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Errorf("wrong password: %v", err)
	}
	if s := c.WardStats(); s.Live != 0 {
		t.Errorf("books: %+v", s.Books)
	}
	_ = db.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, _ = url.Parse(dsn)
	u.Host = l.Addr().String()
	_ = l.Close()
	var dials atomic.Int32
	cc, err := pgx.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	base := stdlib.GetConnector(*cc, stdlib.OptionBeforeConnect(func(context.Context, *pgx.ConnConfig) error {
		dials.Add(1)
		return nil
	}))
	cfg := sized(2)
	cfg.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())}
	db, c, err = OpenDB(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	shed := 0
	for range 50 {
		err := db.PingContext(ctx)
		var ce *pgconn.ConnectError
		switch {
		case errors.Is(err, wardpool.ErrShed):
			shed++
		case !errors.As(err, &ce):
			t.Fatalf("refused: %v", err)
		}
	}
	if d := dials.Load(); d > 25 || shed < 25 {
		t.Errorf("50 pings on a refusing port: %d dials, %d shed", d, shed)
	}
	{
		s := c.WardStats()
		if diff := cmp.Diff(pool.Books{Live: 0, Shed: uint64(shed)}, pool.Books{Live: s.Live, Shed: s.Shed}); diff != "" {
			t.Errorf("books (-want +got):\n%s", diff)
		}
	}
	_ = db.Close()

	db, c = openPG(t, sized(2))
	if err := db.PingContext(ctx); err != nil { // a connection ready, so the deadline falls in the query
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := db.ExecContext(short, "SELECT pg_sleep(30)"); !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Errorf("canceled query: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 3").Scan(&n); err != nil || n != 3 {
		t.Errorf("after a canceled query: %d, %v", n, err)
	}
	honest(t, c)
	_ = db.Close()
}

// TestPGPrepareAndRaw: on PostgreSQL through pgx's stdlib, a statement
// prepared on the *sql.DB stays prepared on the connection across borrows
// (the server lists it once, with the same name), and Raw reaches
// *stdlib.Conn, so *pgx.Conn.
func TestPGPrepareAndRaw(t *testing.T) {
	db, _ := openPG(t, sized(1))
	ctx := ctxT(t)
	const q = "SELECT $1::int + 0 /* sqlward prepare */"
	stmt, err := db.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	var prepared []time.Time
	for i := range 3 {
		var n int
		if err := stmt.QueryRowContext(ctx, i).Scan(&n); err != nil || n != i {
			t.Fatal(n, err)
		}
		var at time.Time
		if err := db.QueryRowContext(ctx, "SELECT prepare_time FROM pg_prepared_statements WHERE statement = $1", q).Scan(&at); err != nil {
			t.Fatalf("borrow %d: the statement is not prepared on the connection: %v", i, err)
		}
		prepared = append(prepared, at)
	}
	if !prepared[0].Equal(prepared[2]) {
		t.Errorf("prepared again between borrows: %v", prepared)
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = Raw(conn, func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("Raw handed %T, want *stdlib.Conn", dc)
		}
		if v := pc.Conn().PgConn().ParameterStatus("server_version"); v == "" {
			return errors.New("no server_version from *pgx.Conn")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
