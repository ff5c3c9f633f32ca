package engine

import (
	"fmt"

	"github.com/wardpool/wardpool/pool/record"
)

// Match is how far a run's Take answers agree with a recording's.
type Match struct {
	// Same is how many Takes, from the first, answered the same at the same
	// instant (since each one's first Take); Recorded and Replayed are how
	// many Takes each holds.
	Same, Recorded, Replayed int
	// Differs describes the first Take that differs (or the first one
	// missing from either side), empty when none does.
	Differs string
}

// Exact reports whether every Take answered as recorded.
func (m Match) Exact() bool { return m.Differs == "" }

// String says how many recorded Take answers the replay gave back.
func (m Match) String() string {
	if m.Exact() {
		return fmt.Sprintf("all %d recorded Take answers given back, in order, at their instants", m.Recorded)
	}
	return fmt.Sprintf("the first %d of %d recorded Take answers given back; then %s", m.Same, m.Recorded, m.Differs)
}

// Reproduced holds the Take steps of a run (recorded with Options.Recorder)
// against those of the recording its load came from: their answers (kind,
// seat, idle time, delay) and their instants, each counted from its side's
// first Take.
func Reproduced(recorded, replayed *record.Recording) Match {
	takes := func(steps []record.Step) []record.Step {
		var out []record.Step
		for _, s := range steps {
			if s.Op == "Take" {
				out = append(out, s)
			}
		}
		return out
	}
	a, b := takes(recorded.Steps), takes(replayed.Steps)
	m := Match{Recorded: len(a), Replayed: len(b)}
	for i := range min(len(a), len(b)) {
		ta, tb := a[i].At-a[0].At, b[i].At-b[0].At
		if ta != tb || a[i].Answer() != b[i].Answer() {
			m.Differs = fmt.Sprintf("recorded step %d at %v answered %s, the replay at %v %s", a[i].Index, ta, a[i].Answer(), tb, b[i].Answer())
			return m
		}
		m.Same++
	}
	switch {
	case len(a) > len(b):
		m.Differs = fmt.Sprintf("the replay asks no more after %d (recorded step %d: %s)", len(b), a[len(b)].Index, a[len(b)].Answer())
	case len(b) > len(a):
		m.Differs = fmt.Sprintf("the replay asks %d more times (first: %s)", len(b)-len(a), b[len(a)].Answer())
	}
	return m
}
