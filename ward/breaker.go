package ward

import (
	"math"
	"time"
)

// Sre holds the constants of probability-based client-side throttling, the
// scheme of the Google SRE book's "Handling Overload" chapter with a decay of
// k over an outage and a recovery scaling added. Copy [DefaultSre] and change
// a field to build another: s := ward.DefaultSre; s.K = 2.
type Sre struct {
	// K is how many calls each success pays for. At 1.5 a backend is left
	// alone until more than a third of its calls fail. Values under 1, NaN
	// and infinities become 1.5.
	K float64
	// Floor is what K decays to over a run of failing buckets. NaN, values
	// under 1 and values over K become K.
	Floor float64
	// Protection is how many calls in the window a backend gets regardless.
	// NaN and negatives become 0.
	Protection float64
	// Probe is how long the breaker may go letting nothing through before it
	// lets one call through anyway. Zero or less means never.
	Probe time.Duration
	// Size is the number of buckets in the window, at least 1.
	Size int
	// Window is how far back the window reaches; see [NewWindow] for the
	// clamping of small spans.
	Window time.Duration
}

// DefaultSre is the preset: k 1.5 decaying to 1.1, five calls of protection, a
// probe after one second with nothing let through, and ten seconds of history
// in forty buckets.
var DefaultSre = Sre{
	K:          1.5,
	Floor:      1.1,
	Protection: 5,
	Probe:      time.Second,
	Size:       40,
	Window:     10 * time.Second,
}

// clean returns s with every field held to its documented range.
func (s Sre) clean() Sre {
	if !finite(s.K) || s.K < 1 {
		s.K = DefaultSre.K
	}
	if !(s.Floor >= 1 && s.Floor <= s.K) {
		s.Floor = s.K
	}
	if !(s.Protection >= 0) {
		s.Protection = 0
	}
	if s.Protection > math.MaxInt32 {
		s.Protection = math.MaxInt32
	}
	s.Size = max(s.Size, 1)
	return s
}

// Outcome is how one call ended, as a breaker records it.
type Outcome uint8

const (
	Success Outcome = iota // the backend answered
	Failure                // the backend failed the call
	Drop                   // the breaker refused the call before it ran
)

// Tally counts the outcomes of one bucket. Total counts every call, dropped
// ones included, so a bucket that is being throttled still reads as busy.
type Tally struct {
	Total, Success, Failure, Drop int64
}

// Add counts one call ending as o.
func (t *Tally) Add(o Outcome) {
	t.Total++
	switch o {
	case Success:
		t.Success++
	case Failure:
		t.Failure++
	default:
		t.Drop++
	}
}

// failing reports whether the bucket saw failures and no success; working,
// successes and no failure. A bucket that is neither by having no settled
// call (empty, or drops only) is neutral: it neither extends a run nor ends
// one, because drops are the breaker's own doing, not news of the backend.
func (t *Tally) failing() bool { return t.Failure > 0 && t.Success == 0 }
func (t *Tally) working() bool { return t.Success > 0 && t.Failure == 0 }
func (t *Tally) neutral() bool { return t.Success == 0 && t.Failure == 0 }

// runs folds one more bucket, newer than all those folded before, into the
// failing and working runs that end at the newest bucket.
func (t *Tally) runs(failing, working int) (int, int) {
	switch {
	case t.neutral():
		return failing, working
	case t.failing():
		return failing + 1, 0
	case t.working():
		return 0, working + 1
	}
	return 0, 0
}

// Breaker is a circuit breaker that refuses a fraction of calls rather than
// all of them. It has no open, half-open and closed: it keeps a rolling
// window of outcomes and refuses each call with a probability that grows with
// the failures in it, so a struggling backend keeps receiving what it can
// still serve instead of being cut off and flooded again on recovery.
//
// With accepts successes out of total calls in the window, failing the run of
// failing buckets at its head and working the run of working ones:
//
//	w    = max(K − (K − Floor) × failing / Size, Floor)
//	drop = (total − Protection − w × accepts) / (total + 1)
//	drop = drop × (Size − working) / Size
//
// A drop at or below zero lets everything through: the healthy case. The sums
// cover every bucket in the window; the runs cover whole buckets only, so the
// bucket now falls in, which has seen only part of its time, neither starts
// nor ends a run (one failure in a fresh bucket is not yet an outage). A
// bucket is failing when it holds failures and no success, working when it
// holds successes and no failure; buckets with neither (empty, or refusals
// only) are passed over by both runs.
//
// The zero Breaker is not usable; build one with [NewBreaker]. A Breaker is
// not safe for concurrent use. Allow, Pass and Fail allocate nothing.
type Breaker struct {
	p    Sre
	win  *Window[Tally]
	last time.Time // when a call was last let through
	sent bool      // whether any call has been let through

	// The buckets older than the head only change when the window moves, so
	// their sums and runs are kept here and refreshed when win.gen changes.
	gen            uint64
	valid          bool
	older          Tally
	olderF, olderW int
}

