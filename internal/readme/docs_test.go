package readme

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/testenv"
)

// docPackages are the packages whose doc comments' code blocks are
// compiled, with what their snippets take as given: package-level
// declarations beside each snippet.
var docPackages = []struct {
	dir   string
	given string
}{
	{"metrics", `var (
	ctx      = context.Background()
	reg      = prometheus.NewRegistry()
	meter    metric.Meter
	keeper   *wardpool.Keeper[*pgx.Conn]
	cfg      *pgxward.Config
	logger   *slog.Logger
	tracer   trace.Tracer
	pgxPool  *pgxward.Pool
	p        *pgxward.Pool
	obs      metrics.AcquireObserver
	mu       sync.Mutex
	sim      *pool.Pool[int]
	pgxCfg   *pgxward.Config
	sqlCfg   sqlward.Config
	redisCfg redisward.Config
)`},
	{"metrics/pgxtrace", `var cfg *pgxward.Config`},
	{"drivers/pgx", `var (
	ctx    = context.Background()
	reg    = prometheus.NewRegistry()
	p      *pgxward.Pool
	c      *pgxward.Config
	logger *slog.Logger
)

type myTracer struct{}`},
	{"drivers/sql", `var (
	ctx    = context.Background()
	reg    = prometheus.NewRegistry()
	c      *sqlward.Connector
	cfg    sqlward.Config
	logger *slog.Logger
	dsn    string
	n      int
	conn   *sql.Conn
	cols   []string
	rows   [][]any
)`},
}

// notGo are the first words of code blocks in doc comments that are not Go:
// series lists, attribute lists, connection strings.
var notGo = []string{"wardpool_", "held ", "postgres://"}

// TestDocSnippetsCompile builds every Go code block of the doc comments of
// the packages users read first, as TestSnippetsCompile does the READMEs'.
func TestDocSnippetsCompile(t *testing.T) {
	testenv.NeedFull(t)
	root := moduleRoot(t)
	srcs := map[string]string{}
	where := map[string]snippet{}
	n := 0
	for _, dp := range docPackages {
		for _, sn := range docBlocks(t, filepath.Join(root, dp.dir)) {
			first := strings.TrimSpace(sn.code)
			skip := false
			for _, w := range notGo {
				skip = skip || strings.HasPrefix(first, w)
			}
			if skip {
				continue
			}
			pkg := "d" + strconv.Itoa(n)
			n++
			sn.file = filepath.Join(dp.dir, sn.file)
			srcs[pkg], where[pkg] = docProgram(t, sn, dp.given), sn
		}
	}
	if len(srcs) < 10 {
		t.Fatalf("found %d Go blocks in the doc comments; there are more", len(srcs))
	}
	buildAll(t, srcs, where)
}

// docBlocks returns the code blocks of the comments of the non-test files
// in dir.
func docBlocks(t *testing.T, dir string) []snippet {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range f.Comments {
			var p comment.Parser
			for _, b := range p.Parse(cg.Text()).Content {
				if c, ok := b.(*comment.Code); ok {
					out = append(out, snippet{filepath.Base(name), fset.Position(cg.Pos()).Line, c.Text})
				}
			}
		}
	}
	return out
}

// docProgram turns a doc block into a program: import lines dropped (the
// imports are worked out), top-level declarations kept as they are,
// statements put in a function returning error, with every variable they
// declare used.
func docProgram(t *testing.T, sn snippet, given string) string {
	var lines []string
	for _, l := range strings.Split(sn.code, "\n") {
		if !strings.HasPrefix(l, "import ") {
			lines = append(lines, l)
		}
	}
	code := strings.Join(lines, "\n")
	top := strings.HasPrefix(strings.TrimSpace(code), "func ") || strings.HasPrefix(strings.TrimSpace(code), "type ")
	body := code
	declared := []string{}
	if !top {
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc f() error {\n"+code+"\nreturn nil\n}", 0)
		if err != nil {
			t.Errorf("%s:%d: a code block that is not Go: %v\n%s", sn.file, sn.line, err, code)
			return "package main\nfunc main() {}\n"
		}
		for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
			if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
				for _, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
						declared = append(declared, id.Name)
					}
				}
			}
		}
		for _, d := range declared {
			body += "\n_ = " + d
		}
	}
	shadowed := map[string]bool{}
	for _, d := range declared {
		shadowed[d] = true
	}
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, n := range used(given + "\n" + code) {
		if !shadowed[n] {
			b.WriteString("\t" + n + " " + strconv.Quote(imports[n]) + "\n")
		}
	}
	b.WriteString(")\n\n" + given + "\n\nfunc main() {}\n\n")
	if top {
		b.WriteString(code + "\n")
	} else {
		b.WriteString("func snippet() error {\n" + body + "\nreturn nil\n}\n")
	}
	return b.String()
}
