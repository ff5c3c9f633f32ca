package engine

import (
	"time"

	"github.com/wardpool/wardpool/pool"
)

// FailoverSum is what a scenario's failover did (Scenario.Failover): the
// figures a planner compares between classifiers.
type FailoverSum struct {
	// Failed counts writes that failed read-only: loans of a resource on
	// the old node that ended at or after the failover. FailedLate counts
	// those of them that ended a second or more after it.
	Failed, FailedLate int
	// FirstWrite is how long after the failover the first write
	// succeeded (a loan of a resource on the new node ended); -1 when none
	// did before the run ended.
	FirstWrite time.Duration
	// OldOpen is how many resources on the old node were still live a
	// second after the failover; -1 when the run ended before.
	OldOpen int
	// Resets counts the resets the failing loans made (Pool.ResetFor
	// answering true): with ClassifyReset, one per generation that met
	// the old node.
	Resets int
}

// failoverStart sets up the failover's figures and schedules its
// one-second mark.
func (r *run) failoverStart() {
	f := int64(r.s.Failover)
	if f <= 0 {
		return
	}
	r.res.Sum.Failover = FailoverSum{FirstWrite: -1, OldOpen: -1}
	if mark := f + int64(time.Second); mark <= r.end {
		r.schedule(mark, evMark, nil, 0)
	}
}

// oldDial reports whether a dial begun at t reaches the old node.
func (r *run) oldDial(t int64) bool { return t < int64(r.s.Failover) }

// made notes resource id, made by a dial to the old node when old.
func (r *run) made(id int32, old bool) {
	if !old {
		return
	}
	for int(id) >= len(r.old) {
		r.old = append(r.old, false)
	}
	r.old[id] = true
	r.oldLive++
}

// isOld reports whether resource id is live and on the old node.
func (r *run) isOld(id int32) bool { return int(id) < len(r.old) && r.old[id] }

// gone notes that resource id left the pool (closed or dropped).
func (r *run) gone(id int32) {
	if r.isOld(id) {
		r.old[id] = false
		r.oldLive--
	}
}

// goneAll notes that every resource of ids left the pool.
func (r *run) goneAll(ids []int32) {
	for _, id := range ids {
		r.gone(id)
	}
}

// release is the end of the loan of res at t, after the failover: a loan
// of a resource on the old node failed, and the caller's driver does with
// it what the scenario's Classify says; any other loan is a write that
// succeeded. It reports whether it handled the release (false: the usual
// rules apply).
func (r *run) releaseFailover(res int32, t int64) bool {
	f := int64(r.s.Failover)
	if f <= 0 || t < f {
		return false
	}
	fo := &r.res.Sum.Failover
	if !r.isOld(res) {
		if fo.FirstWrite < 0 {
			fo.FirstWrite = time.Duration(t - f)
		}
		return false
	}
	fo.Failed++
	if t >= f+int64(time.Second) {
		fo.FailedLate++
	}
	now := r.now(t)
	switch r.s.classify() {
	case ClassifyReset:
		if retired, ok := r.p.ResetFor(res, now, pool.Hold{}); ok {
			fo.Resets++
			r.cur.Retired += len(retired)
			r.goneAll(retired)
		}
		if !r.p.Give(res, now) { // of a retired generation now
			r.cur.Retired++
			r.gone(res)
		}
	case ClassifyDestroy:
		r.p.Drop(res, now)
		r.cur.Dropped++
		r.gone(res)
	default: // ClassifyNone: the error is the caller's; the resource is kept
		if !r.p.Give(res, now) {
			r.cur.Retired++
			r.gone(res)
		}
	}
	return true
}