// NewBreaker returns a breaker with policy p (clamped as [Sre] documents) and
// an empty window opening at now.
func NewBreaker(p Sre, now time.Time) *Breaker {
	p = p.clean()
	return &Breaker{p: p, win: NewWindow[Tally](p.Size, p.Window, now)}
}

// Policy returns the policy in force, after clamping.
func (b *Breaker) Policy() Sre { return b.p }

// Call is one call a [Breaker] let through. Settle it exactly once with Pass
// or Fail; until then the window holds no record of how it went. The zero
// Call settles nothing.
type Call struct{ b *Breaker }

// Pass records that the call succeeded at now.
func (c Call) Pass(now time.Time) {
	if c.b != nil {
		c.b.Pass(now)
	}
}

// Fail records that the call failed at now.
func (c Call) Fail(now time.Time) {
	if c.b != nil {
		c.b.Fail(now)
	}
}

// Allow asks to make one call at now. roll is the caller's draw in [0, 1)
// (see the package doc for out-of-range draws); the call is refused when it
// falls under the drop fraction. A refusal is recorded as a [Drop], so a
// breaker that is refusing never reads back as idle. When the breaker has let
// nothing through for the policy's Probe, the call goes ahead whatever the
// draw: that is the probe that notices a recovery.
//
// On true, settle the returned Call (or call Pass or Fail) when the call ends.
func (b *Breaker) Allow(now time.Time, roll float64) (Call, bool) {
	b.win.advance(now)
	if !b.valid || b.gen != b.win.gen {
		b.refresh()
	}
	head := &b.win.buckets[b.win.head]
	d := b.p.drop(b.older.Total+head.Total, b.older.Success+head.Success, b.olderF, b.olderW)
	if d > 0 && draw(roll) < d && !b.probeDue(now) {
		head.Add(Drop)
		return Call{}, false
	}
	b.last, b.sent = now, true
	return Call{b: b}, true
}

// probeDue reports whether nothing has been let through for a whole Probe.
func (b *Breaker) probeDue(now time.Time) bool {
	if b.p.Probe <= 0 {
		return false
	}
	return !b.sent || now.Sub(b.last) >= b.p.Probe
}

// refresh recomputes the sums and runs of the buckets older than the head.
func (b *Breaker) refresh() {
	b.older, b.olderF, b.olderW = Tally{}, 0, 0
	w := b.win
	size := len(w.buckets)
	for age := size - 1; age >= 1; age-- {
		t := &w.buckets[(w.head-age+size)%size]
		b.older.Total += t.Total
		b.older.Success += t.Success
		b.older.Failure += t.Failure
		b.older.Drop += t.Drop
		b.olderF, b.olderW = t.runs(b.olderF, b.olderW)
	}
	b.gen, b.valid = w.gen, true
}

// Pass settles one call that was let through as a success at now, for a
// caller that did not keep the [Call].
func (b *Breaker) Pass(now time.Time) { b.win.Slot(now).Add(Success) }

// Fail settles one call that was let through as a failure at now.
func (b *Breaker) Fail(now time.Time) { b.win.Slot(now).Add(Failure) }

// Ratio returns the fraction of calls the breaker would refuse at now, in
// [0, 1), zero while the window is healthy. The probe is left out: this is
// the standing throttle a dashboard or an alert wants. Ratio changes nothing.
func (b *Breaker) Ratio(now time.Time) float64 {
	var sum Tally
	var f, w int
	b.win.Each(now, false, func(t *Tally) {
		sum.Total += t.Total
		sum.Success += t.Success
		f, w = t.runs(f, w)
	})
	if head := b.win.current(now); head != nil {
		sum.Total += head.Total
		sum.Success += head.Success
	}
	return max(b.p.drop(sum.Total, sum.Success, f, w), 0)
}

// drop is the seed's three formulas: the share of calls to refuse.
func (s *Sre) drop(total, accepts int64, failing, working int) float64 {
	size := float64(s.Size)
	w := max(s.K-(s.K-s.Floor)*float64(failing)/size, s.Floor)
	d := (float64(total) - s.Protection - w*float64(accepts)) / (float64(total) + 1)
	return d * (size - float64(working)) / size
}
