package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	sqlward "github.com/wardpool/wardpool/drivers/sql"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

// sqlBenchConns is the size of both database/sql pools.
const sqlBenchConns = 8

// sqlBenchQuery is the statement both pools prepare with db.Prepare.
const sqlBenchQuery = "SELECT $1::int"

// sqlBenchStmt is one of the two pools under comparison, with its
// statement prepared on the *sql.DB.
type sqlBenchStmt struct {
	name string
	stmt *sql.Stmt
}

// BenchmarkSQLStmtQueryRowPaired runs stmt.QueryRow(...).Scan on a
// statement prepared with db.Prepare, on database/sql's own pool and on
// sqlward, both over pgx's stdlib connector to the same PostgreSQL
// (WARDPOOL_PG_DSN) with sqlBenchConns connections, at 1, 8 and 64
// goroutines. As in BenchmarkPgxQueryRowPaired, the two take turns in
// rounds of pgxPairRound queries within one run (database/sql first in odd
// rounds, second in even ones), and each one's ops/s and latency
// percentiles come from its own rounds only. b.N queries go to each.
// Metrics: database/sql-ops/s, sqlward-ops/s, ratio (sqlward over
// database/sql), and the p50 and p99 of each in µs; and round-ratio, the
// median over rounds of the ratio within one round of each (the two run
// back to back, so a swing of the machine's load that lasts longer than a
// round moves both sides of it alike: on a shared machine it scatters less
// than ratio).
//
//	WARDPOOL_TEST_PKGS=./bench/ ./scripts/test -run '^$' -bench SQLStmtQueryRowPaired
func BenchmarkSQLStmtQueryRowPaired(b *testing.B) {
	stmts := sqlBenchStmts(b)
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			lat := [2][]time.Duration{make([]time.Duration, b.N), make([]time.Duration, b.N)}
			var spent [2]time.Duration
			var rounds []float64 // database/sql's time over sqlward's, per round
			b.ReportAllocs()
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; round++ {
				n := min(pgxPairRound, b.N-done)
				var took [2]time.Duration
				for k := range 2 {
					i := k
					if round%2 == 1 {
						i = 1 - k
					}
					took[i] = stmtRound(b, stmts[i].stmt, g, lat[i][done:done+n])
					spent[i] += took[i]
				}
				rounds = append(rounds, took[0].Seconds()/took[1].Seconds())
				done += n
			}
			b.StopTimer()
			var ops [2]float64
			for i, s := range stmts {
				ops[i] = float64(b.N) / spent[i].Seconds()
				slices.Sort(lat[i])
				b.ReportMetric(ops[i], s.name+"-ops/s")
				b.ReportMetric(float64(lat[i][len(lat[i])/2].Nanoseconds())/1e3, s.name+"-p50-µs")
				b.ReportMetric(float64(lat[i][(len(lat[i])*99)/100].Nanoseconds())/1e3, s.name+"-p99-µs")
			}
			b.ReportMetric(ops[1]/ops[0], "ratio")
			slices.Sort(rounds)
			b.ReportMetric(rounds[len(rounds)/2], "round-ratio")
		})
	}
}

// sqlBenchStmts opens both pools on the test server, warm, each with the
// statement prepared, closed when the benchmark ends: database/sql's own
// pool first, then sqlward.
func sqlBenchStmts(b *testing.B) []sqlBenchStmt {
	dsn := testenv.PostgresDSN(b)
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	ref := sql.OpenDB(stdlib.GetConnector(*cc))
	ref.SetMaxOpenConns(sqlBenchConns)
	ref.SetMaxIdleConns(sqlBenchConns)
	b.Cleanup(func() { _ = ref.Close() })

	l := pool.DefaultLimits
	l.Size, l.Idle = sqlBenchConns, sqlBenchConns
	ward, _, err := sqlward.OpenDB(stdlib.GetConnector(*cc), sqlward.Config{Limits: l})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ward.Close() })

	var out []sqlBenchStmt
	for _, p := range []struct {
		name string
		db   *sql.DB
	}{{"database/sql", ref}, {"sqlward", ward}} {
		stmt, err := p.db.Prepare(sqlBenchQuery)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = stmt.Close() })
		// Warm: every connection opened and the statement prepared on it,
		// so that no dial or first prepare lands in a timed run.
		stmtRound(b, stmt, sqlBenchConns*2, make([]time.Duration, sqlBenchConns*64))
		out = append(out, sqlBenchStmt{p.name, stmt})
	}
	return out
}

// stmtRound runs len(lat) stmt.QueryRow+Scan calls over g goroutines,
// recording each one's latency in lat, and returns the round's wall time.
func stmtRound(b *testing.B, stmt *sql.Stmt, g int, lat []time.Duration) time.Duration {
	return timedRound(b, g, lat, func(ctx context.Context, i int, n *int) error {
		return stmt.QueryRowContext(ctx, i).Scan(n)
	})
}

// BenchmarkSQLStmtOverhead is stmt.QueryRow(...).Scan on a statement
// prepared with db.Prepare over a driver whose statements answer one row
// without I/O, on database/sql's own pool and on sqlward (8 connections
// each, one goroutine): what each pool and database/sql around it cost a
// query, without the server.
func BenchmarkSQLStmtOverhead(b *testing.B) {
	ref := sql.OpenDB(rowConnector{})
	ref.SetMaxIdleConns(sqlBenchConns)
	defer ref.Close()
	l := pool.DefaultLimits
	l.Size, l.Idle = sqlBenchConns, sqlBenchConns
	ward, _, err := sqlward.OpenDB(rowConnector{}, sqlward.Config{Limits: l})
	if err != nil {
		b.Fatal(err)
	}
	defer ward.Close()
	for _, p := range []struct {
		name string
		db   *sql.DB
	}{{"database/sql", ref}, {"sqlward", ward}} {
		b.Run(p.name, func(b *testing.B) {
			stmt, err := p.db.Prepare(sqlBenchQuery)
			if err != nil {
				b.Fatal(err)
			}
			defer stmt.Close()
			ctx := context.Background()
			var n int
			b.ReportAllocs()
			for b.Loop() {
				if err := stmt.QueryRowContext(ctx, 1).Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rowConnector opens connections whose statements answer one row, 1,
// without I/O.
type rowConnector struct{}

func (rowConnector) Connect(context.Context) (driver.Conn, error) { return rowConn{}, nil }
func (rowConnector) Driver() driver.Driver                        { return nopDriver{} }

type rowConn struct{ nopConn }

func (rowConn) Prepare(string) (driver.Stmt, error) { return rowStmt{}, nil }

type rowStmt struct{}

func (rowStmt) Close() error                               { return nil }
func (rowStmt) NumInput() int                              { return 1 }
func (rowStmt) Exec([]driver.Value) (driver.Result, error) { return nil, errNop }
func (rowStmt) Query([]driver.Value) (driver.Rows, error)  { return &oneRow{}, nil }

// oneRow is a result of one row with one column.
type oneRow struct{ done bool }

func (*oneRow) Columns() []string { return []string{"n"} }
func (*oneRow) Close() error      { return nil }
func (r *oneRow) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}
