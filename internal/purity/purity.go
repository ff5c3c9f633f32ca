// Package purity holds wardpool's two core packages, pool and ward, to
// their first principle: nothing in them can block, spawn, sleep, read the
// clock or draw randomness. Every instant and every draw is an argument.
//
// Check reads every non-test Go file of a directory; the test beside it runs
// Check on pool and ward, and on sources written to break each rule, so a
// rule that stops catching what it names fails too.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// banned are the imports a pure file may not have, each with the packages
// below it: what can block or wait (sync, context), spawn or reach the
// runtime (runtime, unsafe), do I/O (os, net, syscall, log), or draw
// randomness (math/rand, crypto/rand, hash/maphash, whose seeds are random).
var banned = strings.Fields(`
	context crypto/rand hash/maphash log math/rand net
	os runtime sync syscall unsafe
`)

// clockReads are the functions of package time that read the clock, sleep
// or start a timer: a pure file takes instants as arguments instead.
var clockReads = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// Check reports every breach of purity in the non-test Go files of dir, one
// line each ("file:line: what"), sorted; files is how many it read. An
// unreadable or unparsable file is an error.
func Check(dir string) (breaches []string, files int, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, 0, err
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, files, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, files, err
		}
		files++
		breaches = append(breaches, checkFile(fset, f)...)
	}
	sort.Strings(breaches)
	return breaches, files, nil
}

func checkFile(fset *token.FileSet, f *ast.File) []string {
	var out []string
	report := func(n ast.Node, format string, args ...any) {
		p := fset.Position(n.Pos())
		out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(p.Filename), p.Line, fmt.Sprintf(format, args...)))
	}
	timeName := "" // what package time is called in this file
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		for _, b := range banned {
			if path == b || strings.HasPrefix(path, b+"/") {
				report(imp, "imports %q", path)
			}
		}
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
			if timeName == "." {
				report(imp, `imports "time" with a dot: its clock would be unqualified`)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "starts a goroutine")
		case *ast.SelectStmt:
			report(n, "selects on channels")
		case *ast.SendStmt:
			report(n, "sends on a channel")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && clockReads[n.Sel.Name] {
				report(n, "calls time.%s", n.Sel.Name)
			}
		}
		return true
	})
	return out
}
