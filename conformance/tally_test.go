package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustRecording(t *testing.T, src string) Recording {
	t.Helper()
	recs, err := ParseRecording(strings.NewReader(src), "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d recordings, want 1", len(recs))
	}
	return recs[0]
}

// TestNotCompared pins the one rule that leaves a trace out of a comparison:
// a lifetime trace whose SQLAlchemy recording shows a take that closes a
// resource while two or more were idle after the step before.
func TestNotCompared(t *testing.T) {
	const head = "trace r\nran sqlalchemy 1.4.46\nsize 3\nage life 10000\n"
	const three = `take 1 at 0 => got 1 idle 0 live 1
take 2 at 0 => got 2 idle 0 live 2
take 3 at 1000 => got 3 idle 0 live 3
give 3 at 2000 => idle 1 live 3
give 2 at 2000 => idle 2 live 3
`
	for _, c := range []struct {
		name, ref, body string
		want            string
	}{
		{"recycle over one idle below", SQLAlchemy, three +
			"take 2 at 10001 => closed 2 got 4 idle 1 live 3\n", InPlaceRecycle},
		{"recycle over two idle below", SQLAlchemy, three +
			"give 1 at 3000 => idle 3 live 3\ntake 1 at 10001 => closed 1 got 4 idle 2 live 3\n", InPlaceRecycle},
		// Idle before is what the step before left, not what the take
		// leaves: here 2 before, 1 after.
		{"judged by the idle count before the take", SQLAlchemy, three +
			"take 2 at 10001 => closed 2 got 4 idle 1 live 3\ngive 2 => idle 2 live 3\n", InPlaceRecycle},
		{"recycle with only itself idle", SQLAlchemy,
			"take 1 at 0 => got 1 idle 0 live 1\ngive 1 => idle 1 live 1\ntake 1 at 10001 => closed 1 got 2 idle 0 live 1\n", ""},
		{"recycle with one idle and one lent", SQLAlchemy, three +
			"take 3 at 5000 => got 2 idle 1 live 3\ntake 2 at 12000 => closed 3 got 4 idle 0 live 3\n", ""},
		{"two idle and a take that recycles nothing", SQLAlchemy, three +
			"take 2 at 5000 => got 2 idle 1 live 3\n", ""},
		{"two idle and a give that closes", SQLAlchemy, three +
			"take 2 at 5000 => got 2 idle 1 live 3\ngive 2 => closed 2 idle 1 live 2\n", ""},
		{"generic-pool's recording is always compared", GenericPool, three +
			"take 2 at 10001 => closed 2 got 4 idle 1 live 3\n", ""},
		{"the first take has nothing idle before it", SQLAlchemy,
			"take 1 at 0 => closed 9 got 1 idle 2 live 1\n", ""},
	} {
		rec := mustRecording(t, head+c.body+"end\n")
		if got := NotCompared(c.ref, rec); got != c.want {
			t.Errorf("%s: NotCompared = %q, want %q", c.name, got, c.want)
		}
	}
	// Only a lifetime trace: the same steps under another policy are
	// compared (SQLAlchemy closes at a take only to recycle).
	for _, age := range []string{"age none", "age idle 10000"} {
		rec := mustRecording(t, strings.Replace(head, "age life 10000", age, 1)+three+
			"take 2 at 10001 => closed 2 got 4 idle 1 live 3\nend\n")
		if got := NotCompared(SQLAlchemy, rec); got != "" {
			t.Errorf("%s: NotCompared = %q, want it compared", age, got)
		}
	}
}

// TestTallyNotCompared checks that a trace NotCompared leaves out is not
// diffed, is counted in a row of its own with the reason, and is kept out of
// the compared totals; and that a trace it keeps is compared as before.
func TestTallyNotCompared(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const steps = `trace over
size 2
age life 10000
compare sqlalchemy
take 1
take 2
give 2
give 1
take 1 at 10001
end
trace alone
size 2
age life 10000
compare sqlalchemy
take 1
give 1
take 1 at 10001
end
`
	write("x.steps", steps)
	// SQLAlchemy's answers, as it gives them.
	write("x.sqlalchemy.rec", `trace over
ran sqlalchemy 1.4.46 on python 3.11.2
size 2
age life 10000
take 1 at 0 => got 1 idle 0 live 1
take 2 at 0 => got 2 idle 0 live 2
give 2 at 0 => idle 1 live 2
give 1 at 0 => idle 2 live 2
take 1 at 10001 => closed 1 got 3 idle 1 live 2
end
trace alone
ran sqlalchemy 1.4.46 on python 3.11.2
size 2
age life 10000
take 1 at 0 => got 1 idle 0 live 1
give 1 at 0 => idle 1 live 1
take 1 at 10001 => closed 1 got 2 idle 0 live 1
end
`)
	rows, diffs, err := Tally(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 0 {
		t.Errorf("differences: %v", diffs)
	}
	want := []Row{
		{Reference: SQLAlchemy, File: "x.steps", Ran: []string{"1.4.46 on python 3.11.2"}, Files: 1, Traces: 1, Handouts: 2, Steps: 3, Same: 2},
		{Reference: SQLAlchemy, File: "x.steps", Ran: []string{"1.4.46 on python 3.11.2"}, Reason: InPlaceRecycle, Files: 1, Traces: 1, Steps: 5},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if g, w := rows[i], want[i]; g.Reason != w.Reason || g.Traces != w.Traces || g.Steps != w.Steps ||
			g.Handouts != w.Handouts || g.Same != w.Same || g.Differ != w.Differ || g.Files != w.Files || strings.Join(g.Ran, ";") != strings.Join(w.Ran, ";") {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if c := Compared(rows); len(c) != 1 || c[0].Reason != "" {
		t.Errorf("Compared = %+v", c)
	}
	tot := Totals(rows)
	if len(tot) != 3 || tot[0].Reference != SQLAlchemy || tot[0].Reason != "" || tot[0].Traces != 1 ||
		tot[1].Reason != InPlaceRecycle || tot[1].Traces != 1 || tot[2].Reference != GenericPool || tot[2].Traces != 0 {
		t.Errorf("Totals = %+v", tot)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	if line := "| sqlalchemy | 1.4.46 on python 3.11.2 | x.steps | 1 | 5 | 0 | 0 | " + InPlaceRecycle + " |\n"; !strings.Contains(b.String(), line) {
		t.Errorf("table:\n%s\nwant a line\n%s", b.String(), line)
	}

	// The trace that is compared still fails when the pool answers
	// differently from the reference.
	write("x.sqlalchemy.rec", strings.Replace(readFile(t, filepath.Join(dir, "x.sqlalchemy.rec")), "closed 1 got 2 idle 0", "closed 1 got 2 idle 1", 1))
	if _, diffs, err = Tally(dir, true); err != nil || len(diffs) != 1 || diffs[0].Trace != "alone" {
		t.Errorf("a compared trace that differs: %v, %v", diffs, err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
