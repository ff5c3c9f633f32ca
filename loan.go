package wardpool

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
	e    *entry[T] // the seat's record; nil: no loan
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
	return l.e.loan.Load() == l.gen
}

// Release gives the resource back. The oldest caller waiting gets it at once
// (directly, so the releaser cannot take it back first); otherwise it goes
// idle, or is closed when the pool keeps enough idle already, when the
// Keeper was Reset since it was made, or when the Keeper is closed. With
// Config.BeforeReuse set, that runs first, outside the lock, and an error destroys
// the resource instead. Closing never runs on the releaser's goroutine.
func (l Loan[T]) Release() {
	if l.e == nil {
		return
	}
	k := l.e.k
	k.release(l)
}

// release is Release: the loan ends without the mutex, and the resource
// goes back through the lane (parked in the slot), the mutex or the inbox
// (inbox.go). A loan that had ended already is counted as a double release.
func (k *Keeper[T]) release(l Loan[T]) {
	e := l.e
	if !e.loan.CompareAndSwap(l.gen, l.gen+1) {
		k.mu.Lock()
		k.stats.doubles++
		k.unlockMu()
		return
	}
	if k.reuse != nil {
		if err := k.safeReuse(l.item); err != nil {
			k.ended(e, l.item)
			k.destroyEnded(e, l.item)
			return
		}
	}
	// Parked, the resource keeps the watch word its loan left (tryPark).
	if k.laneOn && k.tryPark(e, k.slot.Load()) {
		return
	}
	k.ended(e, l.item)
	k.giveEnded(e, l.item)
}

// ended is the leak watch's part of a loan of item, in e, that its holder
// has just ended outside the lock: the watch forgets the loan, and a loan it
// had reported as a leak is reported again, as returned, on the releaser's
// goroutine, before the resource goes back.
func (k *Keeper[T]) ended(e *entry[T], item T) {
	if e.lw == nil {
		return // the leak watch is off
	}
	if n, ok := k.endWatch(e, item); ok {
		k.report(n)
	}
}

// giveEndedLocked gives back item, in e's seat, whose loan has ended, at now:
// to the oldest waiter, to idle, or to be closed, as the pool answers (made
// before a Reset, past the Idle ceiling, or the Keeper closed).
func (k *Keeper[T]) giveEndedLocked(e *entry[T], item T, now time.Time, fx *effects[T]) {
	k.giveBackLocked(e, item, now)
	k.armSweepLocked(now)
	k.settledLocked(now, fx)
}

// giveBackLocked gives the pool item, in e's seat, back at the instant at,
// after the loans the lane made of it (Relent), and closes it when the pool
// retires it (made before a Reset, past the Idle ceiling, or the Keeper
// closed). Every way back ends here: the mutex, the inbox and the slot.
func (k *Keeper[T]) giveBackLocked(e *entry[T], item T, at time.Time) {
	k.relentLocked(e, item)
	if !k.p.Give(item, at) {
		k.closeLocked(item)
	}
}

// destroyEnded drops and closes the resource of a loan ended already.
func (k *Keeper[T]) destroyEnded(e *entry[T], item T) {
	var fx effects[T]
	k.lock()
	k.dropLocked(e, item, true, &fx)
	k.unlockDo(&fx)
}

// Destroy ends the loan of a broken resource: it is taken off the books and
// closed (in the background), and its room goes to the oldest waiter (who
// dials) or to MinIdle.
func (l Loan[T]) Destroy() {
	if l.e == nil {
		return
	}
	k := l.e.k
	var fx effects[T]
	k.lock()
	if k.endLocked(l, &fx) {
		k.dropLocked(l.e, l.item, true, &fx)
	}
	k.unlockDo(&fx)
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
	k.lock()
	ok := k.endLocked(l, &fx)
	if ok {
		k.dropLocked(l.e, l.item, false, &fx) // not closed: the caller's now
	}
	k.unlockDo(&fx)
	if !ok {
		return zero
	}
	return l.item
}

// endLocked ends loan l, and reports whether it was still out; a loan that
// had ended already is counted as a double release.
func (k *Keeper[T]) endLocked(l Loan[T], fx *effects[T]) bool {
	e := l.e
	if !e.loan.CompareAndSwap(l.gen, l.gen+1) {
		k.stats.doubles++
		return false
	}
	if e.lw == nil {
		return true // the leak watch is off
	}
	if n, ok := k.endWatch(e, l.item); ok {
		fx.leaks = append(fx.leaks, n)
	}
	return true
}

// dropLocked takes item, in e's seat, off the books (its loan already
// ended), to be closed when closeIt, and lets waiters and MinIdle use the
// room.
func (k *Keeper[T]) dropLocked(e *entry[T], item T, closeIt bool, fx *effects[T]) {
	now := k.clock.Now()
	k.relentLocked(e, item)
	k.p.Drop(item, now)
	if closeIt {
		k.closeLocked(item)
	} else if k.sh != nil && k.sh.Budget != nil {
		// Hijacked: out of the pool, and its slot back to the fleet.
		k.slotGoneLocked()
		k.bg++
		go func() {
			k.slotBack()
			k.mu.Lock()
			k.bg--
			k.drainedLocked()
			k.unlockMu()
		}()
	}
	k.serveLocked(now, fx)
	k.topUpLocked(now, fx)
	if k.closed {
		k.drainedLocked()
	}
}

func (k *Keeper[T]) safeReuse(v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("BeforeReuse", r)
			err = fmt.Errorf("wardpool: BeforeReuse panicked: %v", r)
		}
	}()
	return k.reuse(context.Background(), v)
}
