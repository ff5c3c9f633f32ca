package pool

import (
	"context"
	"fmt"
	"time"
)

// Loan is one lending of a resource by a Keeper. It is a small value:
// returning it by value is what lets Acquire allocate nothing. Copies of a
// loan are the same loan.
//
// A loan ends with the first Release, Destroy or Hijack called on it (or on
// any copy). Every later call is a no-op, counted in Stats.DoubleReleases:
// the loan knows which lending it was, so a late second Release cannot give
// back the resource while it is lent to someone else. Value keeps returning
// the resource after the loan ended; using it then is the caller's bug.
//
// The zero Loan is no loan: its methods do nothing and Valid reports false.
// A Loan is safe for concurrent use.
type Loan[T comparable] struct {
	e    *entry[T] // the seat's record, and through it the Keeper; nil: no loan
	item T
	gen  uint32
	at   int64 // when lent, ns since k.base
}

// Value returns the resource lent.
func (l Loan[T]) Value() T { return l.item }

// Held returns how long ago the loan began, on the Keeper's clock.
func (l Loan[T]) Held() time.Duration {
	if l.e == nil {
		return 0
	}
	k := l.e.k
	return k.clock.Now().Sub(k.base) - time.Duration(l.at)
}

// Valid reports whether the loan is still out: not yet released, destroyed
// or hijacked.
func (l Loan[T]) Valid() bool {
	if l.e == nil {
		return false
	}
	return l.e.gen.Load() == l.gen
}

// Release gives the resource back. The oldest caller waiting gets it at once
// (directly, so the releaser cannot take it back first); otherwise it goes
// idle, or is closed when the pool keeps enough idle already, when the
// Keeper was Reset since it was made, or when the Keeper is closed. With
// Config.Reset set, that runs first, outside the lock, and an error destroys
// the resource instead.
func (l Loan[T]) Release() {
	if l.e == nil {
		return
	}
	k := l.e.k
	if k.gate.Load() == 0 && k.releaseHot(l) {
		return
	}
	k.release(l)
}

// release is Release through the lock.
func (k *Keeper[T]) release(l Loan[T]) {
	var fx effects[T]
	now := k.now() // read before locking: the lock is held for less
	k.mu.Lock()
	if !k.endLocked(l, &fx) {
		k.mu.Unlock()
		return
	}
	if k.reset != nil {
		k.mu.Unlock()
		k.do(&fx)
		if err := k.safeReset(l.item); err != nil {
			k.destroyEnded(l.item)
			return
		}
		fx = effects[T]{}
		now = k.clock.Now()
		k.mu.Lock()
	}
	k.giveEndedLocked(l, now, &fx)
	k.mu.Unlock()
	if fx.pending() {
		k.do(&fx)
	}
}

// giveEnded gives back the resource of loan l, ended already.
func (k *Keeper[T]) giveEnded(l Loan[T]) {
	var fx effects[T]
	k.mu.Lock()
	k.giveEndedLocked(l, k.clock.Now(), &fx)
	k.mu.Unlock()
	if fx.pending() {
		k.do(&fx)
	}
}

// giveEndedLocked gives back the resource of loan l, ended already, at now:
// to the oldest waiter, to idle, or to be closed (made before a Reset, past
// the Idle ceiling, or the Keeper closed).
func (k *Keeper[T]) giveEndedLocked(l Loan[T], now time.Time, fx *effects[T]) {
	if l.e.epoch != k.epoch.Load() {
		k.p.retireLent(l.item, now)
		fx.close = append(fx.close, l.item)
	} else if !k.p.giveSeat(l.e.seat, l.item, now) {
		fx.close = append(fx.close, l.item)
	}
	k.armSweepLocked(now)
	k.settledLocked(now, fx)
}

// settledLocked follows a resource's coming back to the pool (or its room
// freed): waiters are served, the timer set for the next expiry, and a
// closed Keeper told when the last loan is home.
func (k *Keeper[T]) settledLocked(now time.Time, fx *effects[T]) {
	if k.q.live > 0 {
		k.serveLocked(now, fx)
	}
	if k.limits.Life > 0 || (!k.armed && k.limits.Keep > 0) {
		k.armIdleLocked(now)
	}
	if k.closed {
		k.drainedLocked()
	}
}

// destroyEnded drops and closes the resource of a loan ended already.
func (k *Keeper[T]) destroyEnded(item T) {
	var fx effects[T]
	k.mu.Lock()
	k.dropLocked(item, true, &fx)
	k.mu.Unlock()
	k.do(&fx)
}

// Destroy ends the loan of a broken resource: it is taken off the books and
// closed, and its room goes to the oldest waiter (who dials) or to MinIdle.
func (l Loan[T]) Destroy() {
	if l.e == nil {
		return
	}
	k := l.e.k
	var fx effects[T]
	k.mu.Lock()
	if !k.endLocked(l, &fx) {
		k.mu.Unlock()
		return
	}
	k.dropLocked(l.item, true, &fx)
	k.mu.Unlock()
	k.do(&fx)
}

// Hijack ends the loan by taking the resource out of the pool for good: it
// is taken off the books but not closed; closing it is now the caller's
// job. Its room goes to the oldest waiter or to MinIdle. On a loan that has
// already ended, Hijack does nothing and returns the zero T.
func (l Loan[T]) Hijack() T {
	var zero T
	if l.e == nil {
		return zero
	}
	k := l.e.k
	var fx effects[T]
	k.mu.Lock()
	if !k.endLocked(l, &fx) {
		k.mu.Unlock()
		return zero
	}
	k.dropLocked(l.item, false, &fx) // not closed: the caller's now
	k.mu.Unlock()
	k.do(&fx)
	return l.item
}

// endLocked ends loan l, and reports whether it was still out; a loan that
// had ended already is counted as a double release.
func (k *Keeper[T]) endLocked(l Loan[T], fx *effects[T]) bool {
	e := l.e
	if !e.gen.CompareAndSwap(l.gen, l.gen+1) {
		k.stats.doubles++
		return false
	}
	if e.reported {
		fx.leaks = append(fx.leaks, k.leakLocked(e, l.item, k.clock.Now(), true))
		e.reported = false
	}
	e.stack = nil
	return true
}

// dropLocked takes a lent item off the books (its loan already ended), to
// be closed when closeIt, and lets waiters and MinIdle use the room.
func (k *Keeper[T]) dropLocked(item T, closeIt bool, fx *effects[T]) {
	now := k.clock.Now()
	k.p.Drop(item, now)
	if closeIt {
		fx.close = append(fx.close, item)
	}
	k.serveLocked(now, fx)
	k.topUpLocked(now, fx)
	if k.closed {
		k.drainedLocked()
	}
}

func (k *Keeper[T]) safeReset(v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("Reset", r)
			err = fmt.Errorf("wardpool: Reset panicked: %v", r)
		}
	}()
	return k.reset(context.Background(), v)
}
