// Package peersuite runs a peer library's own tests against one of
// wardpool's drivers: the tests are copied at test time from the Go module
// cache into a temporary module (never into this repository), rewritten
// only where they build their client or open their database, compiled with
// every top-level declaration that does not build against the driver
// dropped, run with go test -json, and held against a committed list of
// accepted differences, one line each: "TestName: reason".
//
// A test that fails, hangs or does not build and is not on the list is
// unexpected; a listed one that passes is reported, so the list can
// shrink. A reason that begins with "not run:" keeps the test from being
// started at all (one that would hang); one that begins with "alone:"
// runs the test in a test binary of its own (one that fails and takes the
// binary down with it).
//
// It is for tests only; its functions fail or skip the testing.TB they are
// given.
package peersuite

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
)

// GoCommand returns the go command on PATH, or skips the test.
func GoCommand(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: skipping the peer's suite")
	}
	return p
}

// Module returns this module's root, and the directory and version in the
// module cache of the module path that this one builds with.
func Module(ctx context.Context, t testing.TB, goBin, path string) (root, dir, version string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root = filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.CommandContext(ctx, goBin, "list", "-m", "-f", "{{.Dir}} {{.Version}}", path)
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] == "" {
		t.Skipf("%s is not in the module cache (go list says %q): run `go mod download` first", path, out)
	}
	return root, f[0], f[1]
}

// WriteGoMod writes dir/go.mod for a module named modPath that requires
// the peer module at its version and this module (at root, replaced), and
// dir/go.sum from the go.sum files given (the sums both modules already
// trust; the go command adds what the tests need beyond them).
func WriteGoMod(t testing.TB, dir, modPath, peer, peerVersion, root string, sums ...string) {
	t.Helper()
	gomod := fmt.Sprintf(`module %s

go 1.26

require (
	%s %s
	github.com/wardpool/wardpool v0.0.0
)

replace github.com/wardpool/wardpool => %s
`, modPath, peer, peerVersion, root)
	WriteFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	var sum []byte
	for _, p := range sums {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		sum = append(sum, b...)
	}
	WriteFile(t, filepath.Join(dir, "go.sum"), sum)
}

// WriteFile writes b to name or fails the test.
func WriteFile(t testing.TB, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Env is the environment of the go commands run in the temporary module:
// it may add requirements to its go.mod, no workspace applies, variables
// with the prefixes in drop are removed, and extra is added.
func Env(drop []string, extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		if strings.HasPrefix(kv, "GOFLAGS=") {
			return true
		}
		for _, p := range drop {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	return append(append(env, "GOFLAGS=-mod=mod", "GOWORK=off"), extra...)
}

// compileError matches one line of the compiler's output: file:line:col: msg.
var compileError = regexp.MustCompile(`^(?:\./)?([^\s:]+\.go):(\d+):(\d+): (.*)$`)

// Build compiles the test package in dir, dropping every top-level
// declaration the compiler complains about, until it builds. It returns
// what it dropped: each declaration's name and the first error met in it.
func Build(ctx context.Context, t testing.TB, goBin, dir string, env []string) map[string]string {
	t.Helper()
	dropped := map[string]string{}
	for round := 0; round < 20; round++ {
		cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-gcflags=-e", "-c", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil {
			return dropped
		}
		if ctx.Err() != nil {
			t.Fatalf("building the peer's suite took too long: %v\n%s", ctx.Err(), out)
		}
		if bytes.Contains(out, []byte("module lookup disabled")) || bytes.Contains(out, []byte("dial tcp")) {
			t.Skipf("the peer's suite needs modules the go command cannot fetch here; run `go mod download github.com/stretchr/testify` once with the module proxy reachable:\n%s", out)
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
			t.Fatalf("building the peer's suite failed with no error this test understands:\n%s", out)
		}
		for file, msgs := range byFile {
			dropDecls(t, filepath.Join(dir, file), msgs, dropped)
		}
	}
	t.Fatal("the peer's suite still does not build after 20 rounds of dropping what fails")
	return nil
}

type compileMsg struct {
	line int
	msg  string
}

// dropDecls removes from the Go file name every top-level declaration that
// holds one of msgs' lines (for an import, only that import), noting each
// declaration dropped and why in dropped.
func dropDecls(t testing.TB, name string, msgs []compileMsg, dropped map[string]string) {
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
	WriteFile(t, name, buf.Bytes())
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

// event is the part of a go test -json event read here.
type event struct {
	Action string
	Test   string
	Output string
}

// runningTest matches a test named in the list the test binary prints when
// its timeout ends it.
var runningTest = regexp.MustCompile(`^\s+(Test[^\s/]*)\S* \(`)

// Run runs the built suite in dir and returns each test's (and subtest's)
// outcome: "pass", "fail", "skip", or "hang" for one still running when
// the binary's timeout (per round) cut it off. A test that panics ends the
// test binary, and the tests after it never start: so the tests that have
// no outcome yet run again in another round, as long as each round
// finishes some. A hung test is left out of the next round; one the
// binary died in without a timeout (a panic outside the test's goroutine,
// os.Exit) counts as failed. The tests diffs lists as "not run:" are not
// started; those it lists as "alone:" run after the others, each in a
// test binary of its own, so that a test that takes its binary down
// (a synctest deadlock's panic) fails alone. With go test -v, the output
// of each failing test is logged.
func Run(ctx context.Context, t testing.TB, goBin, dir string, env []string, timeout time.Duration, diffs map[string]string) map[string]string {
	t.Helper()
	skip, alone := NotRun(diffs), Alone(diffs)
	cmd := exec.CommandContext(ctx, goBin, "test", "-list", ".", ".")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the peer's tests: %v\n%s", err, out)
	}
	var todo, alones []string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case !strings.HasPrefix(line, "Test") || skip[line]:
		case alone[line]:
			alones = append(alones, line)
		default:
			todo = append(todo, line)
		}
	}
	results := map[string]string{}
	runRounds(ctx, t, goBin, dir, env, timeout, todo, results)
	for _, n := range alones {
		runRounds(ctx, t, goBin, dir, env, timeout, []string{n}, results)
	}
	return results
}

