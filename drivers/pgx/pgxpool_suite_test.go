package pgxward

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
// not build and is not on the list fails this test; a listed one that
// passes is reported, so the list can shrink. A test that hangs is cut off
// after suiteTimeout; one listed as "not run:" is not started at all.
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
	goBin := goCommand(t)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	root, pgxDir, pgxVersion := suiteModules(ctx, t, goBin)
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

	diffs := readDifferences(t, "testdata/pgxpool_differences.txt")
	dropped := buildSuite(ctx, t, goBin, dir)
	results := runSuite(ctx, t, goBin, dir, dsn, notRun(diffs))

	report := suiteReport(results, dropped, diffs)
	t.Logf("pgxpool %s suite against pgxward:\n%s", pgxVersion, report.text)
	for _, msg := range report.unexpected {
		t.Error(msg)
	}
}

// goCommand returns the go command on PATH, or skips the test.
func goCommand(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: skipping pgxpool's suite")
	}
	return p
}

// suiteModules returns this module's root, and the directory and version of
// the pgx module it builds with.
func suiteModules(ctx context.Context, t *testing.T, goBin string) (root, pgxDir, pgxVersion string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root = filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.CommandContext(ctx, goBin, "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/jackc/pgx/v5")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m github.com/jackc/pgx/v5: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] == "" {
		t.Skipf("pgx is not in the module cache (go list says %q): run `go mod download` first", out)
	}
	return root, f[0], f[1]
}

// suiteModulePath is the temporary module's path; pgx's internal pgmock
// package, which pgxpool's tests use, is copied under it.
const suiteModulePath = "pgxpoolsuite.test"

// writeSuiteModule fills dir with the temporary module: go.mod and go.sum,
// pgxpool's test files rewritten, and pgx's internal pgmock package.
func writeSuiteModule(t *testing.T, dir, root, pgxDir, pgxVersion string) {
	t.Helper()
	gomod := fmt.Sprintf(`module %s

go 1.26

require (
	github.com/jackc/pgx/v5 %s
	github.com/wardpool/wardpool v0.0.0
)

replace github.com/wardpool/wardpool => %s
`, suiteModulePath, pgxVersion, root)
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	// The sums both modules already trust; the go command adds what the
	// test files need beyond them.
	var sum []byte
	for _, p := range []string{filepath.Join(root, "go.sum"), filepath.Join(pgxDir, "go.sum")} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		sum = append(sum, b...)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)

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
		writeFile(t, filepath.Join(dir, filepath.Base(f)), []byte(rewrite.Replace(string(b))))
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
		writeFile(t, filepath.Join(dir, "pgmock", filepath.Base(f)), b)
	}
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// suiteEnv is the environment of the go commands run in the temporary
// module: it may add requirements to its go.mod, and its test binary finds
// the server where pgx's tests look for it.
func suiteEnv(dsn string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "PGX_TEST_")
	})
	env = append(env, "GOFLAGS=-mod=mod", "GOWORK=off")
	if dsn != "" {
		env = append(env, "PGX_TEST_DATABASE="+dsn)
	}
	return env
}

// compileError matches one line of the compiler's output: file:line:col: msg.
var compileError = regexp.MustCompile(`^(?:\./)?([^\s:]+\.go):(\d+):(\d+): (.*)$`)

// buildSuite compiles the test package in dir, dropping every top-level
// declaration the compiler complains about, until it builds. It returns
// what it dropped: each function's name and the first error met in it.
func buildSuite(ctx context.Context, t *testing.T, goBin, dir string) map[string]string {
	t.Helper()
	dropped := map[string]string{}
	for round := 0; round < 20; round++ {
		cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-gcflags=-e", "-c", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = suiteEnv("")
		out, err := cmd.CombinedOutput()
		if err == nil {
			return dropped
		}
		if ctx.Err() != nil {
			t.Fatalf("building pgxpool's suite took too long: %v\n%s", ctx.Err(), out)
		}
		if bytes.Contains(out, []byte("module lookup disabled")) || bytes.Contains(out, []byte("dial tcp")) {
			t.Skipf("pgxpool's suite needs modules the go command cannot fetch here; run `go mod download github.com/stretchr/testify` once with the module proxy reachable:\n%s", out)
		}
		byFile := map[string][]compileMsg{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			m := compileError.FindStringSubmatch(strings.TrimSpace(sc.Text()))
			if m == nil {
				continue
			}
			line, _ := strconv.Atoi(m[2])
			byFile[filepath.Base(m[1])] = append(byFile[filepath.Base(m[1])], compileMsg{line: line, msg: m[4]})
		}
		if len(byFile) == 0 {
			t.Fatalf("building pgxpool's suite failed with no error this test understands:\n%s", out)
		}
		for file, msgs := range byFile {
			dropDecls(t, filepath.Join(dir, file), msgs, dropped)
		}
	}
	t.Fatal("pgxpool's suite still does not build after 20 rounds of dropping what fails")
	return nil
}

