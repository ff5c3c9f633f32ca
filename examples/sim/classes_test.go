package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// classRow returns the cells of the comparison's row name under the rows
// of class (the row "class: wait p50 / p99 / max" and the two after it),
// each split at " / ".
func classRow(t *testing.T, out, class, name string) [][]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, class+": wait p50 / p99 / max") {
			continue
		}
		for _, l := range lines[i : i+3] {
			rest, ok := strings.CutPrefix(l, name)
			if !ok {
				continue
			}
			var cells [][]string
			for _, cell := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(rest), -1) {
				cells = append(cells, strings.Split(cell, " / "))
			}
			return cells
		}
	}
	t.Fatalf("no row %q under %q in:\n%s", name, class, out)
	return nil
}

func dur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d
}

func flt(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return x
}

// The classes scenario against the same load first come first served
// (-compare classes=none): interactive's p99 wait is under 5 ms with its
// 2 reserved and over a second without (it queues behind the batch
// callers), and batch keeps at least 70% of its throughput, held to 6 of
// the 8 once interactive has come. Classes that were ignored would give
// two equal columns.
func TestClassesCompare(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/classes.txt", "-compare", "classes=none", "-table=false")
	t.Log("\n" + out)
	if !strings.Contains(out, "interactive (reserve 2), batch") || !strings.Contains(out, "none given to the pool: one FIFO") {
		t.Errorf("the classes are not named:\n%s", out)
	}
	wait := classRow(t, out, "interactive", "interactive: wait p50 / p99 / max")
	if len(wait) != 2 || len(wait[0]) != 3 || len(wait[1]) != 3 {
		t.Fatalf("interactive waits: %q", wait)
	}
	if a, b := dur(t, wait[0][1]), dur(t, wait[1][1]); a > 5*time.Millisecond || b < time.Second {
		t.Errorf("interactive p99: %v with classes, %v without; want under 5 ms and over 1 s", a, b)
	}
	served := classRow(t, out, "batch", "  served / a second")
	if len(served) != 2 || len(served[0]) != 2 || len(served[1]) != 2 {
		t.Fatalf("batch served: %q", served)
	}
	if a, b := flt(t, served[0][1]), flt(t, served[1][1]); a < 0.7*b || a >= b {
		t.Errorf("batch served a second: %v with classes, %v without; want 70%% or more, and less", a, b)
	}
	held := classRow(t, out, "batch", "  timed out / failed / most held after 1 s")
	if held[0][2] != "6" || held[1][2] != "8" {
		t.Errorf("batch held at most %s with classes and %s without; want 6 and 8", held[0][2], held[1][2])
	}
	// The summary says each class's figures too.
	out = sim(t, "-scenario", "scenarios/classes.txt", "-table=false")
	for _, want := range []string{
		"load           the classes' loads: ",
		"classes        interactive (reserve 2), batch\n",
		"  interactive  100 a second (Poisson), holding 2ms on average: wait p50 0s p99 ",
		"  batch        64 callers back to back, holding 200ms: wait p50 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the summary:\n%s", want, out)
		}
	}
	if out := sim(t, "-table=false"); strings.Contains(out, "classes") {
		t.Errorf("a run without classes speaks of them:\n%s", out)
	}
}

// The same seed gives the same report and the same chart, byte for byte,
// with classes.
func TestClassesSameSeedSameBytes(t *testing.T) {
	args := []string{"-scenario", "scenarios/classes.txt", "-compare", "classes=none", "-seconds", "10"}
	if a, b := sim(t, args...), sim(t, args...); a != b {
		t.Fatal("two reports from one seed")
	}
	if a, b := svg(t, args...), svg(t, args...); !bytes.Equal(a, b) {
		t.Fatal("two SVGs from one seed")
	}
	if a, b := sim(t, args...), sim(t, append(args, "-seed", "2")...); a == b {
		t.Fatal("seed 2 gave the report of seed 1")
	}
}

// A class the load does not know, or bad numbers, are refused with the
// line that says them.
func TestClassesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("size 8\nclass interactive reserve 2\nclass-load interative rate 100 hold 2ms\n"), 0o644)
	noLoad := filepath.Join(dir, "noload.txt")
	os.WriteFile(noLoad, []byte("size 8\nclass interactive reserve 2\n"), 0o644)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-scenario", bad}, `line 3: sim: bad scenario: class-load: no class "interative" (the classes are ["interactive"])`},
		{[]string{"-scenario", noLoad}, `line 2: sim: bad scenario: class "interactive" has no load`},
		{[]string{"-scenario", "scenarios/classes.txt", "-compare", "class-load nobody rate 1 hold 1s"}, `-compare: line 1: sim: bad scenario: class-load: no class "nobody"`},
		{[]string{"-scenario", "scenarios/classes.txt", "-compare", "class interactive reserve 9"}, "Reserve 9 is above Size 8"},
		{[]string{"-scenario", "scenarios/classes.txt", "-compare", "class-load batch callers -4 hold 1s"}, "callers: \"-4\" is not a whole number"},
		{[]string{"-scenario", "scenarios/classes.txt", "-compare", "classes=maybe"}, `classes: "maybe" is not none or on`},
		{[]string{"-scenario", "scenarios/classes.txt", "-size", "1"}, "flags: sim: bad scenario: wardpool: invalid classes: class \"interactive\": Reserve 2 is above Size 1"},
	} {
		err := cli(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.says)
		}
	}
	var le *engine.LineError
	if err := cli([]string{"-scenario", bad}, &bytes.Buffer{}); !errors.As(err, &le) || le.Line != 3 {
		t.Errorf("not a LineError at line 3: %v", err)
	}
}
