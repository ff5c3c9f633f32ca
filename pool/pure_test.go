package pool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// The pure files: the state machine and what it is made of. They may not
// import anything that can block, spawn, sleep or read the clock, nor call
// time.Now: every instant comes in as an argument (see the package doc).
var pureFiles = []string{
	"books.go", "choose.go", "guard.go", "limits.go", "pool.go",
	"runtime.go", "seats.go", "taken.go", "record.go", "record_hooks.go",
	"replay.go", "replay_read.go", "replay_reader.go",
}

// impure are the imports a pure file may not have.
var impure = map[string]bool{
	"sync": true, "sync/atomic": true, "os": true, "net": true,
	"runtime": true, "time/tzdata": true, "os/exec": true, "context": true,
}

func TestPureFilesReadNoClockAndStartNothing(t *testing.T) {
	checkPure(t, ".", pureFiles)
}

// checkPure fails t for every file of dir in files that imports one of
// impure, calls time.Now, time.Since, time.Sleep, time.After or
// time.AfterFunc, or starts a goroutine.
func checkPure(t *testing.T, dir string, files []string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if impure[path] {
				t.Errorf("%s imports %q: the state machine may not block, spawn or read the clock", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement at %v", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" {
					switch n.Sel.Name {
					case "Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker":
						t.Errorf("%s: time.%s at %v: instants are arguments", name, n.Sel.Name, fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
}

func TestCheckPureCatchesAClockRead(t *testing.T) {
	// The check itself can fail: run it on a file of the runtime, which
	// reads the clock and locks.
	ft := &testing.T{}
	done := make(chan struct{})
	go func() { // a failed *testing.T must not fail this test
		defer close(done)
		checkPure(ft, ".", []string{"keeper.go", "clock.go"})
	}()
	<-done
	if !ft.Failed() {
		t.Fatal("checkPure passed keeper.go and clock.go, which import sync and read the clock")
	}
}
