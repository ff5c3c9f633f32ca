package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustTrace(t *testing.T, src string) Trace {
	t.Helper()
	traces, err := ParseSteps(strings.NewReader(src), "src")
	if err != nil {
		t.Fatal(err)
	}
	return traces[0]
}

func entries(t *testing.T, rec Recording) string {
	t.Helper()
	var b strings.Builder
	for _, e := range rec.Entries {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestReplay pins how Replay acts as a caller: a Stale answer is closed and
// the take repeated, a Make is made with the next index, a Wait is a refusal
// that leaves the seat empty, a drop closes the resource.
func TestReplay(t *testing.T) {
	rec, err := Replay(mustTrace(t, `trace r
size 2
age life 1000
take 1
take 2 at 100
take 3
give 1 at 500
take 3 at 1001
give 2
take 1
drop 1
take 1
evict at 3000
end`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `take 1 at 0 => got 1 idle 0 live 1
take 2 at 100 => got 2 idle 0 live 2
take 3 at 100 => refused idle 0 live 2
give 1 at 500 => idle 1 live 2
take 3 at 1001 => closed 1 got 3 idle 0 live 2
give 2 at 1001 => idle 1 live 2
take 1 at 1001 => got 2 idle 0 live 2
drop 1 at 1001 => closed 2 idle 0 live 1
take 1 at 1001 => got 4 idle 0 live 2
evict at 3000 => idle 0 live 2
`
	if got := entries(t, rec); got != want {
		t.Errorf("replayed:\n%s\nwant:\n%s", got, want)
	}
	if rec.Name != "r" || rec.Ran != Ran || rec.Policy != (Policy{Size: 2, Age: LifeAge, AgeMS: 1000}) {
		t.Errorf("header: %q %q %+v", rec.Name, rec.Ran, rec.Policy)
	}
}

// TestReplayIdle checks that an idle age is the pool's Keep and that evict
// closes what the pool retires.
func TestReplayIdle(t *testing.T) {
	rec, err := Replay(mustTrace(t, `trace i
size 3
age idle 100
take 1
take 2
give 1 at 10
give 2 at 20
evict at 110
evict at 111
end`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `take 1 at 0 => got 1 idle 0 live 1
take 2 at 0 => got 2 idle 0 live 2
give 1 at 10 => idle 1 live 2
give 2 at 20 => idle 2 live 2
evict at 110 => idle 2 live 2
evict at 111 => closed 1 idle 1 live 1
`
	if got := entries(t, rec); got != want {
		t.Errorf("replayed:\n%s\nwant:\n%s", got, want)
	}
}

// TestReplayIdleCeiling checks that the idle ceiling is the pool's Idle: a
// give that finds it reached closes the resource given back.
func TestReplayIdleCeiling(t *testing.T) {
	rec, err := Replay(mustTrace(t, `trace c
size 3
idle 1
take 1
take 2
take 3
give 1
give 2
drop 3
take 1
end`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `take 1 at 0 => got 1 idle 0 live 1
take 2 at 0 => got 2 idle 0 live 2
take 3 at 0 => got 3 idle 0 live 3
give 1 at 0 => idle 1 live 3
give 2 at 0 => closed 2 idle 1 live 2
drop 3 at 0 => closed 3 idle 1 live 1
take 1 at 0 => got 1 idle 0 live 1
`
	if got := entries(t, rec); got != want {
		t.Errorf("replayed:\n%s\nwant:\n%s", got, want)
	}
}

func TestReplayErrors(t *testing.T) {
	for _, c := range []struct{ steps, want string }{
		{"take 1\ntake 1", "the seat holds one already"},
		{"give 1", "the seat holds nothing"},
		{"take 1\ntake 2\ndrop 2", "the seat holds nothing"}, // seat 2 was refused
		{"take 1\ngive 1\ngive 1", "the seat holds nothing"},
	} {
		_, err := Replay(mustTrace(t, "trace e\nsize 1\n"+c.steps+"\nend\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.steps, err, c.want)
		}
	}
}

func TestPolicyLimits(t *testing.T) {
	l := Policy{Size: 4, Age: LifeAge, AgeMS: 1500}.Limits()
	if l.Size != 4 || l.Life.Milliseconds() != 1500 || l.Keep != 0 || l.Idle != 0 {
		t.Errorf("life: %+v", l)
	}
	l = Policy{Size: 1, Age: IdleAge, AgeMS: 7}.Limits()
	if l.Size != 1 || l.Keep.Milliseconds() != 7 || l.Life != 0 || l.Idle != 0 {
		t.Errorf("idle: %+v", l)
	}
	l = Policy{Size: 5, Idle: 2}.Limits()
	if l.Size != 5 || l.Idle != 2 || l.Keep != 0 || l.Life != 0 {
		t.Errorf("idle ceiling: %+v", l)
	}
}

func TestTallyErrors(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const steps = "trace a\nsize 1\nage none\ncompare generic-pool\ntake 1\nend\n"
	const rec = "trace a\nran generic-pool 0\nsize 1\nage none\ntake 1 at 0 => got 1 idle 0 live 1\nend\n"

	dir := t.TempDir()
	if _, _, err := Tally(dir, true); err == nil {
		t.Error("an empty directory tallied")
	}
	write(dir, "x.steps", steps)
	if _, _, err := Tally(dir, true); err == nil {
		t.Error("a trace with no recording of its reference tallied")
	}
	write(dir, "x.generic-pool.rec", rec+strings.Replace(rec, "trace a", "trace b", 1))
	if _, _, err := Tally(dir, true); err == nil || !strings.Contains(err.Error(), "trace b") {
		t.Errorf("a recording of a trace not in the step file: %v", err)
	}
	write(dir, "x.generic-pool.rec", rec)
	rows, diffs, err := Tally(dir, true)
	if err != nil || len(diffs) != 0 || len(rows) != 1 || rows[0].Handouts != 1 || rows[0].Same != 1 {
		t.Errorf("Tally = %+v, %v, %v", rows, diffs, err)
	}
	write(dir, "x.generic-pool.rec", strings.Replace(rec, "idle 0", "idle 1", 1))
	rows, diffs, err = Tally(dir, true)
	if err != nil || len(diffs) != 1 || rows[0].Differ != 1 || rows[0].Same != 0 {
		t.Errorf("Tally of a differing recording = %+v, %v, %v", rows, diffs, err)
	}
	if _, _, err := Tally(dir, false); err == nil {
		t.Error("tallied without a wardpool recording")
	}
}
