package engine

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool/record"
)

// classScenario is scenarios/classes.txt, the proof load of issue 34: a
// pool of 8; batch, 64 callers each holding 200 ms back to back;
// interactive, 100 callers a second (Poisson) holding 2 ms, 2 reserved.
func classScenario(t *testing.T) Scenario {
	t.Helper()
	text, err := os.ReadFile("../../scenarios/classes.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(bytes.NewReader(text), builtin(t, "steady"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runClasses runs s, checking the books every second, and returns the
// result and its interactive and batch figures.
func runClasses(t *testing.T, s Scenario, opt Options) (r *Result, inter, batch ClassSum) {
	t.Helper()
	opt.Observe = booksCheck(t, s.Name)
	r, err := Run(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 2 || r.Classes[0].Name != "interactive" || r.Classes[1].Name != "batch" {
		t.Fatalf("classes: %+v", r.Classes)
	}
	return r, r.Classes[0], r.Classes[1]
}

// TestClassesBesideFIFO: the same seeded load with interactive's 2
// reserved and first come first served. First come first served, an
// interactive caller queues behind the 56 batch callers waiting, about
// 1.4 s (7 rounds of 200 ms); with classes its p99 is under 5 ms (a 2 ms
// hold of its own class at most, and the start, where batch took all 8
// before interactive came, is under 1% of its callers), while batch,
// held to 6 of 8 after the first second, gets at least 70% of what it gets without classes (75%
// by the reserve alone). Were the classes ignored, the two runs would be
// the same; were the reserve never kept, interactive would wait as FIFO.
func TestClassesBesideFIFO(t *testing.T) {
	s := classScenario(t)
	_, ci, cb := runClasses(t, s, Options{})
	s.NoClasses = true
	_, fi, fb := runClasses(t, s, Options{})
	sec := s.Seconds
	t.Logf("classes: interactive p50 %v p99 %v max %v (%d served, %d timed out); batch %.1f a second, peak %d",
		ci.P50, ci.P99, ci.Max, ci.Served, ci.TimedOut, cb.PerSecond(sec), cb.Peak)
	t.Logf("FIFO:    interactive p50 %v p99 %v max %v (%d served, %d timed out); batch %.1f a second, peak %d",
		fi.P50, fi.P99, fi.Max, fi.Served, fi.TimedOut, fb.PerSecond(sec), fb.Peak)
	if ci.P99 > 5*time.Millisecond || fi.P99 < time.Second || ci.P99*100 > fi.P99 {
		t.Errorf("interactive p99: %v with classes, %v FIFO; want under 5 ms against a second or more", ci.P99, fi.P99)
	}
	if ci.TimedOut+ci.Failed != 0 || ci.Served != ci.Arrived {
		t.Errorf("interactive with classes: %d of %d served, %d timed out, %d failed", ci.Served, ci.Arrived, ci.TimedOut, ci.Failed)
	}
	ratio := cb.PerSecond(sec) / fb.PerSecond(sec)
	if ratio < 0.70 || ratio > 0.85 {
		t.Errorf("batch: %.1f a second with classes, %.1f FIFO (%.0f%%); want 70%% to 85%%", cb.PerSecond(sec), fb.PerSecond(sec), 100*ratio)
	}
	if ci.Reserve != 2 || fi.Reserve != 0 || cb.Peak != 6 || fb.Peak != 8 {
		t.Errorf("interactive's reserve %d and %d; batch held %d and %d at most, want 6 and 8", ci.Reserve, fi.Reserve, cb.Peak, fb.Peak)
	}
}

// TestClassesHoldBatchToItsShare: once interactive is present, batch
// holds at most Size less the reserve (6); a ceiling of 4 on batch holds
// it to 4; and a reserve lent after 50 ms (interactive's gaps are often
// longer) lets batch take all 8 at times, and costs interactive waits.
func TestClassesHoldBatchToItsShare(t *testing.T) {
	s := classScenario(t)
	s.Seconds = 20
	s.Classes[1].Ceiling = 4
	_, _, cb := runClasses(t, s, Options{})
	if cb.Peak != 4 || cb.Ceiling != 4 {
		t.Errorf("batch with a ceiling of 4 held %d at most (ceiling %d)", cb.Peak, cb.Ceiling)
	}
	s = classScenario(t)
	_, kept, keptB := runClasses(t, s, Options{})
	s.Classes[0].Lend = 50 * time.Millisecond
	_, lent, lentB := runClasses(t, s, Options{})
	t.Logf("interactive p99: lend 1s %v, lend 50ms %v; batch held at most %d and %d", kept.P99, lent.P99, keptB.Peak, lentB.Peak)
	if keptB.Peak != 6 || lentB.Peak != 8 {
		t.Errorf("batch held at most %d (lend 1s) and %d (lend 50ms); want 6 and 8", keptB.Peak, lentB.Peak)
	}
	if lent.P99 < 20*kept.P99 {
		t.Errorf("a reserve lent after 50 ms cost interactive little: p99 %v against %v", lent.P99, kept.P99)
	}
}

// TestClassesSameSeedSameRun: the same seed gives the same run, the same
// recording byte for byte, and a recording that replays (every call the
// engine made, TakeAs, Serve, MadeAs included, answered the same).
func TestClassesSameSeedSameRun(t *testing.T) {
	s := classScenario(t)
	s.Seconds = 6
	a, _, _ := runClasses(t, s, Options{Recorder: record.New(64 << 20)})
	b, _, _ := runClasses(t, s, Options{Recorder: record.New(64 << 20)})
	if !slices.Equal(a.Rows, b.Rows) || a.Sum != b.Sum || !slices.Equal(a.Classes, b.Classes) || !bytes.Equal(a.Recording, b.Recording) {
		t.Fatal("the same seed gave two runs")
	}
	rc, err := record.ReadRecording(a.Recording)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Steps[0].Index != 0 {
		t.Fatalf("the recorder dropped %d steps", rc.Steps[0].Index)
	}
	ops := map[string]int{}
	for _, st := range rc.Steps {
		ops[st.Op]++
	}
	if ops["TakeAs"] == 0 || ops["Serve"] == 0 || ops["MadeAs"] == 0 || ops["Take"] != 0 {
		t.Errorf("recorded ops %v: want TakeAs, Serve and MadeAs, no Take", ops)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	s.Seed = 2
	c, _, _ := runClasses(t, s, Options{})
	if slices.Equal(a.Classes, c.Classes) {
		t.Error("seed 2 gave the run of seed 1")
	}
}

// TestClassSettings: the class keys set what they say, a later class line
// sets the class afresh and keeps its load, classes=none keeps the loads,
// and bad input is a *LineError naming its line.
func TestClassSettings(t *testing.T) {
	s, err := Parse(strings.NewReader("size 8\nclass a reserve 2 ceiling 4 lend 250ms\nclass-load a rate 50 hold 5ms\nclass b lend never\nclass-load b callers 3 hold 1s\nclass a reserve 1\n"), builtin(t, "steady"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ClassLoad{{Rate: 50, Hold: 5 * time.Millisecond}, {Callers: 3, Hold: time.Second}}
	want[0].Name, want[0].Reserve = "a", 1
	want[1].Name, want[1].Lend = "b", -1
	if !slices.Equal(s.Classes, want) || s.NoClasses {
		t.Fatalf("Parse: %+v, no classes %v", s.Classes, s.NoClasses)
	}
	o, err := Override(s, "classes=none")
	if err != nil || !o.NoClasses || len(o.Classes) != 2 || o.poolClasses() != nil {
		t.Errorf("Override classes=none: %v, %+v", err, o)
	}
	if o, err = Override(o, "classes=on"); err != nil || o.NoClasses || len(o.poolClasses()) != 2 {
		t.Errorf("Override classes=on: %v, %+v", err, o)
	}
	for _, c := range []struct {
		text string
		line int
		says string
	}{
		{"class a\nclass-load b rate 1 hold 1s\n", 2, `no class "b"`},
		{"class-load a rate 1 hold 1s\n", 1, `no class "a"`},
		{"size 8\n\nclass a reserve 2\n", 3, `class "a" has no load`},
		{"size 4\nclass a reserve 3\nclass-load a rate 1 hold 1s\nclass b reserve 2\nclass-load b rate 1 hold 1s\n", 4, "reserves add up to 5"},
		{"size 4\nclass a reserve 5\nclass-load a rate 1 hold 1s\n", 2, "above Size 4"},
		{"class a reserve 2 ceiling 1\nclass-load a rate 1 hold 1s\n", 1, "above its Ceiling"},
		{"class a reserve -1\n", 1, "reserve"},
		{"class a reserve x\n", 1, "whole number"},
		{"class a lend soon\n", 1, "duration"},
		{"class a weight 2\n", 1, "none of reserve"},
		{"class a reserve\n", 1, "class takes NAME"},
		{"class\n", 1, "class takes NAME"},
		{"class a\nclass-load a rate 0 hold 1ms\n", 2, "rate: 0: want more than 0"},
		{"class a\nclass-load a rate -3 hold 1ms\n", 2, "not a number"},
		{"class a\nclass-load a callers 0 hold 1s\n", 2, "whole number from 1"},
		{"class a\nclass-load a rate 1 callers 2 hold 1s\n", 2, "class-load takes"},
		{"class a\nclass-load a rate 1 rate 2\n", 2, "given twice"},
		{"class a\nclass-load a rate 5 hold 0\n", 2, "hold: 0: want more than 0"},
		{"class a\nclass-load a rate 5 wait 1s\n", 2, "none of rate"},
		{"classes maybe\n", 1, "not none or on"},
		{"seconds 2592000\nclass a\nclass-load a callers 1000 hold 1ms\n", 0, "more than"},
	} {
		_, err := Parse(strings.NewReader(c.text), builtin(t, "steady"))
		var le *LineError
		switch {
		case err == nil:
			t.Errorf("Parse(%q) took it", c.text)
		case !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), c.says):
			t.Errorf("Parse(%q): %v; want %q", c.text, err, c.says)
		case c.line > 0 && (!errors.As(err, &le) || le.Line != c.line):
			t.Errorf("Parse(%q): %v; want line %d", c.text, err, c.line)
		}
	}
	// A scenario built by hand is held to the same rules.
	s.Classes[1].Hold = 0
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "hold") {
		t.Errorf("Validate of a class without a hold: %v", err)
	}
}

// TestClassesLendAnAbsentReserve: interactive stops from 10 s to 20 s (a
// burst of factor 0). A second after its last caller (its Lend), its
// reserve is lent and batch holds all 8 at every second's end until it
// comes back; with the reserve never lent (lend never), batch stays at 6.
func TestClassesLendAnAbsentReserve(t *testing.T) {
	s := classScenario(t)
	s.Seconds = 30
	s.Bursts = []Burst{{Span{10 * time.Second, 20 * time.Second}, 0}}
	// lent is the least and the most lent at the ends of seconds from to
	// to.
	lent := func(r *Result, from, to int) (lo, hi int) {
		lo = 1 << 30
		for _, x := range r.Rows[from-1 : to] {
			lo, hi = min(lo, x.Lent), max(hi, x.Lent)
		}
		return lo, hi
	}
	r, _, _ := runClasses(t, s, Options{})
	if lo, _ := lent(r, 12, 20); lo != 8 {
		t.Errorf("interactive absent (12 s to 20 s): %d lent at a second's end at least, want 8", lo)
	}
	s.Classes[0].Lend = -1
	k, _, _ := runClasses(t, s, Options{})
	if _, hi := lent(k, 12, 20); hi != 6 {
		t.Errorf("lend never, interactive absent: %d lent at a second's end at most, want 6", hi)
	}
}

// TestClassesRecordingRefusedByName: a recording of a pool with classes
// is not rebuilt into a load (not done yet), and ReadKeeper says so by
// name instead of "no acquire".
func TestClassesRecordingRefusedByName(t *testing.T) {
	s := classScenario(t)
	s.Seconds = 2
	r, _, _ := runClasses(t, s, Options{Recorder: record.New(64 << 20)})
	_, err := ReadKeeper(r.Recording)
	if !errors.Is(err, ErrKeeperLoad) || !strings.Contains(err.Error(), "classes of callers") {
		t.Fatalf("ReadKeeper of a recording with classes: %v", err)
	}
}