// runRounds runs the tests in todo in as many rounds as it takes (see
// Run), recording each outcome in results.
func runRounds(ctx context.Context, t testing.TB, goBin, dir string, env []string, timeout time.Duration, todo []string, results map[string]string) {
	t.Helper()
	for round := 0; len(todo) > 0; round++ {
		before := len(results)
		hung, timedOut := runRound(ctx, t, goBin, dir, env, timeout, todo, results)
		for _, n := range hung {
			results[n] = "hang"
		}
		for n, r := range results {
			if r != "run" {
				continue
			}
			if timedOut {
				delete(results, n) // held up by a hung test: runs again
			} else {
				results[n] = "fail" // the binary died while it ran
			}
		}
		todo = slices.DeleteFunc(todo, func(n string) bool {
			_, done := results[n]
			return done
		})
		if len(results) == before {
			t.Fatalf("round %d of the peer's suite finished no test; left: %v", round+1, todo)
		}
	}
}

// runRound runs the top-level tests in names once, recording each outcome
// in results ("run" for a test that started and never ended), and returns
// the tests the timeout found running and whether it ended the binary.
func runRound(ctx context.Context, t testing.TB, goBin, dir string, env []string, timeout time.Duration, names []string, results map[string]string) (hung []string, timedOut bool) {
	t.Helper()
	cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "-json",
		"-timeout="+timeout.String(), "-run=^("+strings.Join(names, "|")+")$", ".")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the peer's suite did not finish in time: %v", ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the peer's suite: %v", err)
	}
	output := map[string]*strings.Builder{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var e event
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
			top, _, _ := strings.Cut(e.Test, "/") // a subtest's output is its test's
			if output[top] == nil {
				output[top] = &strings.Builder{}
			}
			output[top].WriteString(e.Output)
		}
	}
	if timedOut && len(hung) == 0 {
		t.Fatalf("the peer's suite timed out without naming the tests running:\n%s", out)
	}
	if testing.Verbose() {
		for n, r := range results {
			if r == "fail" && output[n] != nil && !strings.Contains(n, "/") {
				t.Logf("%s output:\n%s", n, output[n])
			}
		}
	}
	return hung, timedOut
}

// NotRunPrefix starts the reason of an entry whose test is not run at all:
// one that hangs, and would cost the suite its whole timeout.
const NotRunPrefix = "not run:"

// AlonePrefix starts the reason of an entry whose test reaches its
// verdict but takes its test binary down with it (a panic the testing
// package cannot recover, such as synctest's deadlock), which would fail
// the tests running beside it: it runs in a binary of its own.
const AlonePrefix = "alone:"

