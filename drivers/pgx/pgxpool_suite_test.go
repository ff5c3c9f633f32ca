package pgxward

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/peersuite"
	"github.com/wardpool/wardpool/internal/testenv"
)

// TestPgxpoolSuite runs pgxpool's own tests against this package. At test
// time it copies the *_test.go files of pgxpool, from the pgx module that
// go.mod names, into a temporary module; rewrites their import of pgxpool
// to this package (keeping the name pgxpool, so every pgxpool.X reads
// pgxward.X); drops each top-level declaration that does not compile
// against our API; runs go test there on the server in WARDPOOL_PG_DSN; and
// holds the outcome against testdata/pgxpool_differences.txt, the list of
// deliberate differences, each with its reason. A test that fails or does
// not build and is not on the list fails this test, and so does a listed
// one that passes: the list says what is true today. A test that hangs is
// cut off after suiteTimeout; one listed as "not run:" is not started at
// all.
//
// pgx's files are never part of this repository: they are read from the Go
// module cache, where the build of this module puts them. The temporary
// module also needs pgx's test-only dependency (testify); the go command
// fetches it like any other module when the cache lacks it.
//
// It is skipped under -short and without WARDPOOL_PG_DSN. Set
// WARDPOOL_PGXPOOL_KEEP=1 to keep the temporary module and print its path.
func TestPgxpoolSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping pgxpool's suite (it builds and runs a second module)")
	}
	dsn := testenv.PostgresDSN(t)
	goBin := peersuite.GoCommand(t)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	root, pgxDir, pgxVersion := peersuite.Module(ctx, t, goBin, "github.com/jackc/pgx/v5")
	dir := t.TempDir()
	if os.Getenv("WARDPOOL_PGXPOOL_KEEP") == "1" {
		d, err := os.MkdirTemp("", "pgxpool-suite-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Logf("temporary module kept in %s", dir)
	}
	writeSuiteModule(t, dir, root, pgxDir, pgxVersion)

	const list = "testdata/pgxpool_differences.txt"
	diffs := peersuite.ReadDifferences(t, list)
	dropped := peersuite.Build(ctx, t, goBin, dir, suiteEnv(""))
	results := peersuite.Run(ctx, t, goBin, dir, suiteEnv(dsn), suiteTimeout, diffs)

	report := peersuite.Report(results, dropped, diffs, "pgxward", list)
	t.Logf("pgxpool %s suite against pgxward:\n%s", pgxVersion, report.Text)
	for _, msg := range report.Unexpected {
		t.Error(msg)
	}
	// The list says what is true today: an entry whose test passes goes.
	for _, n := range report.Stale {
		t.Errorf("%s passes against pgxward but is listed in %s: remove the entry", n, list)
	}
}

// suiteModulePath is the temporary module's path; pgx's internal pgmock
// package, which pgxpool's tests use, is copied under it.
const suiteModulePath = "pgxpoolsuite.test"

// writeSuiteModule fills dir with the temporary module: go.mod and go.sum,
// pgxpool's test files rewritten, and pgx's internal pgmock package.
func writeSuiteModule(t *testing.T, dir, root, pgxDir, pgxVersion string) {
	t.Helper()
	peersuite.WriteGoMod(t, dir, suiteModulePath, "github.com/jackc/pgx/v5", pgxVersion, root,
		filepath.Join(root, "go.sum"), filepath.Join(pgxDir, "go.sum"))

	files, err := filepath.Glob(filepath.Join(pgxDir, "pgxpool", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", filepath.Join(pgxDir, "pgxpool"), err)
	}
	rewrite := strings.NewReplacer(
		`"github.com/jackc/pgx/v5/pgxpool"`, `pgxpool "github.com/wardpool/wardpool/drivers/pgx"`,
		`"github.com/jackc/pgx/v5/internal/pgmock"`, `"`+suiteModulePath+`/pgmock"`,
	)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		peersuite.WriteFile(t, filepath.Join(dir, filepath.Base(f)), []byte(rewrite.Replace(string(b))))
	}
	mocks, err := filepath.Glob(filepath.Join(pgxDir, "internal", "pgmock", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pgmock"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range mocks {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		peersuite.WriteFile(t, filepath.Join(dir, "pgmock", filepath.Base(f)), b)
	}
}

// suiteEnv is the environment of the go commands run in the temporary
// module: its test binary finds the server where pgx's tests look for it.
func suiteEnv(dsn string) []string {
	if dsn == "" {
		return peersuite.Env([]string{"PGX_TEST_"})
	}
	return peersuite.Env([]string{"PGX_TEST_"}, "PGX_TEST_DATABASE="+dsn)
}

// suiteTimeout is how long one round of the suite may run. pgxpool's suite
// takes well under a minute on its own (about 16 s under -race here), and
// up to four times that while every other package's tests run beside it
// (./scripts/test): one round took 63 s, and the test still running then
// was reported as hung although nothing was stuck. A test that hangs is cut
// off by the test binary's own timeout, marked as hung, and the tests it
// held up run in the next round.
const suiteTimeout = 3 * time.Minute
