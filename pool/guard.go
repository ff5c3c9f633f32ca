package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file is where the pool consults its ward. Every guard is optional; a
// nil one is skipped, so the zero ward.Ward leaves every answer as it would
// be without one.
//
// The order of the questions, for a take that would lend an idle resource:
//
//	shedder (Shed while the host is hot and full) → limiter (Wait when no lease)
//
// and for a take that would reserve a Make, after the Size check:
//
//	backoff (Later) → breaker (Shed) → shedder (Shed) → limiter (Wait) → bucket (Later)
//
// Guards that hold something (the shedder's flight, the limiter's lease, the
// bucket's token) are asked last and given back when a later one refuses, so
// a refused take leaves nothing held. A lease and a flight taken by a take
// last for the loan: Give settles them with a sample, Drop as a failure,
// Unmade without a sample.

// admit asks the ward whether a take at t may lend (forMake false) or
// reserve a Make (forMake true). On refusal it returns the answer to give,
// not yet counted (see count).
func (p *Pool[T]) admit(t int64, roll float64, cpu int, forMake bool) (Taken[T], bool) {
	w := &p.ward
	if w.IsZero() {
		return Taken[T]{}, true
	}
	now := p.lastAt
	if forMake {
		if w.Backoff != nil && p.failures > 0 && t < p.holdUntil {
			return p.later(time.Duration(p.holdUntil-t), ward.GuardBackoff), false
		}
		if w.Breaker != nil {
			if _, ok := w.Breaker.Allow(now, roll); !ok {
				return p.shed(ward.GuardBreaker), false
			}
		}
	}
	if w.Shedder != nil {
		if _, ok := w.Shedder.Allow(now, cpu); !ok {
			return p.shed(ward.GuardShedder), false
		}
	}
	if w.Limiter != nil && !w.Limiter.Acquire(now) {
		if w.Shedder != nil {
			w.Shedder.Done(now, now, false)
		}
		return Taken[T]{Kind: Wait, Guard: ward.GuardLimiter}, false
	}
	if forMake && w.Bucket != nil && !w.Bucket.Take(now, 1) {
		d := w.Bucket.Next(now, 1)
		if w.Limiter != nil {
			w.Limiter.Abandon()
		}
		if w.Shedder != nil {
			w.Shedder.Done(now, now, false)
		}
		return p.later(d, ward.GuardBucket), false
	}
	return Taken[T]{}, true
}

func (p *Pool[T]) shed(g ward.Guard) Taken[T] { return Taken[T]{Kind: Shed, Guard: g} }

func (p *Pool[T]) later(d time.Duration, g ward.Guard) Taken[T] {
	return Taken[T]{Kind: Later, Delay: d, Guard: g}
}

// count counts a refusal under its own name and returns it.
func (p *Pool[T]) count(r Taken[T]) Taken[T] {
	switch r.Kind {
	case Wait:
		p.books.Waited++
	case Later:
		p.books.Deferred++
	case Shed:
		p.books.Shed++
	}
	return r
}

// onMade tells the ward a make succeeded at t.
func (p *Pool[T]) onMade(t int64) {
	p.failures, p.holdUntil, p.lastDelay = 0, 0, 0
	if p.ward.Breaker != nil {
		p.ward.Breaker.Pass(p.instant(t))
	}
}

// onUnmade tells the ward a make failed at t. The limiter's lease goes back
// without a sample: the breaker owns a backend that will not connect, and
// counting one failure in two places would shrink the pool twice for one
// cause.
func (p *Pool[T]) onUnmade(t int64, roll float64) {
	w := &p.ward
	if w.Breaker != nil {
		w.Breaker.Fail(p.instant(t))
	}
	if w.Backoff != nil {
		if p.failures < 1<<20 {
			p.failures++
		}
		d := w.Backoff.Delay(p.failures, roll, p.lastDelay)
		p.lastDelay = d
		p.holdUntil = t + int64(d)
	}
	p.unlease(t)
}

// unlease gives back the shedder's flight and the limiter's lease that a
// Make reservation took, with no sample: no loan came of it.
func (p *Pool[T]) unlease(t int64) {
	w := &p.ward
	if w.Limiter != nil {
		w.Limiter.Abandon()
	}
	if w.Shedder != nil {
		now := p.instant(t)
		w.Shedder.Done(now, now, false)
	}
}

// onLoanEnd settles the shedder's flight and the limiter's lease of a loan
// that began at start and ended at t; ok is false for a broken resource.
func (p *Pool[T]) onLoanEnd(start, t int64, ok bool) {
	w := &p.ward
	held := time.Duration(t - start)
	if w.Shedder != nil {
		w.Shedder.Settle(p.instant(t), held, ok)
	}
	if w.Limiter != nil {
		w.Limiter.Settle(held, ok)
	}
}

// Refusal is the share of new connections the ward's breaker refuses at
// now, in [0, 1]; zero without a breaker.
func (p *Pool[T]) Refusal(now time.Time) float64 {
	if p.ward.Breaker == nil {
		return 0
	}
	p.clock(now)
	return p.ward.Breaker.Ratio(p.lastAt)
}
