package redisward

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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/peersuite"
)

// TestGoRedisSuite runs go-redis's own ginkgo suite through Pool.Client.
// At test time it copies the go-redis module that go.mod names, from the
// module cache, into a temporary module of the same path (the suite uses
// go-redis's internal packages), with none of go-redis's tests but the
// spec files of goRedisSpecFiles and main_test.go, their helpers. It
// changes two things in them: every redis.NewClient in the spec files
// becomes wardNewClient, which builds a redisward.Pool from the same
// options and returns its Client(); and main_test.go's BeforeSuite, which
// connects to the ring, sentinel and cluster servers of go-redis's docker
// setup, only reads the address of one server. Top-level declarations that
// do not compile then are dropped and reported. It runs the suite twice on
// a redis-server of its own (the suite flushes it): once with wardNewClient
// answering redis.NewClient itself (plain go-redis), once through the
// pool, and holds every spec that passes plain and fails through the pool
// against testdata/goredis_differences.txt, the accepted differences: one
// not listed fails this test, and a listed one that passes is reported so
// the list can shrink.
//
// go-redis's files are never part of this repository. The suite needs
// ginkgo and gomega (bsm's forks, at the versions go-redis's go.mod
// names): the go command fetches them like any module when the cache
// lacks them. Skipped under -short, without WARDPOOL_REDIS_ADDR (the sign
// that ./scripts/test set up Redis), and without redis-server. Set
// WARDPOOL_GOREDIS_KEEP=1 to keep the temporary module and print its path.
func TestGoRedisSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping go-redis's suite (it builds and runs a second module)")
	}
	srv := ownRedis(t) // skips without WARDPOOL_REDIS_ADDR or redis-server
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: skipping go-redis's suite")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	root, modDir, version := peersuite.Module(ctx, t, goBin, "github.com/redis/go-redis/v9")
	dir := t.TempDir()
	if os.Getenv("WARDPOOL_GOREDIS_KEEP") == "1" {
		if dir, err = os.MkdirTemp("", "goredis-suite-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("temporary module kept in %s", dir)
	}
	writeGoRedisModule(t, dir, root, modDir)
	dropped := buildGoRedisSuite(ctx, t, goBin, dir)

	diffs := readSpecDifferences(t, "testdata/goredis_differences.txt")
	redisVersion := serverVersion(t, srv.Addr)
	// Both ways at once, each on a server of its own (the specs flush it).
	srv2 := ownRedis(t)
	var plain map[string]specResult
	var plainErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		plain, plainErr = runGoRedisSuite(ctx, dir, srv2.Addr, redisVersion, true, notRunSpecs(diffs))
	}()
	ours, err := runGoRedisSuite(ctx, dir, srv.Addr, redisVersion, false, notRunSpecs(diffs))
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	o := specReport(plain, ours, dropped, diffs)
	t.Logf("go-redis %s suite (%s), on redis-server %s:\n%s", version, strings.Join(goRedisSpecFiles, ", "), redisVersion, o.text)
	for _, msg := range o.unexpected {
		t.Error(msg)
	}
}

// goRedisSpecFiles are the spec files of go-redis's suite that build their
// client from redisOptions() and need one plain server: those the issue
// measured. Its other specs need a cluster, a sentinel, Redis Stack
// modules or TLS certificates that a throw-away redis-server lacks.
var goRedisSpecFiles = []string{
	"acl_commands_test.go", "array_commands_test.go", "bitmap_commands_test.go",
	"command_test.go", "commands_test.go", "himport_commands_test.go",
	"hotkeys_commands_test.go", "iterator_test.go", "pipeline_test.go",
	"pool_test.go", "pubsub_test.go", "race_test.go", "redis_test.go",
	"script_server_sha_integration_test.go", "tx_test.go", "tx_unwatch_test.go",
}

// goRedisSkip are the specs of goRedisSpecFiles left out, as ginkgo -skip
// patterns: they need a Redis Cluster, which a throw-away redis-server is
// not, and each spends 30 s finding out (they fail on plain go-redis too).
var goRedisSkip = []string{`cluster races `}

// goRedisHelperFiles hold what the spec files use (ctx, the ACL and
// search helpers, the exports of export_test.go, …): they are copied with
// their own specs taken out (stripSpecs), and their Test and Example
// functions are not run.
var goRedisHelperFiles = []string{
	"main_test.go", "example_test.go", "export_test.go", "command_recorder_test.go",
	"re_endpoints_test.go", "search_test.go", "osscluster_test.go",
}

