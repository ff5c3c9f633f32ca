package main

import (
	"strings"
	"testing"
)

// The full scenario against the same run failing its refused callers: a
// backend that takes 4 connections from a pool of 8 fails no call when the
// pool is told the refusal is for want of room, and refuses the first
// burst of dials and then about one a second; told it is a failed dial,
// it fails a caller for most of the dials it refuses, tens a second. A
// full setting that was ignored would give two equal columns; a
// server-max that was, no refusal at all.
func TestFullCompare(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/full.txt", "-compare", "full=fail", "-table=false")
	failed := failoverRow(t, out, "calls failed")
	refused := failoverRow(t, out, "  refused dials / peak a second")
	conns := failoverRow(t, out, "  most connections at once")
	if len(failed) != 2 || len(refused) != 2 || len(conns) != 2 {
		t.Fatalf("want two columns:\n%s", out)
	}
	if a, b := failed[0][0], failed[1][0]; a != 0 || b < 100 {
		t.Errorf("calls failed: waiting %d, failing %d; want none and 100 or more", a, b)
	}
	// 20 seconds: the first burst (at most Size-4) and one a second.
	if w, f := refused[0], refused[1]; w[0] == 0 || w[0] > 4+20 || w[1] > 4 || f[0] < 10*w[0] {
		t.Errorf("refused dials / peak a second: waiting %v, failing %v", w, f)
	}
	if conns[0][0] != 4 || conns[1][0] != 4 {
		t.Errorf("most connections at once: %v, %v; want the backend's 4", conns[0], conns[1])
	}
	if !strings.Contains(out, "takes 4, refused: the caller waits") || !strings.Contains(out, "takes 4, refused: the caller fails") {
		t.Errorf("the forms are not named:\n%s", out)
	}
	// The summary says it too, and a run without a limit says nothing.
	out = sim(t, "-scenario", "scenarios/full.txt", "-table=false")
	if !strings.Contains(out, "full backend   takes 4, refused: the caller waits: 21 dials refused (peak 3 a second)") {
		t.Errorf("summary:\n%s", out)
	}
	if out := sim(t, "-scenario", "scenarios/full.txt", "-server-max", "0", "-table=false"); strings.Contains(out, "full backend") || strings.Contains(out, "refused dials") {
		t.Errorf("a run without a limit reports one:\n%s", out)
	}
}
