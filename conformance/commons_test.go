package conformance

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/conformance/internal/trace"
	"github.com/wardpool/wardpool/internal/testenv"
)

// commonsRunner compiles the Commons Pool 2 runner into a temporary
// directory and returns a function that runs it with args, answering its
// standard output and standard error.
func commonsRunner(t *testing.T) func(args ...string) (string, string, error) {
	t.Helper()
	java, javac, jar := testenv.Java(t)
	classes := t.TempDir()
	src := filepath.Join("..", "scripts", "reference", "CommonsPoolRunner.java")
	if out, err := exec.Command(javac, "-d", classes, "-cp", jar, src).CombinedOutput(); err != nil {
		t.Fatalf("javac %s: %v\n%s", src, err, out)
	}
	cp := classes + string(os.PathListSeparator) + jar
	return func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(java, append([]string{"-cp", cp, "CommonsPoolRunner"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
}

// TestCommonsPoolRunner runs the Commons Pool 2 runner as scripts/reference
// does: on the committed plans, whose recording it must give again (the ran
// line aside, which must name Commons Pool 2 and its version), and on fresh
// traces of every family it is compared on, drawn from a seed no committed
// file uses, where it must answer as wardpool does. It must refuse a trace
// it cannot express (a lifetime) that names it, and leave one out with
// --all. So a runner that breaks, or a Commons Pool that drifts, fails here
// as well as in scripts/reference/check.
func TestCommonsPoolRunner(t *testing.T) {
	run := commonsRunner(t)

	plans := filepath.Join("testdata", "plans.steps")
	out, stderr, err := run(plans)
	if err != nil {
		t.Fatalf("runner on %s: %v\n%s", plans, err, stderr)
	}
	got, err := trace.ParseRecording(strings.NewReader(out), "runner output")
	if err != nil {
		t.Fatal(err)
	}
	want, err := trace.ReadRecordings(filepath.Join("testdata", "plans."+trace.CommonsPool+".rec"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Errorf("the runner recorded %d plans, the committed recording holds %d", len(got), len(want))
	}
	for _, rec := range got {
		if !strings.HasPrefix(rec.Ran, trace.CommonsPool+" 2.") || !strings.Contains(rec.Ran, " on java ") {
			t.Errorf("trace %s: ran %q, want commons-pool 2.x on java ...", rec.Name, rec.Ran)
		}
		if d := trace.Diff(want[rec.Name], rec); d != "" {
			t.Errorf("Commons Pool no longer answers as recorded: %s", d)
		}
	}

	// Fresh traces, against the pool, in one file (one JVM).
	dir := t.TempDir()
	fresh := trace.Generate(27, 12)
	var mine []trace.Trace
	for _, family := range trace.Families {
		for _, tr := range fresh[family] {
			if tr.ComparedWith(trace.CommonsPool) {
				mine = append(mine, tr)
			}
		}
	}
	steps := filepath.Join(dir, "fresh.steps")
	var b bytes.Buffer
	if err := trace.WriteSteps(&b, mine); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(steps, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = run(steps)
	if err != nil {
		t.Fatalf("runner on fresh traces: %v\n%s", err, stderr)
	}
	recs, err := trace.ParseRecording(strings.NewReader(out), "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(mine) || len(mine) == 0 {
		t.Fatalf("%d recordings of %d fresh traces", len(recs), len(mine))
	}
	closing, evicted := 0, 0
	for i, tr := range mine {
		ours, err := trace.Replay(tr)
		if err != nil {
			t.Fatal(err)
		}
		if d := trace.Diff(recs[i], ours); d != "" {
			t.Errorf("the pool decides differently from Commons Pool: %s", d)
		}
		for _, e := range recs[i].Entries {
			switch {
			case e.Step.Verb == trace.Give && len(e.Closed) > 0:
				closing++
			case e.Step.Verb == trace.Evict && len(e.Closed) > 0:
				evicted++
			}
		}
	}
	if closing == 0 || evicted == 0 {
		t.Errorf("%d fresh traces: %d gives over the idle ceiling, %d evicts that retire; want some of each", len(mine), closing, evicted)
	}

	// A lifetime it cannot express: refused when named, left out with --all.
	life := filepath.Join(dir, "life.steps")
	src := "trace l\nsize 1\nage life 10\ncompare commons-pool\ntake 1\nend\n"
	if err := os.WriteFile(life, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if out, stderr, err := run(life); !errors.As(err, &exit) || exit.ExitCode() != 1 || out != "" || !strings.Contains(stderr, "lifetime") {
		t.Errorf("a lifetime trace named for it: %v, output %q, stderr %q; want exit 1 saying why", err, out, stderr)
	}
	if out, stderr, err := run("--all", life); err != nil || out != "" {
		t.Errorf("--all on a lifetime trace: %v, output %q, stderr %q; want nothing run", err, out, stderr)
	}
}