// writeGoRedisModule fills dir with the temporary module: go-redis's
// non-test sources, its go.mod requiring this module too, the spec files
// rewritten, and the file that builds clients through the pool.
func writeGoRedisModule(t *testing.T, dir, root, modDir string) {
	t.Helper()
	err := filepath.WalkDir(modDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(modDir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") && name != "go.mod" && name != "go.sum" {
			return nil
		}
		spec, helper := slices.Contains(goRedisSpecFiles, name), slices.Contains(goRedisHelperFiles, name)
		if strings.HasSuffix(name, "_test.go") && (filepath.Dir(rel) != "." || !spec && !helper) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case rel == "go.mod":
			b = fmt.Appendf(b, "\nrequire github.com/wardpool/wardpool v0.0.0\n\nreplace github.com/wardpool/wardpool => %s\n", root)
		case rel == "go.sum":
			own, err := os.ReadFile(filepath.Join(root, "go.sum"))
			if err != nil {
				return err
			}
			b = append(b, own...)
		case rel == "main_test.go":
			b = rewriteSuiteMain(t, b)
		case helper:
			b = stripSpecs(t, name, b)
		case spec:
			b = bytes.ReplaceAll(b, []byte("redis.NewClient("), []byte("wardNewClient("))
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying go-redis from %s: %v", modDir, err)
	}
	peersuite.WriteFile(t, filepath.Join(dir, "wardpool_suite_test.go"), []byte(wardSuiteFile))
}

// stripSpecs removes from a helper file every top-level ginkgo container
// (var _ = Describe(…), Context(…), …), keeping its helpers.
func stripSpecs(t *testing.T, name string, src []byte) []byte {
	t.Helper()
	if name == "main_test.go" {
		return rewriteSuiteMain(t, src)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	cmap := ast.NewCommentMap(fset, f, f.Comments)
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR || len(g.Specs) != 1 {
			return false
		}
		vs := g.Specs[0].(*ast.ValueSpec)
		if vs.Names[0].Name != "_" || len(vs.Values) != 1 {
			return false
		}
		call, ok := vs.Values[0].(*ast.CallExpr)
		if !ok {
			return false
		}
		fn, ok := call.Fun.(*ast.Ident)
		return ok && (strings.HasSuffix(fn.Name, "Describe") || strings.HasSuffix(fn.Name, "Context") || strings.HasSuffix(fn.Name, "Suite"))
	})
	f.Comments = cmap.Filter(f).Comments()
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewriteSuiteMain replaces main_test.go's BeforeSuite and AfterSuite,
// which start and stop go-redis's docker setup (ring shards, sentinels, a
// cluster), with suiteBefore and nothing.
func rewriteSuiteMain(t *testing.T, src []byte) []byte {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		from, to int
		with     string
	}
	var spans []span
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR || len(g.Specs) != 1 {
			continue
		}
		vs := g.Specs[0].(*ast.ValueSpec)
		if len(vs.Values) != 1 {
			continue
		}
		call, ok := vs.Values[0].(*ast.CallExpr)
		if !ok {
			continue
		}
		fn, ok := call.Fun.(*ast.Ident)
		if !ok {
			continue
		}
		switch fn.Name {
		case "BeforeSuite":
			spans = append(spans, span{fset.Position(g.Pos()).Offset, fset.Position(g.End()).Offset, suiteBefore})
		case "AfterSuite":
			spans = append(spans, span{fset.Position(g.Pos()).Offset, fset.Position(g.End()).Offset, ""})
		}
	}
	if len(spans) != 2 {
		t.Fatalf("main_test.go: found %d of BeforeSuite and AfterSuite, want both: go-redis's suite changed shape", len(spans))
	}
	slices.SortFunc(spans, func(a, b span) int { return b.from - a.from })
	for _, s := range spans {
		src = slices.Concat(src[:s.from], []byte(s.with), src[s.to:])
	}
	return src
}

// suiteBefore is main_test.go's BeforeSuite for one plain server.
const suiteBefore = `var _ = BeforeSuite(func() {
	redisAddr = os.Getenv("WARDPOOL_SUITE_REDIS_ADDR")
	_, redisPort, _ = net.SplitHostPort(redisAddr)
	if v := os.Getenv("REDIS_VERSION"); v != "" {
		redisMajorVersion, redisMinorVersion = parseRedisVersionStr(v)
		RedisVersion, _ = strconv.ParseFloat(v, 64)
	}
	logging.Disable()
})`