type compileMsg struct {
	line int
	msg  string
}

// dropDecls removes from the Go file name every top-level declaration that
// holds one of msgs' lines (for an import, only that import), noting each
// function dropped and why in dropped.
func dropDecls(t *testing.T, name string, msgs []compileMsg, dropped map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	cmap := ast.NewCommentMap(fset, f, f.Comments)
	within := func(n ast.Node, line int) bool {
		return fset.Position(n.Pos()).Line <= line && line <= fset.Position(n.End()).Line
	}
	removed := 0
	for _, m := range msgs {
		for i, d := range f.Decls {
			if d == nil || !within(d, m.line) {
				continue
			}
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				g.Specs = slices.DeleteFunc(g.Specs, func(s ast.Spec) bool { return within(s, m.line) })
				f.Imports = slices.DeleteFunc(f.Imports, func(s *ast.ImportSpec) bool { return within(s, m.line) })
				removed++
				break
			}
			if _, seen := dropped[declName(d)]; !seen {
				dropped[declName(d)] = m.msg
			}
			f.Decls[i] = nil
			removed++
			break
		}
	}
	if removed == 0 {
		t.Fatalf("compile errors in %s on lines no declaration holds: %v", name, msgs)
	}
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool { return d == nil })
	f.Comments = cmap.Filter(f).Comments()
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		t.Fatal(err)
	}
	writeFile(t, name, buf.Bytes())
}

// declName names a top-level declaration: a function's name, or the first
// name a type, var or const declaration gives.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				return s.Name.Name
			case *ast.ValueSpec:
				return s.Names[0].Name
			}
		}
	}
	return "?"
}

// suiteEvent is the part of a go test -json event this test reads.
type suiteEvent struct {
	Action string
	Test   string
	Output string
}

// suiteTimeout is how long one round of the suite may run. pgxpool's suite
// takes well under a minute on its own (about 16 s under -race here), and
// up to four times that while every other package's tests run beside it
// (./scripts/test): one round took 63 s, and the test still running then
// was reported as hung although nothing was stuck. A test that hangs is cut
// off by the test binary's own timeout, marked as hung, and the tests it
// held up run in the next round.
const suiteTimeout = 3 * time.Minute

// runningTest matches a test named in the list the test binary prints when
// its timeout ends it.
var runningTest = regexp.MustCompile(`^\s+(Test[^\s/]*)\S* \(`)

// runSuite runs the built suite and returns each test's (and subtest's)
// outcome: "pass", "fail", "skip", or "hang" for one still running when the
// binary's timeout cut it off. Hung tests are left out of the next round,
// which runs whatever did not finish; there are at most four rounds.
func runSuite(ctx context.Context, t *testing.T, goBin, dir, dsn string, skip map[string]bool) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(ctx, goBin, "test", "-list", ".", ".")
	cmd.Dir = dir
	cmd.Env = suiteEnv(dsn)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing pgxpool's tests: %v\n%s", err, out)
	}
	var todo []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") && !skip[line] {
			todo = append(todo, line)
		}
	}
	results := map[string]string{}
	for round := 0; round < 4 && len(todo) > 0; round++ {
		hung := runRound(ctx, t, goBin, dir, dsn, todo, results)
		for _, n := range hung {
			results[n] = "hang"
		}
		todo = slices.DeleteFunc(todo, func(n string) bool {
			_, done := results[n]
			return done && results[n] != "run"
		})
	}
	for n, r := range results {
		if r == "run" {
			results[n] = "hang" // never finished in any round
		}
	}
	return results
}

// runRound runs the top-level tests in names once, recording each outcome
// in results ("run" for a test that started and never ended), and returns
// the tests the timeout found running.
func runRound(ctx context.Context, t *testing.T, goBin, dir, dsn string, names []string, results map[string]string) (hung []string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-json",
		"-timeout="+suiteTimeout.String(), "-run=^("+strings.Join(names, "|")+")$", ".")
	cmd.Dir = dir
	cmd.Env = suiteEnv(dsn)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("pgxpool's suite did not finish in time: %v", ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running pgxpool's suite: %v", err)
	}
	output := map[string]*strings.Builder{}
	timedOut := false
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var e suiteEvent
		if err := dec.Decode(&e); err != nil {
			break
		}
		if e.Action == "output" {
			if strings.HasPrefix(e.Output, "panic: test timed out") {
				timedOut = true
			} else if m := runningTest.FindStringSubmatch(e.Output); timedOut && m != nil && !slices.Contains(hung, m[1]) {
				hung = append(hung, m[1])
			}
		}
		if e.Test == "" {
			continue
		}
		switch e.Action {
		case "run":
			results[e.Test] = "run"
		case "pass", "fail", "skip":
			results[e.Test] = e.Action
		case "output":
			if output[e.Test] == nil {
				output[e.Test] = &strings.Builder{}
			}
			output[e.Test].WriteString(e.Output)
		}
	}
	if timedOut && len(hung) == 0 {
		t.Fatalf("pgxpool's suite timed out without naming the tests running:\n%s", out)
	}
	if testing.Verbose() {
		for _, n := range names {
			if results[n] == "fail" && output[n] != nil {
				t.Logf("%s output:\n%s", n, output[n])
			}
		}
	}
	return hung
}

