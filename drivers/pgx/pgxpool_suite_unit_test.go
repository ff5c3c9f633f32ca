package pgxward

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These test the parts of TestPgxpoolSuite that need no server: how it
// reads the list, drops what does not build, and holds results against
// the list.

func TestReadDifferences(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "list.txt")
	writeFile(t, name, []byte("# a comment\n\nTestA: a reason: with a colon\n  TestB/sub : another\nTestC: not run: hangs\n"))
	got := readDifferences(t, name)
	want := map[string]string{"TestA": "a reason: with a colon", "TestB/sub": "another", "TestC": "not run: hangs"}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("entry %s = %q, want %q", k, got[k], v)
		}
	}
	if skip := notRun(got); !skip["TestC"] || len(skip) != 1 {
		t.Errorf("notRun = %v, want only TestC", skip)
	}
}

// The committed list must parse, and every entry must name a test.
func TestCommittedDifferences(t *testing.T) {
	diffs := readDifferences(t, "testdata/pgxpool_differences.txt")
	if len(diffs) == 0 {
		t.Fatal("the committed list is empty")
	}
	for n := range diffs {
		if !strings.HasPrefix(n, "Test") {
			t.Errorf("entry %q does not name a test", n)
		}
	}
}

func TestDropDecls(t *testing.T) {
	src := `package x_test

import (
	"fmt"
	"os"
)

// helper is used by TestB only.
func helper() string { return os.Getenv("X") }

func TestA(t *testing.T) {
	fmt.Println("a")
}

// TestB is dropped with its comment.
func TestB(t *testing.T) {
	_ = helper()
}
`
	name := filepath.Join(t.TempDir(), "x_test.go")
	writeFile(t, name, []byte(src))
	dropped := map[string]string{}
	// Line 17 is inside TestB, line 5 the import of os.
	dropDecls(t, name, []compileMsg{{line: 17, msg: "undefined: thing"}, {line: 5, msg: `"os" imported and not used`}}, dropped)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, gone := range []string{"func TestB", "TestB is dropped", `"os"`} {
		if strings.Contains(out, gone) {
			t.Errorf("%q still in the file:\n%s", gone, out)
		}
	}
	for _, kept := range []string{"func TestA", "func helper", `"fmt"`} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q was lost:\n%s", kept, out)
		}
	}
	if len(dropped) != 1 || dropped["TestB"] != "undefined: thing" {
		t.Errorf("dropped = %v, want TestB with its error", dropped)
	}
}

func TestSuiteReport(t *testing.T) {
	results := map[string]string{
		"TestPass":         "pass",
		"TestListedFail":   "fail",
		"TestListedFail/x": "fail",
		"TestNewFail":      "fail",
		"TestHang":         "hang",
		"TestListedPasses": "pass",
		"TestSkip":         "skip",
	}
	dropped := map[string]string{"TestNoBuild": "undefined: X", "TestListedNoBuild": "undefined: Y", "helper": "undefined: Z"}
	diffs := map[string]string{
		"TestListedFail":    "deliberate",
		"TestListedPasses":  "was broken",
		"TestListedNoBuild": "no such API",
		"TestNotRun":        "not run: hangs",
	}
	o := suiteReport(results, dropped, diffs)
	var bad []string
	for _, msg := range o.unexpected {
		bad = append(bad, strings.Fields(msg)[1])
	}
	slices.Sort(bad)
	if want := []string{"TestHang", "TestNewFail", "TestNoBuild"}; !slices.Equal(bad, want) {
		t.Errorf("unexpected = %v, want %v", bad, want)
	}
	for _, line := range []string{
		"2 pass, 3 fail, 1 hang, 1 skip, 2 not built, 1 not run",
		"FAIL (listed) TestListedFail/x: deliberate",
		"pass (listed: the entry may go) TestListedPasses",
		"NOT RUN (listed) TestNotRun: hangs",
		"NOT BUILT (listed) TestListedNoBuild: no such API",
		"helper helper dropped: undefined: Z",
	} {
		if !strings.Contains(o.text, line) {
			t.Errorf("report lacks %q:\n%s", line, o.text)
		}
	}
}