// wardSuiteFile builds the suite's clients: through a redisward.Pool,
// unless WARDPOOL_SUITE_PLAIN=1. A pool is closed after the spec that
// closed its client, and the rest when the suite ends.
const wardSuiteFile = `package redis_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	. "github.com/bsm/ginkgo/v2"
	"github.com/redis/go-redis/v9"

	redisward "github.com/wardpool/wardpool/drivers/redis"
)

var wardPools = struct {
	sync.Mutex
	m map[*redis.Client]*redisward.Pool
}{m: map[*redis.Client]*redisward.Pool{}}

func wardNewClient(opt *redis.Options) *redis.Client {
	if os.Getenv("WARDPOOL_SUITE_PLAIN") == "1" {
		return redis.NewClient(opt)
	}
	cfg := redisward.FromOptions(opt)
	cfg.Lazy = true // as redis.NewClient, which dials nothing
	p, err := redisward.New(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	c := p.Client()
	wardPools.Lock()
	wardPools.m[c] = p
	wardPools.Unlock()
	return c
}

func wardClosePools(all bool) {
	wardPools.Lock()
	defer wardPools.Unlock()
	for c, p := range wardPools.m {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if all || errors.Is(c.Ping(ctx).Err(), redis.ErrClosed) {
			_ = p.Close(ctx)
			delete(wardPools.m, c)
		}
		cancel()
	}
}

var _ = AfterEach(func() { wardClosePools(false) })

var _ = AfterSuite(func() { wardClosePools(true) })
`

// suiteCompileError matches one line of the compiler's output.
var suiteCompileError = regexp.MustCompile(`^(?:\./)?([^\s:/]+\.go):(\d+):(\d+): (.*)$`)

// buildGoRedisSuite compiles the suite in dir to dir/suite.test, dropping
// every top-level declaration of a test file the compiler complains about
// until it builds, and returns what it dropped: a name (a function's, or
// a Describe's text) and the first error met in it.
func buildGoRedisSuite(ctx context.Context, t *testing.T, goBin, dir string) map[string]string {
	t.Helper()
	dropped := map[string]string{}
	for round := 0; round < 30; round++ {
		// -trimpath keeps the temporary directory's name out of the build,
		// so that the build cache serves the next run.
		cmd := exec.CommandContext(ctx, goBin, "test", "-trimpath", "-gcflags=-e", "-c", "-o", "suite.test", ".")
		cmd.Dir = dir
		cmd.Env = peersuite.Env(nil)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return dropped
		}
		if ctx.Err() != nil {
			t.Fatalf("building go-redis's suite took too long: %v\n%s", ctx.Err(), out)
		}
		if bytes.Contains(out, []byte("module lookup disabled")) || bytes.Contains(out, []byte("dial tcp")) {
			t.Skipf("go-redis's suite needs modules the go command cannot fetch here (ginkgo, gomega); run `go mod download github.com/bsm/ginkgo/v2 github.com/bsm/gomega` once with the module proxy reachable:\n%s", out)
		}
		byFile := map[string][]int{}
		var msgs = map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			m := suiteCompileError.FindStringSubmatch(strings.TrimSpace(sc.Text()))
			if m == nil || !strings.HasSuffix(m[1], "_test.go") {
				continue
			}
			line, _ := strconv.Atoi(m[2])
			byFile[m[1]] = append(byFile[m[1]], line)
			msgs[m[1]+":"+m[2]] = m[4]
		}
		if len(byFile) == 0 {
			t.Fatalf("building go-redis's suite failed with no error in a test file:\n%s", out)
		}
		for file, lines := range byFile {
			dropSuiteDecls(t, filepath.Join(dir, file), lines, func(name string, line int) {
				if _, seen := dropped[name]; !seen {
					dropped[name] = fmt.Sprintf("%s:%d: %s", file, line, msgs[file+":"+strconv.Itoa(line)])
				}
			})
		}
	}
	t.Fatal("go-redis's suite still does not build after 30 rounds of dropping what fails")
	return nil
}

// dropSuiteDecls removes from the Go file name every top-level declaration
// that holds one of lines (for an import, that import alone), telling drop
// the name of each and the line that dropped it.
func dropSuiteDecls(t *testing.T, name string, lines []int, drop func(name string, line int)) {
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
	for _, line := range lines {
		for i, d := range f.Decls {
			if d == nil || !within(d, line) {
				continue
			}
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
				g.Specs = slices.DeleteFunc(g.Specs, func(s ast.Spec) bool { return within(s, line) })
				f.Imports = slices.DeleteFunc(f.Imports, func(s *ast.ImportSpec) bool { return within(s, line) })
			} else {
				drop(filepath.Base(name)+" "+suiteDeclName(d), line)
				f.Decls[i] = nil
			}
			removed++
			break
		}
	}
	if removed == 0 {
		t.Fatalf("compile errors in %s on lines no declaration holds: %v", name, lines)
	}
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool { return d == nil })
	f.Comments = cmap.Filter(f).Comments()
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		t.Fatal(err)
	}
	peersuite.WriteFile(t, name, buf.Bytes())
}

