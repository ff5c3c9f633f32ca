package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSteps(t *testing.T) {
	const src = `# a comment
trace a
size 2
age life 10000   # trailing comment
compare sqlalchemy generic-pool

take 1
take 2 at 3000
give 1
drop 2 at 3500
evict at 9000
end
trace b
size 3
idle 2   # the idle ceiling
age idle 5
compare commons-pool
end
`
	traces, err := ParseSteps(strings.NewReader(src), "src")
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 2 {
		t.Fatalf("got %d traces, want 2", len(traces))
	}
	a := traces[0]
	if a.Name != "a" || a.Policy != (Policy{Size: 2, Age: LifeAge, AgeMS: 10000}) {
		t.Errorf("trace a: name %q policy %+v", a.Name, a.Policy)
	}
	if !a.ComparedWith(SQLAlchemy) || !a.ComparedWith(GenericPool) || a.ComparedWith(Wardpool) {
		t.Errorf("trace a compares with %v", a.Compare)
	}
	want := []Step{
		{Take, 1, 0}, {Take, 2, 3000}, {Give, 1, 3000}, {Drop, 2, 3500}, {Evict, 0, 9000},
	}
	if len(a.Steps) != len(want) {
		t.Fatalf("trace a: %d steps, want %d", len(a.Steps), len(want))
	}
	for i, s := range a.Steps {
		if s != want[i] {
			t.Errorf("step %d: %+v, want %+v", i+1, s, want[i])
		}
	}
	if b := traces[1]; b.Policy != (Policy{Size: 3, Idle: 2, Age: IdleAge, AgeMS: 5}) || len(b.Steps) != 0 || !b.ComparedWith(CommonsPool) {
		t.Errorf("trace b: %+v", b)
	}
}

func TestParseStepsErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"take 1\n", "want: trace NAME"},
		{"trace\n", "want: trace NAME"},
		{"trace a\nsize 1\nage none\ntake 1\n", "has no end"},
		{"trace a\nage none\nend\n", "has no size"},
		{"trace a\nsize 0\nend\n", "at least 1"},
		{"trace a\nsize two\nend\n", "at least 1"},
		{"trace a\nsize 1\nage life\nend\n", "want: age none"},
		{"trace a\nsize 1\nage life 0\nend\n", "at least 1"},
		{"trace a\nsize 1\nage soon 10\nend\n", "want: age none"},
		{"trace a\nsize 2\nidle\nend\n", "want: idle N"},
		{"trace a\nsize 2\nidle -1\nend\n", "0: no ceiling"},
		{"trace a\nsize 1\nwait 1\nend\n", `unknown directive "wait"`},
		{"trace a\nsize 1\ntake\nend\n", "needs a seat"},
		{"trace a\nsize 1\ntake 0\nend\n", "seat"},
		{"trace a\nsize 1\ntake 1 when 5\nend\n", "want: take [SEAT] [at MS]"},
		{"trace a\nsize 1\ntake 1 at x\nend\n", "want milliseconds"},
		{"trace a\nsize 1\ntake 1 at 5\ngive 1 at 4\nend\n", "time goes back from 5 to 4"},
	} {
		_, err := ParseSteps(strings.NewReader(c.src), "src")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.src, err, c.want)
		}
	}
}

// TestWriteSteps checks that written steps read back the same, that a time
// is written only when it moves, and an idle ceiling only when there is one.
func TestWriteSteps(t *testing.T) {
	in := []Trace{{
		Name:    "w",
		Policy:  Policy{Size: 3, Age: IdleAge, AgeMS: 700},
		Compare: []string{GenericPool},
		Steps:   []Step{{Take, 1, 0}, {Take, 2, 0}, {Evict, 0, 5}, {Give, 2, 5}, {Drop, 1, 9}},
	}, {
		Name:    "c",
		Policy:  Policy{Size: 2, Idle: 1},
		Compare: []string{CommonsPool},
		Steps:   []Step{{Take, 1, 0}},
	}}
	var b bytes.Buffer
	if err := WriteSteps(&b, in); err != nil {
		t.Fatal(err)
	}
	const want = "trace w\nsize 3\nage idle 700\ncompare generic-pool\ntake 1\ntake 2\nevict at 5\ngive 2\ndrop 1 at 9\nend\n" +
		"trace c\nsize 2\nidle 1\nage none\ncompare commons-pool\ntake 1\nend\n"
	if b.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", b.String(), want)
	}
	out, err := ParseSteps(&b, "written")
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WriteSteps(&again, out); err != nil {
		t.Fatal(err)
	}
	if again.String() != want {
		t.Errorf("read back and written again:\n%s", again.String())
	}
}

