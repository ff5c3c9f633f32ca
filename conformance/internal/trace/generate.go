package trace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Families lists the kinds of trace Generate draws, in the order it returns
// them. The first five hold no idle ceiling; the last three pin it, and only
// Commons Pool 2 (of the references) has one.
var Families = []string{"seats", "drops", "life", "idle", "gaps", "ceiling", "ceiling-drops", "ceiling-gaps"}

// Moves is the number of takes and gives in a generated trace, not counting
// the one ask past the ceiling (nor, in idle traces, the evicts).
const Moves = 12

// GenAgeMS is the age limit of generated timed traces, in milliseconds.
// Their clock moves in whole seconds from 0 to 5, so ages often land exactly
// on the limit, where a resource is not yet past it.
const GenAgeMS = 10_000

// Generate draws count traces of each family from seed. The same seed and
// count give the same traces on every machine and every Go release
// (math/rand/v2's PCG is a fixed algorithm). Each family draws from a
// stream of its own, so a family added later changes none drawn before.
//
// Every trace is a legal ordering of Moves takes and gives over one to four
// seats (trace i has 1 + i%4 seats and a ceiling of as many), reaching the
// ceiling at least once, with one ask by one more seat at a moment when all
// seats hold a resource, so that a refusal is recorded. The families:
//
//   - seats: no clock, no age; compared with all three references.
//   - drops: as seats, with some gives (at least one) made drops; compared
//     with generic-pool and Commons Pool, because SQLAlchemy puts an empty
//     record back on its queue for a broken connection (README.md).
//   - life: a clock moving 0-5 s per move and a lifetime of GenAgeMS;
//     compared with SQLAlchemy's pool_recycle, and generic-pool's
//     testOnBorrow with a validate that fails a resource past its life.
//     Those in which SQLAlchemy recycles in place over other idle records
//     are compared up to that step (NotCompared; README.md, difference 3).
//     Commons Pool has no lifetime.
//   - idle: the same clock and an idle age of GenAgeMS, with an evict at
//     every moment the clock has moved before a take; compared with
//     generic-pool and Commons Pool, the two that retire by idle time, and
//     only through their evictors.
//   - gaps: as idle, but with evicts only now and then (before about a
//     quarter of the steps) and wherever a take would otherwise meet an idle
//     resource past its age on top (where the pools differ on purpose:
//     README.md, difference 4). So takes lend resources at every idle age
//     up to the limit, exactly on it too, with stale ones sitting idle below
//     until an evict sweeps them; compared with generic-pool and Commons
//     Pool.
//
// The ceiling families have two to four seats (trace i has 2 + i%3) and an
// idle ceiling drawn below the size, and at least one give finds the
// ceiling reached, so the resource given back is closed. Compared with
// Commons Pool (maxIdle), the one reference with an idle ceiling:
//
//   - ceiling: no clock, no age.
//   - ceiling-drops: as ceiling, with some gives (at least one) made drops.
//   - ceiling-gaps: as gaps, with the idle ceiling; evicts and closing gives
//     both thin the idle stack.
func Generate(seed uint64, count int) map[string][]Trace {
	out := make(map[string][]Trace, len(Families))
	for f, family := range Families {
		r := rand.New(rand.NewPCG(seed, uint64(f)+1))
		for i := range count {
			name := fmt.Sprintf("%s-%d-%03d", family, seed, i+1)
			var t Trace
			switch family {
			case "ceiling", "ceiling-drops", "ceiling-gaps":
				t = ceilingTrace(r, name, family, 2+i%3)
			default:
				seats := 1 + i%4
				t = Trace{Name: name, Policy: Policy{Size: seats}, Steps: walk(r, seats)}
			}
			switch family {
			case "seats":
				t.Compare = []string{SQLAlchemy, GenericPool, CommonsPool}
			case "drops":
				t.Compare = []string{GenericPool, CommonsPool}
				dropSome(r, t.Steps)
			case "life":
				t.Compare = []string{SQLAlchemy, GenericPool}
				t.Policy.Age, t.Policy.AgeMS = LifeAge, GenAgeMS
				clock(r, t.Steps)
			case "idle":
				t.Compare = []string{GenericPool, CommonsPool}
				t.Policy.Age, t.Policy.AgeMS = IdleAge, GenAgeMS
				clock(r, t.Steps)
				t.Steps = evictBeforeTakes(t.Steps)
			case "gaps":
				t.Compare = []string{GenericPool, CommonsPool}
				t.Policy.Age, t.Policy.AgeMS = IdleAge, GenAgeMS
				clock(r, t.Steps)
				t.Steps = evictSometimes(r, t.Steps, GenAgeMS, 0)
			}
			out[family] = append(out[family], t)
		}
	}
	return out
}

// ceilingTrace draws a trace of a ceiling family over n seats (size n): an
// idle ceiling from 1 to n-1 and the steps of the family, drawn again until
// at least one give finds the ceiling reached.
func ceilingTrace(r *rand.Rand, name, family string, n int) Trace {
	for {
		t := Trace{
			Name:    name,
			Policy:  Policy{Size: n, Idle: 1 + r.IntN(n-1)},
			Compare: []string{CommonsPool},
			Steps:   walk(r, n),
		}
		switch family {
		case "ceiling-drops":
			dropSome(r, t.Steps)
		case "ceiling-gaps":
			t.Policy.Age, t.Policy.AgeMS = IdleAge, GenAgeMS
			clock(r, t.Steps)
			t.Steps = evictSometimes(r, t.Steps, GenAgeMS, t.Policy.Idle)
		}
		if OverCeiling(t) > 0 {
			return t
		}
	}
}

