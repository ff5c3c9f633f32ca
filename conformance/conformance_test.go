package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/conformance/internal/trace"
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
var minHandouts = map[string]int{trace.SQLAlchemy: 2000, trace.GenericPool: 5000, trace.CommonsPool: 2000}

func stepFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.steps"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no step files in testdata (%v)", err)
	}
	return files
}

func mustSteps(t *testing.T, file string) []trace.Trace {
	t.Helper()
	traces, err := trace.ReadSteps(file)
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
			var recs []trace.Recording
			for _, tr := range mustSteps(t, file) {
				rec, err := trace.Replay(tr)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			var got bytes.Buffer
			if err := trace.WriteRecording(&got, recs); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".steps") + "." + trace.Wardpool + ".rec"
			if *rewrite {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := trace.ReadRecordings(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./conformance -rewrite to write it)", err)
			}
			if len(want) != len(recs) {
				t.Errorf("%s holds %d traces, the step file %d", golden, len(want), len(recs))
			}
			for _, rec := range recs {
				if d := trace.Diff(want[rec.Name], rec); d != "" {
					t.Errorf("the pool now answers differently from %s; read the difference, then rewrite with -rewrite if it is meant:\n%s", golden, d)
				}
			}
		})
	}
}

// TestReferences replays every committed trace against the pool and compares
// it with the recording of each reference its compare line names.
func TestReferences(t *testing.T) {
	rows, diffs, err := trace.Tally("testdata", true)
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
	for _, r := range trace.Totals(rows) {
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
	rows, _, err := trace.Tally("testdata", false)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := trace.WriteTable(&want, append(rows, trace.Totals(rows)...)); err != nil {
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
	if err := trace.WriteGenerated(dir, testSeed, testCount); err != nil {
		t.Fatal(err)
	}
	for _, family := range trace.Families {
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
