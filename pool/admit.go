package pool

import "time"

// This file is deadline-aware admission: whether a caller that would wait
// can be served before its deadline, predicted from the pool's own
// measure of how long loans are held.

// holdsMin is how many loans the pool must have seen come back before it
// predicts a wait; holdsMax caps the count (the mean moves on regardless).
const (
	holdsMin = 8
	holdsMax = 1 << 20
)

// measure takes one loan's hold, d, into the moving mean of holds.
func (p *Pool[T]) measure(d int64) {
	d = max(d, 0)
	if p.holds == 0 {
		p.held = d
	} else {
		p.held += (d - p.held) / 16
	}
	p.holds = min(p.holds+1, holdsMax)
}

// Admit answers whether a caller that waits (Take answered Wait, or others
// wait already), with ahead callers queued before it and within to wait
// (the earlier of its context's deadline and the runtime's acquire
// timeout, from now), can be served in time. It predicts the wait from
// the holds the pool has measured: every busy resource (lent, or being
// made for a caller who will hold it) comes back after about the mean
// hold, so one comes back about every mean/busy, and the caller's turn
// comes with the (ahead+1)-th. It answers the prediction,
// and false when it is longer than within: the caller is better told at
// once than left to wait its whole deadline and fail, and the callers
// behind it are served sooner. A refusal is counted in Books.Shed.
//
// It admits (true) whenever it cannot predict: fewer than 8 loans measured
// yet, nothing busy, no deadline (within zero or less than zero means
// none is known: pass the deadline's distance, or 0 for none), or a closed
// pool. The prediction is a mean, not a bound: a caller refused would have
// been served in time now and then, when returns bunch up, and one admitted
// may still time out.
func (p *Pool[T]) Admit(now time.Time, ahead int, within time.Duration) (time.Duration, bool) {
	p.clock(now)
	busy := p.busy() // lent, and being made: each comes back about a hold from now
	if p.closed || within <= 0 || p.holds < holdsMin || busy == 0 {
		return 0, true
	}
	ahead = min(max(ahead, 0), 1<<20)
	wait := time.Duration(p.held / int64(busy) * int64(ahead+1))
	if wait <= within {
		return wait, true
	}
	p.books.Shed++
	return wait, false
}
