package pool

import (
	"math"
	"time"
)

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

// admitOdds is the least chance of being served in time that Admit
// admits: a caller refused was more likely to miss its deadline than to
// make it. Admitting it costs more than refusing it: it fails late where
// it could have been told at once, and when it is served late, the loan
// it takes is likely to run out of its deadline too. A lower threshold
// refuses fewer callers under a light load and lets more of them time out
// in the queue under an overload (see DESIGN.md). Above 1/2 it would
// refuse callers whose mean wait is within their deadline.
const admitOdds = 0.5

// Admit answers whether a caller that waits (Take answered Wait, or others
// wait already), with ahead callers queued before it and within to wait
// (the earlier of its context's deadline and the runtime's acquire
// timeout, from now), can be served in time. It predicts the wait from
// the holds the pool has measured: every busy resource (lent, or being
// made for a caller who will hold it) comes back after about the mean
// hold, so one comes back about every mean/busy, and the caller's turn
// comes with the (ahead+1)-th. It answers that mean wait, (ahead+1) ×
// mean / busy, and whether the caller's chance of being served within it
// is at least admitOdds (1/2), taking the holds as exponential: returns
// then come as a Poisson process of rate busy/mean, and the caller is
// served in time when at least ahead+1 come within, which has the chance
// P(Gamma(ahead+1, 1) ≤ within × busy / mean). A caller refused (false)
// is better told at once than left to wait its whole deadline and fail,
// and the callers behind it are served sooner. The mean alone refuses
// callers with a better than even chance: the median of the wait is
// shorter than its mean, by a third of a hold's share (mean/busy) for a
// long queue and by nearly a third of the whole for a short one (ln 2 ×
// mean/busy against mean/busy). A refusal is counted in Books.Shed.
//
// It admits (true) whenever it cannot predict: fewer than 8 loans measured
// yet, nothing busy, no deadline (within zero or less than zero means
// none is known: pass the deadline's distance, or 0 for none), or a closed
// pool. The prediction is a chance, not a bound: a caller refused would
// have been served in time now and then, and one admitted may still time
// out, more often when holds vary less than exponential ones (the same
// mean, fewer short holds).
func (p *Pool[T]) Admit(now time.Time, ahead int, within time.Duration) (time.Duration, bool) {
	p.clock(now)
	busy := p.busy() // lent, and being made: each comes back about a hold from now
	if p.closed || within <= 0 || p.holds < holdsMin || busy == 0 {
		return 0, true
	}
	ahead = min(max(ahead, 0), 1<<20)
	wait := time.Duration(p.held / int64(busy) * int64(ahead+1))
	if p.held == 0 || served(ahead+1, float64(within)*float64(busy)/float64(p.held)) >= admitOdds {
		return wait, true
	}
	p.books.Shed++
	return wait, false
}

// served is the chance that k returns of a Poisson process of rate 1 come
// within x: P(Gamma(k, 1) ≤ x), 1 − Σ_{i<k} e^−x x^i / i!. It sums the
// terms for k up to 64 and takes Wilson and Hilferty's normal
// approximation of the cube root beyond, within a few thousandths there.
func served(k int, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case k <= 64:
		t := math.Exp(-x) // 0 past x ≈ 745: the sum is then 0 too, and the chance 1
		sum := t
		for i := 1; i < k; i++ {
			t *= x / float64(i)
			sum += t
		}
		return max(0, 1-sum)
	}
	n := float64(k)
	z := (math.Cbrt(x/n) - (1 - 1/(9*n))) * 3 * math.Sqrt(n)
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}
