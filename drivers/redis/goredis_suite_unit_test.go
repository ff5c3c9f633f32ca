package redisward

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/peersuite"
)

// These test the parts of TestGoRedisSuite that need no server: how it
// reads the list, takes specs out of helper files, and holds outcomes
// against the list.

func TestReadSpecDifferences(t *testing.T) {
	name := filepath.Join(t.TempDir(), "list.txt")
	peersuite.WriteFile(t, name, []byte("# a comment\n\nA / b | a reason: with a colon | and a bar\n  C / d |  not run: hangs\n"))
	got := readSpecDifferences(t, name)
	if len(got) != 2 || got["A / b"] != "a reason: with a colon | and a bar" || got["C / d"] != "not run: hangs" {
		t.Fatalf("read %q", got)
	}
	if skip := notRunSpecs(got); !slices.Equal(skip, []string{"C / d"}) {
		t.Errorf("notRunSpecs = %v", skip)
	}
}

// The committed list must parse, and every entry name a spec of the files
// the suite runs (a container and a spec at least).
func TestCommittedGoRedisDifferences(t *testing.T) {
	diffs := readSpecDifferences(t, "testdata/goredis_differences.txt")
	if len(diffs) == 0 {
		t.Fatal("the committed list is empty")
	}
	for n := range diffs {
		if !strings.Contains(n, " / ") {
			t.Errorf("entry %q does not name a spec", n)
		}
	}
}

func TestStripSpecs(t *testing.T) {
	src := `package x_test

var ctx = 1

// helper is kept.
func helper() int { return ctx }

var _ = Describe("specs", func() {
	It("goes", func() {})
})

var _ = BeforeSuite(func() {})
`
	out := string(stripSpecs(t, "helper_test.go", []byte(src)))
	for _, gone := range []string{"Describe", "BeforeSuite", "It("} {
		if strings.Contains(out, gone) {
			t.Errorf("%q still in:\n%s", gone, out)
		}
	}
	for _, kept := range []string{"var ctx = 1", "func helper", "helper is kept"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q lost:\n%s", kept, out)
		}
	}
}

func TestSpecReport(t *testing.T) {
	pass, fail := specResult{state: "passed"}, specResult{state: "failed", message: "boom", where: "x_test.go:1"}
	plain := map[string]specResult{"A / ok": pass, "A / new": pass, "A / listed": pass, "A / both": fail, "A / fixed": pass, "A / skip": {state: "skipped"}}
	ours := map[string]specResult{"A / ok": pass, "A / new": fail, "A / listed": fail, "A / both": fail, "A / fixed": pass, "A / skip": {state: "skipped"}}
	diffs := map[string]string{"A / listed": "deliberate", "A / fixed": "was broken", "B / hangs": "not run: hangs",
		"pipeline_test.go Describe \"gone\"": "needs X"}
	dropped := map[string]string{
		"pipeline_test.go Describe \"gone\"": "undefined: X",
		"pipeline_test.go Describe \"lost\"": "undefined: Y",
		"main_test.go helper":                "undefined: Z",
	}
	o := specReport(plain, ours, dropped, diffs)
	if len(o.unexpected) != 2 || !strings.Contains(o.unexpected[0], `"A / new"`) || !strings.Contains(o.unexpected[1], `"lost"`) {
		t.Errorf("unexpected = %q", o.unexpected)
	}
	for _, line := range []string{
		"plain go-redis: 5 specs run, 4 pass, 1 fail, 1 skipped",
		"through Pool.Client(): 5 specs run, 2 pass, 3 fail, 1 skipped",
		"FAILED both ways (x_test.go:1) A / both",
		"FAILED (listed) A / listed: deliberate",
		"pass (listed: the entry may go) A / fixed",
		"NOT RUN (listed) B / hangs: hangs",
		"NOT BUILT (listed) pipeline_test.go Describe \"gone\": needs X",
		"helper dropped main_test.go helper",
	} {
		if !strings.Contains(o.text, line) {
			t.Errorf("report lacks %q:\n%s", line, o.text)
		}
	}
}
