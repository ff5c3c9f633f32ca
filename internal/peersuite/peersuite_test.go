package peersuite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These test the parts of a peer suite's run that need no server: how it
// reads the list, drops what does not build, and holds results against
// the list.

func TestReadDifferences(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "list.txt")
	WriteFile(t, name, []byte("# a comment\n\nTestA: a reason: with a colon\n  TestB/sub : another\nTestC: not run: hangs\n"))
	got := ReadDifferences(t, name)
	want := map[string]string{"TestA": "a reason: with a colon", "TestB/sub": "another", "TestC": "not run: hangs"}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("entry %s = %q, want %q", k, got[k], v)
		}
	}
	if skip := NotRun(got); !skip["TestC"] || len(skip) != 1 {
		t.Errorf("notRun = %v, want only TestC", skip)
	}
}

// A test listed "alone:" is run in a binary of its own; a subtest's entry
// names no test to run alone.
func TestAlone(t *testing.T) {
	diffs := map[string]string{"TestA": "fails", "TestB": "not run: hangs", "TestC": "alone: fails, then synctest panics", "TestD/sub": "alone: x"}
	if got := Alone(diffs); !got["TestC"] || len(got) != 1 {
		t.Errorf("Alone = %v, want only TestC", got)
	}
	if got := NotRun(diffs); !got["TestB"] || len(got) != 1 {
		t.Errorf("NotRun = %v, want only TestB", got)
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
	WriteFile(t, name, []byte(src))
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

func TestReport(t *testing.T) {
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
	o := Report(results, dropped, diffs, "the driver", "the list")
	var bad []string
	for _, msg := range o.Unexpected {
		bad = append(bad, strings.Fields(msg)[0])
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
		if !strings.Contains(o.Text, line) {
			t.Errorf("report lacks %q:\n%s", line, o.Text)
		}
	}
	if o.Counts["pass"] != 2 || o.Counts["not built"] != 2 {
		t.Errorf("counts %v", o.Counts)
	}
	if !slices.Equal(o.Stale, []string{"TestListedPasses"}) {
		t.Errorf("stale = %v, want [TestListedPasses]", o.Stale)
	}
	// Without a list (a peer's suite run as written), nothing is unexpected.
	if o := Report(results, dropped, nil, "the peer", ""); len(o.Unexpected) != 0 {
		t.Errorf("unexpected without a list: %v", o.Unexpected)
	}
}

// TestEnv: GOFLAGS and the dropped prefixes leave, the module mode and
// the extra variables come in.
func TestEnv(t *testing.T) {
	t.Setenv("GOFLAGS", "-race")
	t.Setenv("PGX_TEST_OTHER", "x")
	env := Env([]string{"PGX_TEST_"}, "PGX_TEST_DATABASE=db")
	for _, kv := range env {
		if kv == "GOFLAGS=-race" || strings.HasPrefix(kv, "PGX_TEST_OTHER=") {
			t.Errorf("%s kept", kv)
		}
	}
	for _, want := range []string{"GOFLAGS=-mod=mod", "GOWORK=off", "PGX_TEST_DATABASE=db"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing", want)
		}
	}
}
