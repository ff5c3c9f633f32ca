package sqlward

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/peersuite"
	"github.com/wardpool/wardpool/internal/testenv"
)

// TestStdlibSuite runs pgx's stdlib package tests (database/sql on pgx)
// against this package. At test time it copies the external test files of
// pgx's stdlib package, from the pgx module that go.mod names, into a
// temporary module and changes one thing in them: how a database is
// opened. stdlib.OpenDB(config, opts…), sql.Open("pgx", dsn) and
// stdlib.OpenDBFromPool(pool, opts…) become sqlward.OpenDB over the
// connector each would have used (stdlib.GetConnector, the driver's
// OpenConnector, stdlib.GetPoolConnector), with a Config whose Size is
// 1<<16, more than any test opens (database/sql's own pool has no limit;
// sqlward refuses a Config without a Size). Every test body is as
// pgx wrote it. It runs them on the server in WARDPOOL_PG_DSN and holds
// the outcome against testdata/stdlib_differences.txt, each difference
// with its reason: a test that fails, hangs or does not build and is not
// listed fails this test; a listed one that passes is reported, so the
// list can shrink.
//
// (*sql.Conn).Raw cannot hand the driver's connection through this
// package (see the package doc), and pgx's tests call Raw first thing in
// many tests (to skip on CockroachDB). So the subtest "unwrapped" runs the
// suite once more with the one change a user makes for that, the Raw
// functions' driverConn passed through sqlward.Unwrap, and holds it
// against testdata/stdlib_unwrapped_differences.txt: the tests behind
// those Raw calls are held too.
//
// With WARDPOOL_STDLIB_PLAIN=1 it also runs the files unchanged, on pgx's
// own database/sql pool, and logs the counts.
//
// pgx's files are never part of this repository; the temporary module
// needs pgx's test-only dependency (testify), which the go command takes
// from the module cache. It is skipped under -short and without
// WARDPOOL_PG_DSN. WARDPOOL_STDLIB_KEEP=1 keeps the temporary modules and
// prints their paths.
func TestStdlibSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping pgx's stdlib suite (it builds and runs a second module)")
	}
	dsn := testenv.PostgresDSN(t)
	goBin := peersuite.GoCommand(t)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	root, pgxDir, pgxVersion := peersuite.Module(ctx, t, goBin, "github.com/jackc/pgx/v5")
	s := stdlibSuite{goBin: goBin, root: root, pgxDir: pgxDir, pgxVersion: pgxVersion, dsn: dsn}

	for _, m := range []struct {
		name, list string
		mode       stdlibMode
	}{
		{"opened", "testdata/stdlib_differences.txt", stdlibOpened},
		{"unwrapped", "testdata/stdlib_unwrapped_differences.txt", stdlibUnwrapped},
	} {
		t.Run(m.name, func(t *testing.T) {
			diffs := peersuite.ReadDifferences(t, m.list)
			r := s.run(ctx, t, m.mode, diffs)
			report := peersuite.Report(r.results, r.dropped, diffs, "sqlward", m.list)
			t.Logf("pgx %s stdlib suite through sqlward.OpenDB (%s):\n%s", pgxVersion, m.name, report.Text)
			for _, msg := range report.Unexpected {
				t.Error(msg)
			}
		})
	}
	if os.Getenv("WARDPOOL_STDLIB_PLAIN") == "1" {
		r := s.run(ctx, t, stdlibPlain, nil)
		p := peersuite.Report(r.results, r.dropped, nil, "pgx's stdlib", "")
		t.Logf("the same suite on pgx's stdlib as written:\n%s", p.Text)
	}
}

// stdlibMode is how the suite's files are changed.
type stdlibMode int

const (
	stdlibPlain     stdlibMode = iota // as written
	stdlibOpened                      // opened through sqlward
	stdlibUnwrapped                   // and Raw's driverConn unwrapped
)

// stdlibSuite is where pgx's suite comes from and runs.
type stdlibSuite struct {
	goBin, root, pgxDir, pgxVersion, dsn string
}

