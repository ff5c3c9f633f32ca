package trace

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
		{Reference: SQLAlchemy, File: "x.steps", Ran: []string{"1.4.46 on python 3.11.2"}, Reason: InPlaceRecycle, Files: 1, Traces: 1, Steps: 5, Handouts: 2, Same: 2, Ruled: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if g, w := rows[i], want[i]; g.Reason != w.Reason || g.Traces != w.Traces || g.Steps != w.Steps ||
			g.Handouts != w.Handouts || g.Same != w.Same || g.Differ != w.Differ || g.Ruled != w.Ruled || g.Files != w.Files || strings.Join(g.Ran, ";") != strings.Join(w.Ran, ";") {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	if c := Compared(rows); len(c) != 1 || c[0].Reason != "" {
		t.Errorf("Compared = %+v", c)
	}
	tot := Totals(rows)
	if len(tot) != 4 || tot[0].Reference != SQLAlchemy || tot[0].Reason != "" || tot[0].Traces != 1 ||
		tot[1].Reason != InPlaceRecycle || tot[1].Traces != 1 || tot[2].Reference != GenericPool || tot[2].Traces != 0 ||
		tot[3].Reference != CommonsPool || tot[3].Traces != 0 {
		t.Errorf("Totals = %+v", tot)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	if line := "| sqlalchemy | 1.4.46 on python 3.11.2 | x.steps | 1 | 5 | 2 | 0 | identical up to difference 3, which is exactly it; after it 1 hand-outs as SQLAlchemy's rule says |\n"; !strings.Contains(b.String(), line) {
		t.Errorf("table:\n%s\nwant a line\n%s", b.String(), line)
	}

	// The trace that is compared still fails when the pool answers
	// differently from the reference (and the reference from its rule).
	good := readFile(t, filepath.Join(dir, "x.sqlalchemy.rec"))
	write("x.sqlalchemy.rec", strings.Replace(good, "closed 1 got 2 idle 0", "closed 1 got 2 idle 1", 1))
	if _, diffs, err = Tally(dir, true); err != nil || len(diffs) != 2 || diffs[0].Trace != "alone" || diffs[1].Trace != "alone" {
		t.Errorf("a compared trace that differs: %v, %v", diffs, err)
	}

	// The trace compared up to difference 3 fails when a step before it
	// differs, and when the step itself is not exactly difference 3.
	for _, c := range []struct{ from, to string }{
		{"give 2 at 0 => idle 1 live 2", "give 2 at 0 => idle 0 live 2"},
		{"closed 1 got 3 idle 1 live 2", "closed 1 got 3 idle 0 live 2"},
		{"closed 1 got 3 idle 1 live 2", "closed 2 got 3 idle 1 live 2"},
		{"closed 1 got 3 idle 1 live 2", "closed 1 got 2 idle 1 live 2"},
	} {
		write("x.sqlalchemy.rec", strings.Replace(good, c.from, c.to, 1))
		_, diffs, err = Tally(dir, true)
		found := false
		for _, d := range diffs {
			found = found || d.Trace == "over" && d.Reference == SQLAlchemy
		}
		if err != nil || !found {
			t.Errorf("%q for %q: not caught (%v, %v)", c.to, c.from, diffs, err)
		}
	}
}

// TestCheckDifference3 pins what counts as exactly difference 3 at the
// step where SQLAlchemy recycles in place over idle records.
func TestCheckDifference3(t *testing.T) {
	const head = "trace r\nran x\nsize 2\nage life 10000\n"
	const before = `take 1 at 0 => got 1 idle 0 live 1
take 2 at 5000 => got 2 idle 0 live 2
give 2 at 6000 => idle 1 live 2
give 1 at 7000 => idle 2 live 2
`
	theirs := mustRecording(t, head+before+"take 1 at 12000 => closed 1 got 3 idle 1 live 2\nend\n")
	for _, c := range []struct {
		name, ours string
		ok         bool
	}{
		{"the good one below lent", "take 1 at 12000 => closed 1 got 2 idle 0 live 1", true},
		{"both stale, a new one made", "take 1 at 12000 => closed 1,2 got 3 idle 0 live 1", true},
		{"the stale one not closed", "take 1 at 12000 => got 2 idle 0 live 1", false},
		{"no difference at all", "take 1 at 12000 => closed 1 got 3 idle 1 live 2", false},
	} {
		ours := mustRecording(t, head+before+c.ours+"\nend\n")
		if got := CheckDifference3(theirs, ours, 4); (got == "") != c.ok {
			t.Errorf("%s: CheckDifference3 = %q, want ok %v", c.name, got, c.ok)
		}
	}
	if k := FirstInPlaceRecycle(theirs); k != 4 {
		t.Errorf("FirstInPlaceRecycle = %d, want 4", k)
	}
}

// TestSQLAlchemyRule checks the model of QueuePool on the cases its doc
// lists: a recycle in place, an invalidated record popped and refilled, a
// refusal at the ceiling. (Every committed SQLAlchemy recording is held to
// it too, by Tally.)
func TestSQLAlchemyRule(t *testing.T) {
	tr := Trace{Name: "r", Policy: Policy{Size: 2, Age: LifeAge, AgeMS: 10}, Steps: []Step{
		{Verb: Take, Seat: 1}, {Verb: Take, Seat: 2}, {Verb: Take, Seat: 3},
		{Verb: Give, Seat: 2, At: 1}, {Verb: Give, Seat: 1, At: 2},
		{Verb: Take, Seat: 1, At: 11}, // 1 is past its age: recycled in place as 3
		{Verb: Drop, Seat: 1, At: 11}, // 3 closed, its record back on top, empty
		{Verb: Take, Seat: 1, At: 11}, // the empty record gets 4
		{Verb: Take, Seat: 3, At: 11}, // 2 (born 0, 11 old) recycled as 5
	}}
	want := []string{
		"take 1 at 0 => got 1 idle 0 live 1",
		"take 2 at 0 => got 2 idle 0 live 2",
		"take 3 at 0 => refused idle 0 live 2",
		"give 2 at 1 => idle 1 live 2",
		"give 1 at 2 => idle 2 live 2",
		"take 1 at 11 => closed 1 got 3 idle 1 live 2",
		"drop 1 at 11 => closed 3 idle 1 live 1",
		"take 1 at 11 => got 4 idle 1 live 2",
		"take 3 at 11 => closed 2 got 5 idle 0 live 2",
	}
	rec, err := SQLAlchemyRule(tr)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range rec.Entries {
		if e.String() != want[i] {
			t.Errorf("step %d: %s, want %s", i+1, e, want[i])
		}
	}
	tr.Steps = append(tr.Steps, Step{Verb: Evict, At: 11})
	if _, err := SQLAlchemyRule(tr); err == nil {
		t.Error("an evict: no error")
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
