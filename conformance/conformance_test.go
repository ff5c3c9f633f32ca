package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite regenerates wardpool's own recordings (testdata/*.wardpool.rec)
// from the pool as it is. Run it only after reading the diff the failing test
// prints: it never touches the references' recordings, which only the
// reference runners write (scripts/reference/check).
var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.wardpool.rec from the pool as it is")

// The generated traces in testdata were drawn with this seed and count.
const (
	testSeed  = 1
	testCount = 200
)

// minHandouts is the least number of hand-outs the committed traces must
// give compared with each reference: whole traces, and the traces compared
// up to deliberate difference 3.
var minHandouts = map[string]int{SQLAlchemy: 2000, GenericPool: 5000, CommonsPool: 2000}

func stepFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.steps"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no step files in testdata (%v)", err)
	}
	return files
}

func mustSteps(t *testing.T, file string) []Trace {
	t.Helper()
	traces, err := readSteps(file)
	if err != nil {
		t.Fatal(err)
	}
	return traces
}

// TestReplayGolden replays every committed trace against the pool and
// compares the recording with the committed one (testdata/*.wardpool.rec).
func TestReplayGolden(t *testing.T) {
	for _, file := range stepFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var recs []Recording
			for _, tr := range mustSteps(t, file) {
				rec, err := Replay(tr)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			var got bytes.Buffer
			if err := WriteRecording(&got, recs); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".steps") + "." + Wardpool + ".rec"
			if *rewrite {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := readRecordings(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./conformance -rewrite to write it)", err)
			}
			if len(want) != len(recs) {
				t.Errorf("%s holds %d traces, the step file %d", golden, len(want), len(recs))
			}
			for _, rec := range recs {
				if d := Diff(want[rec.Name], rec); d != "" {
					t.Errorf("the pool now answers differently from %s; read the difference, then rewrite with -rewrite if it is meant:\n%s", golden, d)
				}
			}
		})
	}
}

// TestReferences replays every committed trace against the pool and compares
// it with the recording of each reference its compare line names.
func TestReferences(t *testing.T) {
	rows, diffs, err := Tally("testdata", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Run(r.File+"/"+r.Reference, func(t *testing.T) {
			for _, d := range diffs {
				if d.File == r.File && d.Reference == r.Reference {
					t.Errorf("the pool decides differently from %s: %s", d.Reference, d.Text)
				}
			}
		})
	}
	compared := map[string]int{}
	for _, r := range Totals(rows) {
		compared[r.Reference] += r.Handouts
		if r.Reason != "" {
			t.Logf("%s: %d traces %s: %d hand-outs before it, %d after it held to the reference's rule",
				r.Reference, r.Traces, r.Reason, r.Handouts, r.Ruled)
			continue
		}
		t.Logf("%s: %d traces, %d hand-outs, %d refusals, %d traces differ", r.Reference, r.Traces, r.Handouts, r.Refusals, r.Differ)
	}
	for ref, least := range minHandouts {
		if compared[ref] < least {
			t.Errorf("%s: %d hand-outs compared, want at least %d", ref, compared[ref], least)
		}
	}
}

// TestReadmeTable checks that the table in README.md is the one the committed
// recordings give.
func TestReadmeTable(t *testing.T) {
	rows, _, err := Tally("testdata", false)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteTable(&want, append(rows, Totals(rows)...)); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, want.Bytes()) {
		t.Errorf("README.md does not hold the table of the committed recordings; it should read:\n%s", want.String())
	}
}

// TestGeneratedFiles checks that the committed generated traces are what the
// generator draws from their seed.
func TestGeneratedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteGenerated(dir, testSeed, testCount); err != nil {
		t.Fatal(err)
	}
	for _, family := range Families {
		want, err := os.ReadFile(filepath.Join(dir, family+".steps"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", family+".steps"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s.steps is not what go run ./conformance/internal/cmd/gen -seed %d -count %d draws", family, testSeed, testCount)
		}
	}
}

// TestRoutes checks that every committed trace goes only to references that
// can express it, and to at least one.
func TestRoutes(t *testing.T) {
	for _, file := range stepFiles(t) {
		for _, tr := range mustSteps(t, file) {
			if len(tr.Compare) == 0 {
				t.Errorf("%s: trace %s is compared with nothing", file, tr.Name)
			}
			for _, ref := range tr.Compare {
				if why := cannot(ref, tr); why != "" {
					t.Errorf("%s: trace %s is compared with %s, which %s", file, tr.Name, ref, why)
				}
			}
		}
	}
}

// cannot says why ref cannot stand for the pool in t, or "".
func cannot(ref string, t Trace) string {
	has := func(v Verb) bool {
		for _, s := range t.Steps {
			if s.Verb == v {
				return true
			}
		}
		return false
	}
	switch ref {
	case SQLAlchemy:
		switch {
		case t.Policy.Idle > 0:
			return "is run with no idle ceiling (pool_size is its ceiling on live connections)"
		case t.Policy.Age == IdleAge:
			return "has no idle age"
		case has(Evict):
			return "has no evictor"
		case has(Drop) && !strings.HasPrefix(t.Name, "plan-"):
			return "keeps an empty record for a dropped connection (only the plans drop with nothing idle below)"
		}
	case GenericPool:
		switch {
		case t.Policy.Idle > 0:
			return "has no idle ceiling"
		case t.Policy.Age == LifeAge && has(Evict):
			return "evicts by idle time only (its lifetime is a validate at a borrow)"
		}
	case CommonsPool:
		if t.Policy.Age == LifeAge {
			return "has no lifetime (its evictor knows idle time only)"
		}
	default:
		return "is not a reference"
	}
	return ""
}

// TestCannot pins which traces each reference can stand for: generic-pool
// takes a lifetime (a validate at a borrow) but not with an evict, whose
// evictor knows idle time only; SQLAlchemy takes no idle age and no evict;
// Commons Pool takes no lifetime; only Commons Pool takes an idle ceiling.
func TestCannot(t *testing.T) {
	life := Trace{Name: "t", Policy: Policy{Size: 1, Age: LifeAge, AgeMS: 10}, Steps: []Step{{Verb: Take, Seat: 1}}}
	lifeEvict := life
	lifeEvict.Steps = append([]Step{{Verb: Evict}}, life.Steps...)
	idle := life
	idle.Policy.Age = IdleAge
	idleEvict := lifeEvict
	idleEvict.Policy.Age = IdleAge
	ceiling := Trace{Name: "t", Policy: Policy{Size: 2, Idle: 1}, Steps: []Step{{Verb: Take, Seat: 1}}}
	for _, c := range []struct {
		ref  string
		tr   Trace
		want bool
	}{
		{GenericPool, life, true},
		{GenericPool, lifeEvict, false},
		{GenericPool, idle, true},
		{SQLAlchemy, life, true},
		{SQLAlchemy, lifeEvict, false},
		{SQLAlchemy, idle, false},
		{CommonsPool, life, false},
		{CommonsPool, idle, true},
		{CommonsPool, idleEvict, true},
		{CommonsPool, ceiling, true},
		{GenericPool, ceiling, false},
		{SQLAlchemy, ceiling, false},
		{Wardpool, life, false},
	} {
		if got := cannot(c.ref, c.tr) == ""; got != c.want {
			t.Errorf("%s with age %v and %d steps: can %v, want %v (%q)", c.ref, c.tr.Policy.Age, len(c.tr.Steps), got, c.want, cannot(c.ref, c.tr))
		}
	}
}