// idleStack follows the idle resources of a trace as any pool of this
// policy keeps them, by the moment each was given back, top last: a give
// puts its resource on top unless ceiling (when not 0) are idle already, a
// take lends the top one, an evict removes every one idle longer than age
// (strictly). It knows nothing of a take that meets a resource past its
// age: the traces it follows never have one.
type idleStack struct {
	since   []int64
	ceiling int
	age     int64
}

func (s *idleStack) take() {
	if n := len(s.since); n > 0 {
		s.since = s.since[:n-1]
	}
}

// give reports whether the resource given back at is kept.
func (s *idleStack) give(at int64) bool {
	if s.ceiling > 0 && len(s.since) >= s.ceiling {
		return false
	}
	s.since = append(s.since, at)
	return true
}

func (s *idleStack) evict(at int64) {
	if s.age == 0 {
		return
	}
	kept := s.since[:0]
	for _, since := range s.since {
		if at-since <= s.age {
			kept = append(kept, since)
		}
	}
	s.since = kept
}

// staleOnTop reports whether a take at would meet a resource past its age.
func (s *idleStack) staleOnTop(at int64) bool {
	n := len(s.since)
	return s.age > 0 && n > 0 && at-s.since[n-1] > s.age
}

// OverCeiling counts the gives of t that find its idle ceiling reached, so
// that the resource given back is closed, as the policy's rule says (not as
// any pool answered).
func OverCeiling(t Trace) int {
	st := idleStack{ceiling: t.Policy.Idle}
	if t.Policy.Age == IdleAge {
		st.age = t.Policy.AgeMS
	}
	n := 0
	for _, s := range t.Steps {
		switch s.Verb {
		case Take:
			st.take()
		case Give:
			if !st.give(s.At) {
				n++
			}
		case Evict:
			st.evict(s.At)
		}
	}
	return n
}

// walk draws a legal ordering of Moves takes and gives over n seats that
// fills every seat at least once, and adds one take by seat n+1 at a moment
// when all n are held.
func walk(r *rand.Rand, n int) []Step {
	for {
		var steps []Step
		held := make([]bool, n+1) // held[s] for seat s in 1..n
		count := 0
		var full []int // indices after which every seat is held
		for range Moves {
			take := count == 0 || (count < n && r.IntN(2) == 0)
			if take {
				s := 1
				for held[s] {
					s++
				}
				held[s] = true
				count++
				steps = append(steps, Step{Verb: Take, Seat: s})
			} else {
				k := r.IntN(count)
				s := 1
				for ; ; s++ {
					if held[s] {
						if k == 0 {
							break
						}
						k--
					}
				}
				held[s] = false
				count--
				steps = append(steps, Step{Verb: Give, Seat: s})
			}
			if count == n {
				full = append(full, len(steps))
			}
		}
		if len(full) == 0 {
			continue
		}
		at := full[r.IntN(len(full))]
		return append(steps[:at], append([]Step{{Verb: Take, Seat: n + 1}}, steps[at:]...)...)
	}
}

// dropSome turns about a third of the gives into drops, and at least one.
func dropSome(r *rand.Rand, steps []Step) {
	var gives []int
	for i, s := range steps {
		if s.Verb == Give {
			gives = append(gives, i)
			if r.IntN(3) == 0 {
				steps[i].Verb = Drop
			}
		}
	}
	for _, i := range gives {
		if steps[i].Verb == Drop {
			return
		}
	}
	steps[gives[r.IntN(len(gives))]].Verb = Drop
}

// clock moves the time forward by 0 to 5 whole seconds before each step
// after the first.
func clock(r *rand.Rand, steps []Step) {
	var now int64
	for i := range steps {
		if i > 0 {
			now += int64(r.IntN(6)) * 1000
		}
		steps[i].At = now
	}
}

// evictBeforeTakes puts an evict before every take whose moment no evict has
// yet swept, so that no take ever meets an idle resource past its idle age
// (generic-pool looks at age only in its evictor).
func evictBeforeTakes(steps []Step) []Step {
	out := make([]Step, 0, 2*len(steps))
	var swept int64 // at 0 nothing has sat idle yet
	for _, s := range steps {
		if s.Verb == Take && s.At > swept {
			out = append(out, Step{Verb: Evict, At: s.At})
			swept = s.At
		}
		out = append(out, s)
	}
	return out
}

// evictSometimes puts an evict before about a quarter of the steps, and
// before every take that would otherwise find an idle resource past age on
// top of the idle stack, which it follows as idleStack does (with the idle
// ceiling, 0 for none).
func evictSometimes(r *rand.Rand, steps []Step, age int64, ceiling int) []Step {
	out := make([]Step, 0, 2*len(steps))
	st := idleStack{ceiling: ceiling, age: age}
	evict := func(at int64) {
		out = append(out, Step{Verb: Evict, At: at})
		st.evict(at)
	}
	for _, s := range steps {
		switch {
		case r.IntN(4) == 0:
			evict(s.At)
		case s.Verb == Take && st.staleOnTop(s.At):
			evict(s.At)
		}
		out = append(out, s)
		switch s.Verb {
		case Take:
			st.take()
		case Give:
			st.give(s.At)
		}
	}
	return out
}

// WriteGenerated writes Generate(seed, count) into dir, one step file per
// family (FAMILY.steps), each opening with a comment that says how to make
// it again.
func WriteGenerated(dir string, seed uint64, count int) error {
	traces := Generate(seed, count)
	for _, family := range Families {
		var b bytes.Buffer
		fmt.Fprintf(&b, "# %s traces drawn by: go run ./conformance/internal/cmd/gen -seed %d -count %d\n", family, seed, count)
		if err := WriteSteps(&b, traces[family]); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, family+".steps"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
