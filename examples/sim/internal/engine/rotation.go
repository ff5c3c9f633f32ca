package engine

import (
	"slices"
	"time"
)

// RotationSum is what a scenario's rotation did (Scenario.RotateAt): the
// figures a planner compares between the at-once form (RotateOver zero)
// and the rolling one. They are read over the rotation's stretch: from
// RotateAt to RotateOver and RotationTail after it (or Options.RotationRead
// after it), cut at the run's end.
type RotationSum struct {
	// From and To are the stretch, since the run's start.
	From, To time.Duration
	// Retired counts the resources the Reset handed back at once, idle
	// ones of the old generation (the rest go by Evict or on return).
	Retired int
	// Dials counts the dials begun in the stretch, and DialsPeak the most
	// begun in any one second of it (counted from RotateAt).
	Dials, DialsPeak int
	// Waited counts the callers served in the stretch who had to wait,
	// TimedOut those who gave up in it.
	Waited, TimedOut int
	// P99 is the 99th percentile (nearest rank) of the acquire waits that
	// ended in the stretch, Max the longest.
	P99, Max time.Duration
}

// RotationTail is how long after a rotation's window its figures are
// still read: long enough for the dials an at-once Reset sets off, and
// the waits behind them, to have ended.
const RotationTail = 2 * time.Second

// rotateStart sets up the rotation's figures and schedules the rotation.
func (r *run) rotateStart() {
	at := int64(r.s.RotateAt)
	if at <= 0 || at >= r.end {
		return
	}
	read := r.s.RotateOver + RotationTail
	if r.opt.RotationRead > 0 {
		read = r.opt.RotationRead
	}
	to := min(r.s.RotateAt+read, time.Duration(r.end))
	r.res.Sum.Rotation = RotationSum{From: r.s.RotateAt, To: to}
	r.rotDials = make([]int, (to-r.s.RotateAt+time.Second-1)/time.Second)
	r.schedule(at, evRotate, nil, 0)
}

// rotate resets the pool at t over the scenario's window, closing what it
// hands back; the eviction timer (armed after this event) retires the
// rest of the idle ones at the pace the pool names.
func (r *run) rotate(t int64) {
	out := r.p.Reset(r.now(t), r.s.RotateOver)
	r.res.Sum.Rotation.Retired += len(out)
	r.cur.Retired += len(out)
	r.goneAll(out)
}

// inRotation reports whether t falls in the rotation's stretch.
func (r *run) inRotation(t int64) bool {
	rs := &r.res.Sum.Rotation
	return rs.To > 0 && t >= int64(rs.From) && t < int64(rs.To)
}

// rotDial notes a dial begun at t.
func (r *run) rotDial(t int64) {
	if r.inRotation(t) {
		r.rotDials[(t-int64(r.s.RotateAt))/int64(time.Second)]++
	}
}

// rotWait notes an acquire wait w that ended at t.
func (r *run) rotWait(t int64, w time.Duration) {
	if !r.inRotation(t) {
		return
	}
	if w == 0 {
		r.rotZeros++
	} else {
		r.rotWaits = append(r.rotWaits, w)
	}
}

// rotateFinish reads the rotation's figures at the end of the run.
func (r *run) rotateFinish() {
	rs := &r.res.Sum.Rotation
	for _, n := range r.rotDials {
		rs.Dials += n
		rs.DialsPeak = max(rs.DialsPeak, n)
	}
	slices.Sort(r.rotWaits)
	rs.P99 = rank(r.rotWaits, r.rotZeros, 99)
	if n := len(r.rotWaits); n > 0 {
		rs.Max = r.rotWaits[n-1]
	}
}