// suiteDeclName names a top-level declaration: a function's name, the
// text of a var _ = Describe("text", …), or the first name declared.
func suiteDeclName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				return s.Name.Name
			case *ast.ValueSpec:
				if s.Names[0].Name == "_" && len(s.Values) == 1 {
					if call, ok := s.Values[0].(*ast.CallExpr); ok && len(call.Args) > 0 {
						if lit, ok := call.Args[0].(*ast.BasicLit); ok {
							return "Describe " + lit.Value
						}
					}
				}
				return s.Names[0].Name
			}
		}
	}
	return "?"
}

// serverVersion returns the major.minor version of the server at addr,
// which go-redis's specs read to skip what the server cannot do.
func serverVersion(t *testing.T, addr string) string {
	t.Helper()
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", addr[strings.LastIndex(addr, ":")+1:], "INFO", "server").Output()
	if err != nil {
		t.Fatalf("redis-cli INFO server: %v", err)
	}
	m := regexp.MustCompile(`redis_version:(\d+)\.(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no redis_version in INFO server:\n%s", out)
	}
	return string(m[1]) + "." + string(m[2])
}

// specResult is one spec's outcome: "passed", "failed", "skipped",
// "pending", "panicked", "interrupted", "timedout", or "not run" (listed).
type specResult struct {
	state   string
	message string // the failure's message, for failed ones
	where   string // file:line of the spec
}

// ginkgoSpec is the part of a ginkgo JSON report this test reads.
type ginkgoSpec struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	LeafNodeLocation        struct {
		FileName   string
		LineNumber int
	}
	State   string
	Failure struct {
		Message string
	}
}

// specName is a spec's full text, its containers' texts and its own,
// joined by " / ".
func specName(s ginkgoSpec) string {
	return strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " / ")
}

// runGoRedisSuite runs the built suite once, plain or through the pool,
// skipping the specs in skip, and returns each spec's outcome by name.
func runGoRedisSuite(ctx context.Context, dir, addr, version string, plain bool, skip []string) (map[string]specResult, error) {
	report := filepath.Join(dir, fmt.Sprintf("report-plain-%v.json", plain))
	args := []string{"-test.count=1", "-test.run=^TestGinkgoSuite$", "-ginkgo.json-report=" + report, "-ginkgo.timeout=5m", "-ginkgo.no-color", "-ginkgo.seed=1"}
	// ginkgo matches -skip against the suite's description ("go-redis")
	// and the spec's texts, joined by spaces.
	quoted := slices.Clone(goRedisSkip)
	for _, s := range skip {
		quoted = append(quoted, regexp.QuoteMeta(strings.ReplaceAll(s, " / ", " "))+"$")
	}
	args = append(args, "-ginkgo.skip=^go-redis ("+strings.Join(quoted, "|")+")")
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "suite.test"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WARDPOOL_SUITE_REDIS_ADDR="+addr, "REDIS_VERSION="+version,
		"WARDPOOL_SUITE_PLAIN="+map[bool]string{true: "1", false: "0"}[plain])
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("go-redis's suite did not finish in time: %v\n%s", ctx.Err(), lastBytes(out))
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("running go-redis's suite: %v", err)
	}
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		return nil, fmt.Errorf("go-redis's suite wrote no report (%v): %v\n%s", err, rerr, lastBytes(out))
	}
	var reports []struct{ SpecReports []ginkgoSpec }
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("reading %s: %v", report, err)
	}
	results := map[string]specResult{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				if s.State != "passed" && s.State != "skipped" {
					return nil, fmt.Errorf("go-redis's %s %s (plain %v): %s", s.LeafNodeType, s.State, plain, s.Failure.Message)
				}
				continue
			}
			name := specName(s)
			res := specResult{state: s.State, message: s.Failure.Message,
				where: fmt.Sprintf("%s:%d", filepath.Base(s.LeafNodeLocation.FileName), s.LeafNodeLocation.LineNumber)}
			if old, dup := results[name]; dup && old.state != "passed" {
				continue // two specs of one name: the worse outcome stands
			}
			results[name] = res
		}
	}
	return results, nil
}

// lastBytes returns the end of a long output.
func lastBytes(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// readSpecDifferences reads the list of accepted differences: one entry a
// line, "spec full text | reason", # comments and blank lines ignored. A
// reason that begins with "not run:" keeps the spec from running at all.
func readSpecDifferences(t *testing.T, name string) map[string]string {
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
		spec, reason, ok := strings.Cut(line, " | ")
		spec, reason = strings.TrimSpace(spec), strings.TrimSpace(reason)
		if !ok || spec == "" || reason == "" {
			t.Fatalf("%s:%d: want \"spec full text | reason\", got %q", name, i+1, line)
		}
		diffs[spec] = reason
	}
	return diffs
}

// notRunSpecs returns the specs the list says not to run.
func notRunSpecs(diffs map[string]string) []string {
	var skip []string
	for n, r := range diffs {
		if strings.HasPrefix(r, "not run:") {
			skip = append(skip, n)
		}
	}
	slices.Sort(skip)
	return skip
}

type suiteOutcome struct {
	text       string
	unexpected []string
}

// specReport holds the outcomes through the pool against the plain ones
// and the list: a spec that passes plain and does not pass through the
// pool must be listed.
func specReport(plain, ours map[string]specResult, dropped, diffs map[string]string) suiteOutcome {
	var o suiteOutcome
	var b strings.Builder
	count := func(m map[string]specResult) (ran, pass, fail, skip int) {
		for _, r := range m {
			switch r.state {
			case "passed":
				ran++
				pass++
			case "skipped", "pending":
				skip++
			default:
				ran++
				fail++
			}
		}
		return
	}
	pr, pp, pf, ps := count(plain)
	or, op, of, os_ := count(ours)
	fmt.Fprintf(&b, "  plain go-redis: %d specs run, %d pass, %d fail, %d skipped\n", pr, pp, pf, ps)
	fmt.Fprintf(&b, "  through Pool.Client(): %d specs run, %d pass, %d fail, %d skipped\n", or, op, of, os_)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ours {
			if !yield(n) {
				return
			}
		}
	})
	listedFails, newPasses := 0, 0
	for _, n := range names {
		r, p := ours[n], plain[n]
		reason, listed := diffs[n]
		switch {
		case r.state == "passed" && listed:
			newPasses++
			fmt.Fprintf(&b, "  pass (listed: the entry may go) %s\n", n)
		case r.state == "passed" || r.state == "skipped" || r.state == "pending":
		case p.state != "passed":
			fmt.Fprintf(&b, "  %s both ways (%s) %s\n", strings.ToUpper(r.state), r.where, n)
		case listed:
			listedFails++
			fmt.Fprintf(&b, "  %s (listed) %s: %s\n", strings.ToUpper(r.state), n, reason)
		default:
			msg := r.message
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			fmt.Fprintf(&b, "  %s %s (%s): %s\n", strings.ToUpper(r.state), n, r.where, msg)
			o.unexpected = append(o.unexpected, fmt.Sprintf("go-redis's spec %q (%s) passes on plain go-redis, %s through Pool.Client(), and is not in testdata/goredis_differences.txt: %s", n, r.where, r.state, msg))
		}
	}
	for _, n := range notRunSpecs(diffs) {
		fmt.Fprintf(&b, "  NOT RUN (listed) %s: %s\n", n, strings.TrimSpace(strings.TrimPrefix(diffs[n], "not run:")))
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range dropped {
			if !yield(n) {
				return
			}
		}
	}) {
		file, _, _ := strings.Cut(n, " ")
		_, listed := diffs[n]
		switch {
		case !slices.Contains(goRedisSpecFiles, file) || !strings.Contains(n, " Describe "):
			fmt.Fprintf(&b, "  helper dropped %s: %s\n", n, dropped[n])
		case listed:
			fmt.Fprintf(&b, "  NOT BUILT (listed) %s: %s\n", n, diffs[n])
		default:
			fmt.Fprintf(&b, "  NOT BUILT %s: %s\n", n, dropped[n])
			o.unexpected = append(o.unexpected, fmt.Sprintf("go-redis's specs %s do not build in the suite (%s) and are not in testdata/goredis_differences.txt", n, dropped[n]))
		}
	}
	fmt.Fprintf(&b, "  %d fail through the pool only, listed; %d listed pass now\n", listedFails, newPasses)
	o.text = b.String()
	return o
}
