package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// failoverRow reads the numbers of the comparison row named name, one
// slice per run.
func failoverRow(t *testing.T, out, name string) [][]int {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		var runs [][]int
		for _, cell := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(rest), -1) {
			var nums []int
			for _, f := range regexp.MustCompile(`\d+`).FindAllString(cell, -1) {
				n, _ := strconv.Atoi(f)
				nums = append(nums, n)
			}
			runs = append(runs, nums)
		}
		return runs
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

// The failover built-in against the same run without the classifier's
// reset: A (reset, the default) loses a handful of writes and keeps no
// connection to the old node a second on; B (classify=none) keeps all of
// them and goes on failing. A classify setting that was ignored would
// give two equal columns.
func TestFailoverCompareShowsTheClassifier(t *testing.T) {
	out := sim(t, "-scenario", "failover", "-compare", "classify=none", "-table=false")
	failed := failoverRow(t, out, "writes failed / 1 s or more after")
	old := failoverRow(t, out, "old-node connections 1 s after")
	resets := failoverRow(t, out, "resets")
	if len(failed) != 2 || len(old) != 2 || len(resets) != 2 {
		t.Fatalf("want two columns:\n%s", out)
	}
	if a, b := failed[0], failed[1]; a[1] != 0 || b[1] == 0 || a[0]*10 > b[0] {
		t.Errorf("writes failed: A %v, B %v; want A's a tenth of B's at most and none of A's late", a, b)
	}
	if old[0][0] != 0 || old[1][0] == 0 {
		t.Errorf("old-node connections after 1 s: A %v, B %v; want 0 and some", old[0], old[1])
	}
	if resets[0][0] != 1 || resets[1][0] != 0 {
		t.Errorf("resets: A %v, B %v; want 1 and 0", resets[0], resets[1])
	}
	if !strings.Contains(out, "classify=none") {
		t.Errorf("B's label does not name its setting:\n%s", out)
	}
}

// The summary of a failover run says what happened.
func TestFailoverSummary(t *testing.T) {
	out := sim(t, "-scenario", "failover", "-table=false")
	if !strings.Contains(out, "failover       at 8s, classifier reset: ") || !strings.Contains(out, "1 resets") {
		t.Errorf("summary:\n%s", out)
	}
	if out := sim(t, "-scenario", "steady", "-table=false"); strings.Contains(out, "failover") {
		t.Errorf("a run without failover reports one:\n%s", out)
	}
}

// The promotion scenario: a failover with half a second in which no node
// takes a connection. The reset comes either way; the ward is what keeps
// the pool from dialling the missing primary at the callers' rate.
func TestPromotionShowsTheWard(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/promotion.txt", "-compare", "ward=none", "-table=false")
	dials := failoverRow(t, out, "dials / to a dead backend")
	resets := failoverRow(t, out, "resets")
	if resets[0][0] != 1 || resets[1][0] != 1 {
		t.Errorf("resets: A %v, B %v; want one each", resets[0], resets[1])
	}
	if a, b := dials[0][1], dials[1][1]; a*4 > b {
		t.Errorf("dials to a dead backend: with the ward %d, without %d; want a quarter at most", a, b)
	}
}
