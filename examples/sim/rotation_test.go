package main

import (
	"slices"
	"strings"
	"testing"
)

// The rotation scenario against the at-once form of the same rotation:
// over 5 s the dials a second stay near 32/5 and almost nobody gives up;
// at once the 32 are re-dialled within the second and the callers behind
// the dials time out. Both are read over the same stretch.
func TestRotationCompare(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/rotation.txt", "-compare", "rotate-over=0", "-table=false")
	read := failoverRow(t, out, "  read over")
	dials := failoverRow(t, out, "  dials / peak a second")
	callers := failoverRow(t, out, "  callers waited / timed out")
	if len(read) != 2 || len(dials) != 2 || len(callers) != 2 {
		t.Fatalf("want two columns:\n%s", out)
	}
	if !slices.Equal(read[0], read[1]) {
		t.Errorf("read over %v and %v, want the same stretch", read[0], read[1])
	}
	if a, b := dials[0][1], dials[1][1]; a > 10 || b < 30 {
		t.Errorf("peak dials a second: over 5s %d, at once %d; want at most 10 and about 32", a, b)
	}
	if a, b := callers[0][1], callers[1][1]; a*10 > b || b == 0 {
		t.Errorf("timed out: over 5s %d, at once %d; want a tenth at most", a, b)
	}
	if !strings.Contains(out, "at 10s, over 5s") || !strings.Contains(out, "at 10s, at once") {
		t.Errorf("the forms are not named:\n%s", out)
	}
	// The flags set a rotation on a built-in, and the summary reports it.
	out = sim(t, "-scenario", "steady", "-rotate-at", "10s", "-rotate-over", "5s", "-table=false")
	if !strings.Contains(out, "rotation       at 10s, over 5s: from 10s to 17s ") {
		t.Errorf("summary:\n%s", out)
	}
	if out := sim(t, "-scenario", "steady", "-table=false"); strings.Contains(out, "rotation") {
		t.Errorf("a run without a rotation reports one:\n%s", out)
	}
}