type stdlibRun struct {
	results, dropped map[string]string
}

// stdlibModulePath is the temporary module's path.
const stdlibModulePath = "stdlibsuite.test"

// stdlibOpeners is the file added to the suite through sqlward: the three
// ways pgx's tests open a database, each on sqlward over the connector it
// would have used.
const stdlibOpeners = `package stdlib_test

import (
	"database/sql"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	sqlward "github.com/wardpool/wardpool/drivers/sql"
)

func wardOpen(c driver.Connector) *sql.DB {
	var cfg sqlward.Config
	cfg.Limits.Size = 1 << 16
	db, _, err := sqlward.OpenDB(c, cfg)
	if err != nil {
		panic(err)
	}
	return db
}

func wardOpenDB(config pgx.ConnConfig, opts ...stdlib.OptionOpenDB) *sql.DB {
	return wardOpen(stdlib.GetConnector(config, opts...))
}

func wardOpenDBFromPool(pool *pgxpool.Pool, opts ...stdlib.OptionOpenDB) *sql.DB {
	return wardOpen(stdlib.GetPoolConnector(pool, opts...))
}

func wardSQLOpen(driverName, dsn string) (*sql.DB, error) {
	if driverName != "pgx" && driverName != "pgx/v5" {
		return sql.Open(driverName, dsn)
	}
	c, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return wardOpen(c), nil
}
`

// run writes, builds and runs the suite in a temporary module,
// through sqlward or as written.
func (s stdlibSuite) run(ctx context.Context, t *testing.T, mode stdlibMode, diffs map[string]string) stdlibRun {
	t.Helper()
	goBin, root, pgxDir, pgxVersion, dsn := s.goBin, s.root, s.pgxDir, s.pgxVersion, s.dsn
	through := mode != stdlibPlain
	dir := t.TempDir()
	if os.Getenv("WARDPOOL_STDLIB_KEEP") == "1" {
		d, err := os.MkdirTemp("", "stdlib-suite-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Logf("temporary module kept in %s", dir)
	}
	peersuite.WriteGoMod(t, dir, stdlibModulePath, "github.com/jackc/pgx/v5", pgxVersion, root,
		filepath.Join(root, "go.sum"), filepath.Join(pgxDir, "go.sum"))
	files, err := filepath.Glob(filepath.Join(pgxDir, "stdlib", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", filepath.Join(pgxDir, "stdlib"), err)
	}
	opened := []string{
		"stdlib.OpenDB(", "wardOpenDB(",
		"stdlib.OpenDBFromPool(", "wardOpenDBFromPool(",
		"sql.Open(", "wardSQLOpen(",
	}
	if mode == stdlibUnwrapped {
		opened = append(opened, "driverConn.(*stdlib.Conn)", "sqlward.Unwrap(driverConn).(*stdlib.Conn)")
	}
	rewrite := strings.NewReplacer(opened...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\npackage stdlib_test\n") && !strings.HasPrefix(string(b), "package stdlib_test\n") {
			continue // an internal test of package stdlib: not ours to build
		}
		if through {
			b = []byte(rewrite.Replace(string(b)))
			if mode == stdlibUnwrapped && bytes.Contains(b, []byte("sqlward.Unwrap(")) {
				b = bytes.Replace(b, []byte("\nimport (\n"), []byte("\nimport (\n\tsqlward \"github.com/wardpool/wardpool/drivers/sql\"\n"), 1)
			}
		}
		peersuite.WriteFile(t, filepath.Join(dir, filepath.Base(f)), b)
	}
	if through {
		peersuite.WriteFile(t, filepath.Join(dir, "sqlward_open_test.go"), []byte(stdlibOpeners))
	}
	env := peersuite.Env([]string{"PGX_TEST_", "PGX_BENCH_"}, "PGX_TEST_DATABASE="+dsn)
	dropped := peersuite.Build(ctx, t, goBin, dir, env)
	results := peersuite.Run(ctx, t, goBin, dir, env, 3*time.Minute, diffs)
	return stdlibRun{results: results, dropped: dropped}
}
