package main

import (
	"strings"
	"testing"
)

// The switchover scenario against the same run not held: the held one
// fails only the writes out on the old node, where the other fails a
// dial for every caller of the promotion, and dials the missing primary
// ten times a second where the other dials it at the callers' rate. A
// hold-for setting that was ignored would give two equal columns.
func TestSwitchoverCompare(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/switchover.txt", "-compare", "hold-for=0", "-table=false")
	failed := failoverRow(t, out, "calls failed")
	parts := failoverRow(t, out, "  writes / dial errors / timed out")
	down := failoverRow(t, out, "  failed dials / peak a second")
	gap := failoverRow(t, out, "  held: dials / least gap")
	if len(failed) != 2 || len(parts) != 2 || len(down) != 2 || len(gap) != 2 {
		t.Fatalf("want two columns:\n%s", out)
	}
	if a, b := failed[0][0], failed[1][0]; a*10 > b {
		t.Errorf("calls failed: held %d, not held %d; want a tenth at most", a, b)
	}
	if parts[0][1] != 0 || parts[0][2] != 0 || parts[0][0] != parts[1][0] {
		t.Errorf("held: %v, not held %v; want no dial error nor timeout held, the same writes failed", parts[0], parts[1])
	}
	if a, b := down[0][1], down[1][1]; a > 6 || b < 100 {
		t.Errorf("failed dials at the peak second: held %d, not held %d; want ten a second at most held (half a second), over 100 not", a, b)
	}
	if g := gap[0]; len(g) < 2 || g[1] < 100 || len(gap[1]) != 0 {
		t.Errorf("held dials / least gap: %v and %v; want 100ms apart held, none not", gap[0], gap[1])
	}
	if !strings.Contains(out, "for 2s, a dial every 100ms") || !strings.Contains(out, "hold-for=0") {
		t.Errorf("the forms are not named:\n%s", out)
	}
	// The flags set a hold on a scenario, and the summary reports it.
	out = sim(t, "-scenario", "scenarios/promotion.txt", "-ward", "none", "-hold-for", "1s", "-hold-every", "50ms", "-table=false")
	if !strings.Contains(out, "switchover     held for 1s, a dial every 50ms: first dial made ") {
		t.Errorf("summary:\n%s", out)
	}
	if out := sim(t, "-scenario", "scenarios/promotion.txt", "-table=false"); !strings.Contains(out, "switchover     not held: ") {
		t.Errorf("a run without a hold reports one:\n%s", out)
	}
}