// notRunPrefix starts the reason of an entry whose test is not run at all:
// one that hangs, and would cost the suite its whole timeout.
const notRunPrefix = "not run:"

// notRun returns the top-level tests the list says not to run.
func notRun(diffs map[string]string) map[string]bool {
	skip := map[string]bool{}
	for n, r := range diffs {
		if strings.HasPrefix(r, notRunPrefix) && !strings.Contains(n, "/") {
			skip[n] = true
		}
	}
	return skip
}

// readDifferences reads the list: one entry a line, "TestName: reason",
// with # comments and blank lines ignored. A reason that begins with
// "not run:" keeps the test from running (see notRunPrefix).
func readDifferences(t *testing.T, name string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	diffs := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if !ok || name == "" || strings.ContainsAny(name, " \t") || reason == "" {
			t.Fatalf("%s:%d: want \"TestName: reason\", got %q", name, i+1, line)
		}
		diffs[name] = reason
	}
	return diffs
}

type suiteOutcome struct {
	text       string
	unexpected []string
}

// suiteReport holds the results and the dropped declarations against the
// list of differences.
func suiteReport(results, dropped, diffs map[string]string) suiteOutcome {
	var o suiteOutcome
	var b strings.Builder
	count := map[string]int{}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range results {
			if !yield(n) {
				return
			}
		}
	})
	listed := func(name string) (string, bool) {
		// A subtest is covered by its parent's entry.
		for n := name; ; {
			if r, ok := diffs[n]; ok {
				return r, true
			}
			i := strings.LastIndex(n, "/")
			if i < 0 {
				return "", false
			}
			n = n[:i]
		}
	}
	for _, n := range names {
		r := results[n]
		count[r]++
		reason, ok := listed(n)
		switch {
		case (r == "fail" || r == "hang") && ok:
			fmt.Fprintf(&b, "  %s (listed) %s: %s\n", strings.ToUpper(r), n, reason)
		case r == "fail" || r == "hang":
			fmt.Fprintf(&b, "  %s %s\n", strings.ToUpper(r), n)
			o.unexpected = append(o.unexpected, fmt.Sprintf("pgxpool's %s %ss against pgxward and is not in testdata/pgxpool_differences.txt", n, r))
		case r == "pass" && ok:
			fmt.Fprintf(&b, "  pass (listed: the entry may go) %s\n", n)
		case r == "skip":
			fmt.Fprintf(&b, "  skip %s\n", n)
		}
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range notRun(diffs) {
			if !yield(n) {
				return
			}
		}
	}) {
		if _, ran := results[n]; !ran {
			count["not run"]++
			fmt.Fprintf(&b, "  NOT RUN (listed) %s: %s\n", n, strings.TrimSpace(strings.TrimPrefix(diffs[n], notRunPrefix)))
		}
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range dropped {
			if !yield(n) {
				return
			}
		}
	}) {
		if !strings.HasPrefix(n, "Test") && !strings.HasPrefix(n, "Benchmark") {
			// A helper; the tests that used it are dropped after it.
			fmt.Fprintf(&b, "  helper %s dropped: %s\n", n, dropped[n])
			continue
		}
		count["not built"]++
		if reason, ok := diffs[n]; ok {
			fmt.Fprintf(&b, "  NOT BUILT (listed) %s: %s\n", n, reason)
			continue
		}
		fmt.Fprintf(&b, "  NOT BUILT %s: %s\n", n, dropped[n])
		if strings.HasPrefix(n, "Test") {
			o.unexpected = append(o.unexpected, fmt.Sprintf("pgxpool's %s does not build against pgxward (%s) and is not in testdata/pgxpool_differences.txt", n, dropped[n]))
		}
	}
	o.text = fmt.Sprintf("  %d pass, %d fail, %d hang, %d skip, %d not built, %d not run (tests and subtests)\n%s",
		count["pass"], count["fail"], count["hang"], count["skip"], count["not built"], count["not run"], b.String())
	return o
}
