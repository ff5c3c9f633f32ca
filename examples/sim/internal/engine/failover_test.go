package engine

import (
	"strings"
	"testing"
	"time"
)

// TestFailoverClassifierBuys: the built-in failover scenario under each
// classifier. With reset (the drivers' default), the old node's
// connections are all gone within a second and failures stop; with none,
// they stay and writes go on failing for the rest of the run; with
// destroy, each of them fails a write before it goes, idle ones included.
func TestFailoverClassifierBuys(t *testing.T) {
	run := func(classify string) FailoverSum {
		s := builtin(t, "failover")
		s.Classify = classify
		r, err := Run(s, Options{Observe: booksCheck(t, "failover "+classify)})
		if err != nil {
			t.Fatal(err)
		}
		return r.Sum.Failover
	}
	reset, destroy, none := run(ClassifyReset), run(ClassifyDestroy), run(ClassifyNone)
	t.Logf("reset %+v\ndestroy %+v\nnone %+v", reset, destroy, none)
	if reset.Resets != 1 || reset.OldOpen != 0 || reset.FailedLate != 0 || reset.Failed > 20 {
		t.Errorf("reset: %+v; want one reset, no old connection after 1 s, at most 20 failures (the loans out then and in the first write's time), none late", reset)
	}
	if destroy.Resets != 0 || destroy.Failed <= reset.Failed {
		t.Errorf("destroy: %+v; want no reset and more failures than reset's", destroy)
	}
	if none.Resets != 0 || none.OldOpen == 0 || none.FailedLate == 0 || none.Failed <= destroy.Failed {
		t.Errorf("none: %+v; want the old connections kept and writes failing after 1 s, more than destroy's", none)
	}
	if reset.FirstWrite < 0 || reset.FirstWrite > time.Second {
		t.Errorf("reset: first write %v after the failover", reset.FirstWrite)
	}
	if none.FirstWrite >= 0 && none.FirstWrite <= reset.FirstWrite {
		t.Errorf("none's first write (%v) came no later than reset's (%v)", none.FirstWrite, reset.FirstWrite)
	}
}

func TestFailoverSettings(t *testing.T) {
	s, err := Parse(strings.NewReader("failover 3s\nclassify destroy\n"), builtin(t, "steady"))
	if err != nil || s.Failover != 3*time.Second || s.Classify != ClassifyDestroy {
		t.Fatalf("Parse: %+v, %v", s, err)
	}
	for _, bad := range []string{"classify maybe", "classify", "failover -1s"} {
		if _, err := Parse(strings.NewReader(bad), s); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	// Without a failover, no figures.
	r, err := Run(builtin(t, "steady"), Options{})
	if err != nil || r.Sum.Failover != (FailoverSum{}) {
		t.Fatalf("steady: %+v, %v", r.Sum.Failover, err)
	}
}
