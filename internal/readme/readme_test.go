package readme

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/testenv"
)

// files are the README files whose Go snippets are compiled, from the
// module root.
var files = []string{"README.md", "metrics/README.md"}

// given says what a fragment (a snippet that is not a whole file) takes as
// already there, found by a line of the snippet: declarations put beside
// it, and statements run after it (to use what it declares).
var given = []struct {
	line   string // a line the snippet contains
	decls  string
	after  string
	result bool // the fragment returns an error
}{
	{
		line: "k, err := wardpool.NewKeeper(wardpool.Config[*session]{",
		decls: `type session struct{}
func (*session) Close() error { return nil }
func open(context.Context) (*session, error) { return &session{}, nil }
func use(*session) {}
var ctx = context.Background()`,
		result: true,
	},
	{
		line: "switch t := p.Take(now, rand.Float64(), cpuThousandths); t.Kind {",
		decls: `var now time.Time
var cpuThousandths int`,
	},
	{
		line:  "backoff := ward.DefaultBackoff // presets are values: copy, change a field",
		after: "_ = w",
	},
	{
		line:  "sqlDB, conns, err := sqlward.OpenDB(stdlib.GetConnector(*cfg.ConnConfig), sqlward.Config{",
		decls: "var cfg *pgxward.Config",
	},
	{
		line: "waits := metrics.NewWaitHistogram(metrics.Options{Labels: map[string]string{\"pool\": \"orders\"}})",
		decls: `var ctx = context.Background()
var tracer trace.Tracer
var p *pgxward.Pool`,
		after: "_, _ = c, err",
	},
	{
		line: "cfg.ConnConfig.Tracer = &pgxtrace.Tracer{Spans: tracer, Waits: waits}",
		decls: `var cfg *pgxward.Config
var tracer trace.Tracer
var waits *metrics.WaitHistogram`,
	},
	{
		line:  "c.Classify = func(err error) (wardpool.Verdict, string) {",
		decls: "var dsn string",
	},
	{
		line: "cfg.Classes = []pool.Class{ // cfg from pgxward.ParseConfig",
		decls: `var ctx = context.Background()
var cfg *pgxward.Config`,
		after:  "rows.Close()",
		result: true,
	},
	{
		line: "p, _ := pgxward.NewWithConfig(ctx, cfg)",
		decls: `var ctx = context.Background()
var cfg *pgxward.Config
var meter metric.Meter
var logger *slog.Logger
var tracer trace.Tracer`,
		after: "_, _ = c, err",
	},
}

// imports maps the package names the snippets use to their paths.
var imports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"http":       "net/http",
	"os":         "os",
	"rand":       "math/rand/v2",
	"slog":       "log/slog",
	"time":       "time",
	"sql":        "database/sql",
	"driver":     "database/sql/driver",
	"pool":       "github.com/wardpool/wardpool/pool",
	"wardpool":   "github.com/wardpool/wardpool",
	"ward":       "github.com/wardpool/wardpool/ward",
	"metrics":    "github.com/wardpool/wardpool/metrics",
	"pgxtrace":   "github.com/wardpool/wardpool/metrics/pgxtrace",
	"otel":       "go.opentelemetry.io/otel",
	"sync":       "sync",
	"pgxpool":    "github.com/jackc/pgx/v5/pgxpool",
	"pgxward":    "github.com/wardpool/wardpool/drivers/pgx",
	"sqlward":    "github.com/wardpool/wardpool/drivers/sql",
	"redisward":  "github.com/wardpool/wardpool/drivers/redis",
	"pgx":        "github.com/jackc/pgx/v5",
	"pgconn":     "github.com/jackc/pgx/v5/pgconn",
	"stdlib":     "github.com/jackc/pgx/v5/stdlib",
	"redis":      "github.com/redis/go-redis/v9",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"metric":     "go.opentelemetry.io/otel/metric",
	"trace":      "go.opentelemetry.io/otel/trace",
}

// snippet is one Go block of a README.
type snippet struct {
	file string
	line int // of the opening fence
	code string
}