func TestEntryString(t *testing.T) {
	for _, c := range []struct {
		e    Entry
		want string
	}{
		{Entry{Step{Take, 1, 0}, Outcome{Got: 1, Live: 1}}, "take 1 at 0 => got 1 idle 0 live 1"},
		{Entry{Step{Take, 3, 7}, Outcome{Refused: true, Live: 2}}, "take 3 at 7 => refused idle 0 live 2"},
		{Entry{Step{Take, 1, 9}, Outcome{Closed: []int{1, 2}, Got: 3, Idle: 1, Live: 2}}, "take 1 at 9 => closed 1,2 got 3 idle 1 live 2"},
		{Entry{Step{Give, 2, 9}, Outcome{Idle: 1, Live: 2}}, "give 2 at 9 => idle 1 live 2"},
		{Entry{Step{Evict, 0, 20}, Outcome{Closed: []int{4}}}, "evict at 20 => closed 4 idle 0 live 0"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestRecordingRoundTrip reads every committed recording and writes it
// back: the bytes must not change, or a comparison could pass on a lossy
// reading.
func TestRecordingRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*.rec"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings (%v)", err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 {
			t.Errorf("%s is empty", file)
			continue
		}
		recs, err := ParseRecording(bytes.NewReader(raw), file)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteRecording(&b, recs); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), raw) {
			t.Errorf("%s changes when read and written back", file)
		}
	}
}

func TestParseRecordingErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"trace a\nsize 1\nage none\ntake 1 at 0\nend\n", "want: STEP => OUTCOME"},
		{"trace a\ntake 1 at 0 => got\nend\n", `"got" needs a value`},
		{"trace a\ntake 1 at 0 => got x idle 0 live 1\nend\n", "want a whole number"},
		{"trace a\ntake 1 at 0 => kept 1\nend\n", `unknown outcome "kept"`},
		{"trace a\ntake 1 at 0 => closed 1,,2 idle 0 live 0\nend\n", "want a whole number"},
		{"trace a\ntake 1 at 0 => idle 0 live 1\n", "has no end"},
	} {
		_, err := ParseRecording(strings.NewReader(c.src), "src")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.src, err, c.want)
		}
	}
}

func TestDiff(t *testing.T) {
	base := Recording{
		Name: "d", Ran: "x 1", Policy: Policy{Size: 1},
		Entries: []Entry{
			{Step{Take, 1, 0}, Outcome{Got: 1, Live: 1}},
			{Step{Give, 1, 0}, Outcome{Idle: 1, Live: 1}},
		},
	}
	clone := func() Recording {
		r := base
		r.Entries = append([]Entry(nil), base.Entries...)
		return r
	}
	same := clone()
	same.Ran = "y 2"
	if d := Diff(base, same); d != "" {
		t.Errorf("recordings that differ only in their ran line differ: %s", d)
	}
	for name, change := range map[string]func(*Recording){
		"another resource": func(r *Recording) { r.Entries[0].Got = 2 },
		"a refusal":        func(r *Recording) { r.Entries[0].Got, r.Entries[0].Refused = 0, true },
		"another count":    func(r *Recording) { r.Entries[1].Idle = 0 },
		"a closing":        func(r *Recording) { r.Entries[1].Closed = []int{1} },
		"a step fewer":     func(r *Recording) { r.Entries = r.Entries[:1] },
		"another policy":   func(r *Recording) { r.Policy.Size = 2 },
		"another trace":    func(r *Recording) { r.Name = "e" },
	} {
		other := clone()
		change(&other)
		if d := Diff(base, other); d == "" {
			t.Errorf("%s: no difference found", name)
		}
	}
	got, refused := base.Handouts()
	if got != 1 || refused != 0 {
		t.Errorf("Handouts() = %d, %d; want 1, 0", got, refused)
	}
}