// Alone returns the top-level tests the list says to run alone.
func Alone(diffs map[string]string) map[string]bool {
	alone := map[string]bool{}
	for n, r := range diffs {
		if strings.HasPrefix(r, AlonePrefix) && !strings.Contains(n, "/") {
			alone[n] = true
		}
	}
	return alone
}

// NotRun returns the top-level tests the list says not to run.
func NotRun(diffs map[string]string) map[string]bool {
	skip := map[string]bool{}
	for n, r := range diffs {
		if strings.HasPrefix(r, NotRunPrefix) && !strings.Contains(n, "/") {
			skip[n] = true
		}
	}
	return skip
}

// ReadDifferences reads the list: one entry a line, "TestName: reason",
// with # comments and blank lines ignored.
func ReadDifferences(t testing.TB, name string) map[string]string {
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
		test, reason, ok := strings.Cut(line, ":")
		test, reason = strings.TrimSpace(test), strings.TrimSpace(reason)
		if !ok || test == "" || strings.ContainsAny(test, " \t") || reason == "" {
			t.Fatalf("%s:%d: want \"TestName: reason\", got %q", name, i+1, line)
		}
		diffs[test] = reason
	}
	return diffs
}

// Outcome is a suite's results held against its list.
type Outcome struct {
	// Text is the counts and one line per test that did not simply pass.
	Text string
	// Counts are the tests and subtests by outcome: "pass", "fail",
	// "hang", "skip", "not built", "not run".
	Counts map[string]int
	// Unexpected are the messages for each failure not on the list.
	Unexpected []string
	// Stale are the entries of the list whose test ran and passed: the
	// list no longer says what is true of them.
	Stale []string
}

// Report holds the results and the dropped declarations against the list
// of differences (listName names it in messages; against names the driver).
// Without diffs (nil), nothing is unexpected: the plain run.
func Report(results, dropped, diffs map[string]string, against, listName string) Outcome {
	o := Outcome{Counts: map[string]int{}}
	var b strings.Builder
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
	for _, n := range sortedKeys(results) {
		r := results[n]
		o.Counts[r]++
		reason, ok := listed(n)
		switch {
		case (r == "fail" || r == "hang") && ok:
			fmt.Fprintf(&b, "  %s (listed) %s: %s\n", strings.ToUpper(r), n, reason)
		case r == "fail" || r == "hang":
			fmt.Fprintf(&b, "  %s %s\n", strings.ToUpper(r), n)
			if diffs != nil {
				o.Unexpected = append(o.Unexpected, fmt.Sprintf("%s %ss against %s and is not in %s", n, r, against, listName))
			}
		case r == "pass" && ok:
			fmt.Fprintf(&b, "  pass (listed: the entry may go) %s\n", n)
			if _, entry := diffs[n]; entry {
				o.Stale = append(o.Stale, n)
			}
		case r == "skip":
			fmt.Fprintf(&b, "  skip %s\n", n)
		}
	}
	for _, n := range sortedKeys(NotRun(diffs)) {
		if _, ran := results[n]; !ran {
			o.Counts["not run"]++
			fmt.Fprintf(&b, "  NOT RUN (listed) %s: %s\n", n, strings.TrimSpace(strings.TrimPrefix(diffs[n], NotRunPrefix)))
		}
	}
	for _, n := range sortedKeys(dropped) {
		if !strings.HasPrefix(n, "Test") && !strings.HasPrefix(n, "Benchmark") {
			// A helper; the tests that used it are dropped after it.
			fmt.Fprintf(&b, "  helper %s dropped: %s\n", n, dropped[n])
			continue
		}
		o.Counts["not built"]++
		if reason, ok := diffs[n]; ok {
			fmt.Fprintf(&b, "  NOT BUILT (listed) %s: %s\n", n, reason)
			continue
		}
		fmt.Fprintf(&b, "  NOT BUILT %s: %s\n", n, dropped[n])
		if strings.HasPrefix(n, "Test") && diffs != nil {
			o.Unexpected = append(o.Unexpected, fmt.Sprintf("%s does not build against %s (%s) and is not in %s", n, against, dropped[n], listName))
		}
	}
	o.Text = fmt.Sprintf("  %d pass, %d fail, %d hang, %d skip, %d not built, %d not run (tests and subtests)\n%s",
		o.Counts["pass"], o.Counts["fail"], o.Counts["hang"], o.Counts["skip"], o.Counts["not built"], o.Counts["not run"], b.String())
	return o
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