var fence = regexp.MustCompile("(?m)^```go\n((?s:.*?))^```\n")

// snippets returns the Go blocks of the README files under root.
func snippets(t *testing.T, root string) []snippet {
	var out []snippet
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllSubmatchIndex(b, -1) {
			out = append(out, snippet{f, 1 + bytes.Count(b[:m[0]], []byte("\n")), string(b[m[2]:m[3]])})
		}
	}
	return out
}

// used returns the package names of imports that code refers to as
// name.Something.
func used(code string) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	src := []byte(code)
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0)
	seen := map[string]bool{}
	prev, prevLit, prevPrev := token.ILLEGAL, "", token.ILLEGAL
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && prev == token.IDENT && prevPrev != token.PERIOD {
			if _, ok := imports[prevLit]; ok {
				seen[prevLit] = true
			}
		}
		prevPrev, prev, prevLit = prev, tok, lit
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// program turns a fragment into a file that compiles if the fragment does.
func program(t *testing.T, sn snippet) string {
	if strings.HasPrefix(sn.code, "package ") {
		return sn.code
	}
	var decls, after string
	result := false
	found := false
	for _, g := range given {
		if strings.Contains(sn.code, g.line) {
			decls, after, result, found = g.decls, g.after, g.result, true
			break
		}
	}
	if !found {
		t.Errorf("%s:%d: a fragment this test does not know: add what it takes as given to the table", sn.file, sn.line)
		return ""
	}
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, n := range used(decls + "\n" + sn.code) {
		b.WriteString("\t" + n + " " + strconv.Quote(imports[n]) + "\n")
	}
	b.WriteString(")\n\n" + decls + "\n\nfunc main() {}\n\n")
	if result {
		b.WriteString("func snippet() error {\n" + sn.code + "\n" + after + "\nreturn nil\n}\n")
	} else {
		b.WriteString("func snippet() {\n" + sn.code + "\n" + after + "\n}\n")
	}
	return b.String()
}

// TestSnippetsCompile builds every Go snippet of the README files, in a
// scratch module that uses this one (and its go.sum) through a replace
// directive, offline.
func TestSnippetsCompile(t *testing.T) {
	testenv.NeedFull(t)
	all := snippets(t, moduleRoot(t))
	if len(all) < 5 {
		t.Fatalf("found %d Go snippets; the READMEs have more", len(all))
	}
	progs := map[string]snippet{}
	srcs := map[string]string{}
	for i, sn := range all {
		if src := program(t, sn); src != "" {
			pkg := "s" + strconv.Itoa(i)
			progs[pkg], srcs[pkg] = sn, src
		}
	}
	buildAll(t, srcs, progs)
}

// moduleRoot returns the module's root directory.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildAll builds each program of srcs (package directory → main.go) in a
// scratch module that uses this one through a replace directive, offline,
// and fails naming the snippet (where) of each that does not build.
func buildAll(t *testing.T, srcs map[string]string, where map[string]snippet) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the snippets' build takes a few seconds")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the snippets with")
	}
	root := moduleRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The scratch module requires what this one requires, and this one.
	gomod := regexp.MustCompile(`(?m)^module .*$`).ReplaceAllString(string(mod), "module snippets")
	gomod = regexp.MustCompile(`(?m)^tool .*$`).ReplaceAllString(gomod, "")
	gomod += "\nrequire github.com/wardpool/wardpool v0.0.0\n\nreplace github.com/wardpool/wardpool => " + strconv.Quote(root) + "\n"
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", gomod)
	write("go.sum", string(sum))
	for pkg, src := range srcs {
		write(filepath.Join(pkg, "main.go"), src)
	}
	cmd := exec.Command(goTool, "build", "-o", os.DevNull, "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		// Name the file and line of each failing snippet.
		text := string(out)
		for pkg, sn := range where {
			text = strings.ReplaceAll(text, "snippets/"+pkg+"\n", sn.file+":"+strconv.Itoa(sn.line)+"\n")
		}
		t.Fatalf("the snippets do not build:\n%s", text)
	}
	t.Logf("built %d snippets", len(srcs))
}
