package trace

import (
	"bytes"
	"strings"
	"testing"
)

func TestGenerateIsDeterministic(t *testing.T) {
	write := func(seed uint64) string {
		var b bytes.Buffer
		for _, f := range Families {
			if err := WriteSteps(&b, Generate(seed, 12)[f]); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	first, again := write(3), write(3)
	if first != again {
		t.Error("the same seed drew different traces")
	}
	if first == write(4) {
		t.Error("two seeds drew the same traces")
	}
}

// TestGenerateShape checks every promise Generate's doc makes about the
// traces it draws.
func TestGenerateShape(t *testing.T) {
	const count = 40
	all := Generate(9, count)
	between := 0 // takes of an idle resource at a moment no evict swept
	for _, family := range Families {
		traces := all[family]
		if len(traces) != count {
			t.Fatalf("%s: %d traces, want %d", family, len(traces), count)
		}
		ceiling := strings.HasPrefix(family, "ceiling")
		idleFamily := family == "idle"
		gapsFamily := family == "gaps" || family == "ceiling-gaps"
		for i, tr := range traces {
			seats := 1 + i%4
			if ceiling {
				seats = 2 + i%3
			}
			if tr.Policy.Size != seats {
				t.Errorf("%s: size %d, want %d", tr.Name, tr.Policy.Size, seats)
			}
			if ceiling != (tr.Policy.Idle > 0) || tr.Policy.Idle >= seats {
				t.Errorf("%s: idle ceiling %d with %d seats", tr.Name, tr.Policy.Idle, seats)
			}
			moves, asks, drops, evicts := 0, 0, 0, 0
			held := map[int]bool{}
			full := false
			var last int64
			sweptAt := int64(0)
			for _, s := range tr.Steps {
				if s.At < last {
					t.Errorf("%s: time goes back at %v", tr.Name, s)
				}
				last = s.At
				switch s.Verb {
				case Take:
					if s.Seat == seats+1 {
						asks++
						if len(held) != seats {
							t.Errorf("%s: the extra ask comes with %d of %d seats held", tr.Name, len(held), seats)
						}
						continue
					}
					moves++
					if held[s.Seat] || s.Seat > seats {
						t.Errorf("%s: %v: not a legal take", tr.Name, s)
					}
					held[s.Seat] = true
					full = full || len(held) == seats
					if idleFamily && s.At > 0 && sweptAt != s.At {
						t.Errorf("%s: %v: no evict at this moment before it", tr.Name, s)
					}
				case Give, Drop:
					moves++
					if !held[s.Seat] {
						t.Errorf("%s: %v: the seat holds nothing", tr.Name, s)
					}
					delete(held, s.Seat)
					if s.Verb == Drop {
						drops++
					}
				case Evict:
					evicts++
					sweptAt = s.At
				}
			}
			if moves != Moves || asks != 1 || !full {
				t.Errorf("%s: %d moves, %d extra asks, full %v; want %d, 1, true", tr.Name, moves, asks, full, Moves)
			}
			if strings.HasSuffix(family, "drops") != (drops > 0) {
				t.Errorf("%s: %d drops", tr.Name, drops)
			}
			if idleFamily && evicts == 0 || !idleFamily && !gapsFamily && evicts > 0 {
				t.Errorf("%s: %d evicts", tr.Name, evicts)
			}
			timed := family == "life" || idleFamily || gapsFamily
			if timed != (last > 0) {
				t.Errorf("%s: clock ends at %d", tr.Name, last)
			}
			wantAge := map[string]Age{"life": LifeAge, "idle": IdleAge, "gaps": IdleAge, "ceiling-gaps": IdleAge}[family]
			if tr.Policy.Age != wantAge {
				t.Errorf("%s: age %v, want %v", tr.Name, tr.Policy.Age, wantAge)
			}
			for _, ref := range tr.Compare {
				if why := cannot(ref, tr); why != "" {
					t.Errorf("%s: compared with %s, which %s", tr.Name, ref, why)
				}
			}
			// Every generated trace is legal for the pool, and its one extra
			// ask is refused.
			rec, err := Replay(tr)
			if err != nil {
				t.Fatal(err)
			}
			if _, refused := rec.Handouts(); refused != 1 {
				t.Errorf("%s: %d refusals, want 1", tr.Name, refused)
			}
			// A give closes its resource exactly where the policy's rule
			// (OverCeiling) says, in a ceiling family at least once.
			closing := 0
			for _, e := range rec.Entries {
				if e.Step.Verb == Give && len(e.Closed) > 0 {
					closing++
				}
			}
			if over := OverCeiling(tr); closing != over || ceiling != (over > 0) {
				t.Errorf("%s: %d gives closed by the pool, %d over the ceiling by the rule", tr.Name, closing, over)
			}
			if gapsFamily {
				// No take meets a resource past its age on top (the
				// pools differ there on purpose), and some take lends
				// one between evicts.
				swept := int64(-1)
				idle := 0
				for _, e := range rec.Entries {
					switch {
					case e.Step.Verb == Evict:
						swept = e.Step.At
					case e.Step.Verb == Take && len(e.Closed) > 0:
						t.Errorf("%s: %v closed %v at a take", tr.Name, e.Step, e.Closed)
					case e.Step.Verb == Take && idle > 0 && swept != e.Step.At:
						between++
					}
					idle = e.Idle
				}
			}
		}
	}
	if between == 0 {
		t.Error("no gaps trace takes an idle resource between evicts")
	}
}
