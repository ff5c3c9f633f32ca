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

	// The switchover: from the failover to the first resource made after
	// it (on the new node). FirstMade is how long that took; -1 when no
	// dial begun after the failover succeeded before the run ended.
	// DownDials counts the dials begun in it that failed (to a node down,
	// or not yet promoted), DownPeak the most of them begun in any one
	// second counted from the failover.
	FirstMade           time.Duration
	DownDials, DownPeak int
	// The hold (Scenario.HoldFor). ResetAt is how long after the failover
	// the first reset came, HoldLast how long after it the pool last
	// answered a caller Wait for the hold (ward.GuardHold); -1 for what
	// did not happen. HoldWaits counts those answers, PutBack the callers
	// whose dial failed while the pool held and who went back to the
	// front of the queue (Pool.Unmade answering true). HoldDials counts
	// the dials begun while the pool held, HoldGap the least time between
	// two of them (zero with fewer than two).
	ResetAt, HoldLast  time.Duration
	HoldWaits, PutBack int
	HoldDials          int
	HoldGap            time.Duration
}

// failoverStart sets up the failover's figures and schedules its
// one-second mark.
func (r *run) failoverStart() {
	f := int64(r.s.Failover)
	if f <= 0 {
		return
	}
	r.res.Sum.Failover = FailoverSum{FirstWrite: -1, OldOpen: -1, FirstMade: -1, ResetAt: -1, HoldLast: -1}
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
	r.conns-- // closed: the backend has room for one more
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
		if retired, ok := r.p.ResetFor(res, now, pool.Hold{For: r.s.HoldFor, Every: r.s.HoldEvery}); ok {
			if fo.Resets == 0 {
				fo.ResetAt = time.Duration(t - f)
			}
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

// switching reports whether a dial begun at t is of the switchover: at or
// after the failover, before the first resource made after it.
func (r *run) switching(t int64) bool {
	f := int64(r.s.Failover)
	return f > 0 && t >= f && r.res.Sum.Failover.FirstMade < 0
}

// foDial notes a dial begun at t that will fail when !ok, and whether the
// pool holds its callers then.
func (r *run) foDial(t int64, ok bool) {
	fo := &r.res.Sum.Failover
	if !ok && r.switching(t) {
		fo.DownDials++
		sec := int((t - int64(r.s.Failover)) / int64(time.Second))
		for len(r.downDials) <= sec {
			r.downDials = append(r.downDials, 0)
		}
		r.downDials[sec]++
		fo.DownPeak = max(fo.DownPeak, r.downDials[sec])
	}
	if !r.p.Books().Holding {
		return
	}
	if fo.HoldDials > 0 {
		gap := time.Duration(t - r.holdDialAt)
		if fo.HoldDials == 1 || gap < fo.HoldGap {
			fo.HoldGap = gap
		}
	}
	fo.HoldDials++
	r.holdDialAt = t
}

// foMade notes a resource made at t by a dial to the old node when old.
func (r *run) foMade(old bool, t int64) {
	fo := &r.res.Sum.Failover
	if f := int64(r.s.Failover); f > 0 && !old && fo.FirstMade < 0 {
		fo.FirstMade = time.Duration(t - f)
	}
}

// foHoldWait notes a Wait answered at t for the pool's hold.
func (r *run) foHoldWait(t int64) {
	fo := &r.res.Sum.Failover
	fo.HoldWaits++
	if f := int64(r.s.Failover); f > 0 {
		fo.HoldLast = time.Duration(t - f)
	}
}
