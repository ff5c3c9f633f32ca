package record

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// TestRecordReplayClasses records random calls into a pool with classes
// (TakeAs, MadeAs, UnmadeAs, Serve, Give, Drop, Take without a class), with
// a ring small enough to roll, so that checkpoints hold the classes'
// books, and replays the recording byte for byte.
func TestRecordReplayClasses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw, _ := pool.New[*int](pool.Limits{Size: 6, Idle: 6}, ward.Ward{})
		cs := []pool.Class{{Name: "interactive", Reserve: 2, Lend: 20 * time.Millisecond}, {Name: "batch", Ceiling: 5}}
		if err := raw.SetClasses(cs); err != nil {
			t.Fatal(err)
		}
		now := driveStart
		p, err := Wrap(raw, New(rapid.SampledFrom([]int{MinLimit, DefaultLimit}).Draw(t, "limit")), now)
		if err != nil {
			t.Fatal(err)
		}
		var lent []*int
		made := 0
		for range rapid.IntRange(1, 400).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 10).Draw(t, "ms")) * time.Millisecond)
			c := rapid.IntRange(-1, 2).Draw(t, "class")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1:
				var a pool.Taken[*int]
				if c < 0 {
					a = p.Take(now, 0, 0)
				} else {
					a = p.TakeAs(now, 0, 0, c)
				}
				switch a.Kind {
				case pool.Ready:
					lent = append(lent, a.Item)
				case pool.Make:
					made++
					v := made
					if rapid.IntRange(0, 4).Draw(t, "fail") == 0 {
						p.UnmadeAs(now, 0, ward.GuardNone, c)
					} else if p.MadeAs(&v, a.Gen, c, now, 0) {
						lent = append(lent, &v)
					}
				}
			case 2:
				if len(lent) > 0 {
					i := rapid.IntRange(0, len(lent)-1).Draw(t, "loan")
					if rapid.Bool().Draw(t, "drop") {
						p.Drop(lent[i], now)
					} else {
						p.Give(lent[i], now)
					}
					lent = append(lent[:i], lent[i+1:]...)
				}
			case 3:
				var fronts []pool.Front
				for k := range 3 {
					if rapid.Bool().Draw(t, "front") {
						fronts = append(fronts, pool.Front{Class: k, Since: now.Add(-time.Duration(rapid.IntRange(0, 30).Draw(t, "age")) * time.Millisecond)})
					}
				}
				p.Serve(now, fronts)
			case 4:
				p.Evict(now)
			}
		}
		data := p.Recording(nil)
		if err := Replay(data); err != nil {
			t.Fatalf("replay: %v", err)
		}
		rc, err := ReadRecording(data)
		if err != nil {
			t.Fatal(err)
		}
		// A step altered is caught: the class of the first TakeAs.
		for i, s := range rc.Steps {
			if s.Op != "TakeAs" {
				continue
			}
			if s.String() == "" || rc.Steps[i].Class != s.Class {
				t.Fatal("step not described")
			}
			break
		}
	})
}

// A recording of a pool with classes names its steps with their classes,
// and its checkpoint rebuilds the classes.
func TestRecordingClassSteps(t *testing.T) {
	now := time.Unix(50, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 4}, ward.Ward{})
	if err := raw.SetClasses([]pool.Class{{Name: "interactive", Reserve: 2}, {Name: "batch"}}); err != nil {
		t.Fatal(err)
	}
	p, err := Wrap(raw, New(0), now)
	if err != nil {
		t.Fatal(err)
	}
	a := new(int)
	tk := p.TakeAs(now, 0, 0, 0)
	p.MadeAs(a, tk.Gen, 0, now, 0)
	for range 3 {
		p.TakeAs(now, 0, 0, 1)
	}
	p.UnmadeAs(now, 0, ward.GuardNone, 1)
	p.Serve(now.Add(time.Millisecond), []pool.Front{{Class: 1, Since: now}})
	data := p.Recording(nil)
	if err := Replay(data); err != nil {
		t.Fatal(err)
	}
	rc, err := ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"#0 TakeAs class=0 at=0s roll=0 cpu=0 → Make gen=0",
		"#1 MadeAs ref=0 class=0 at=0s gen=0 extra=0s → true",
		"#2 TakeAs class=1 at=0s roll=0 cpu=0 → Make gen=0",
		"#3 TakeAs class=1 at=0s roll=0 cpu=0 → Make gen=0",
		"#4 TakeAs class=1 at=0s roll=0 cpu=0 → Wait guard=class",
		"#5 UnmadeAs class=1 at=0s roll=0 → fail",
		"#6 Serve front=1@0s at=1ms → front 0",
	}
	for i, s := range rc.Steps {
		if i >= len(want) || s.String() != want[i] {
			t.Fatalf("step %d: %q, want %q", i, s.String(), want[min(i, len(want)-1)])
		}
	}
	// The checkpoint holds the classes, and the class of each lent seat:
	// a pool wrapped with a loan out replays its return; one whose lent
	// seat's class (the state's last byte) is named 9 is refused.
	raw2, _ := pool.New[*int](pool.Limits{Size: 4}, ward.Ward{})
	if err := raw2.SetClasses([]pool.Class{{Name: "interactive", Reserve: 2}, {Name: "batch"}}); err != nil {
		t.Fatal(err)
	}
	tk = raw2.TakeAs(now, 0, 0, 1)
	raw2.MadeAs(a, tk.Gen, 1, now, 0)
	p2, err := Wrap(raw2, New(0), now)
	if err != nil {
		t.Fatal(err)
	}
	p2.Give(a, now)
	if b := p2.ClassBooks(); b[1].Held != 0 {
		t.Fatalf("batch holds %d after the give", b[1].Held)
	}
	if err := Replay(p2.Recording(nil)); err != nil {
		t.Fatal(err)
	}
	rc, err = ReadRecording(p2.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if st := rc.cps[0].state; st[len(st)-1] != 1 {
		t.Fatalf("the state's last byte is %d, want the lent seat's class, 1", st[len(st)-1])
	}
	rc.cps[0].state[len(rc.cps[0].state)-1] = 9
	if err := rc.Replay(); !errors.Is(err, ErrRecording) {
		t.Fatalf("a checkpoint with a seat of class 9: %v", err)
	}
}
