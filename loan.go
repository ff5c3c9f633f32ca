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
	// at is when the loan began, on the Keeper's clock: nanoseconds after
	// its epoch. An int64 rather than a time.Time keeps a Loan (of a
	// pointer T) at 32 bytes and four fields, small enough for Go to hold
	// in registers all the way from lendLocked to the caller and back to
	// Release, instead of copying it through the stack at each return (see
	// decideLocked); it costs one Time.Sub at lending. On
	// BenchmarkUncontended that moved wardpool's ratio to puddle from 2.25
	// to 1.55 (median of 8 rounds; with a clock that never moves, 140 ->
	// 88 ns per Acquire+Release). TestKeeperLoanClock covers Held and
	// Stats.AcquireWait, the two readers of at.
	at int64
}

// Value returns the resource lent.
func (l Loan[T]) Value() T { return l.item }

// Held returns how long ago the loan began, on the Keeper's clock.
func (l Loan[T]) Held() time.Duration {
	if l.e == nil {
		return 0
	}
	k := l.e.k
	return time.Duration(int64(k.now().Sub(k.epoch)) - l.at)
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

// release is Release, by one route: the loan ends, BeforeReuse runs (outside
// the lock), and the pool is given the resource back under the lock, which
// serves the waiters with it as the pool answers. A loan that had ended
// already is counted as a double release.
func (k *Keeper[T]) release(l Loan[T]) {
	e := l.e
	if !l.end() {
		return
	}
	if k.reuse != nil {
		if err := k.safeReuse(l.item); err != nil {
			k.drop(e, l.item, true)
			return
		}
	}
	now := k.now()
	var fx effects[T]
	k.mu.Lock()
	k.endedLocked(e, l.item, now, &fx)
	var kept bool
	if k.pool != nil { // nothing records: see machine.go
		kept = k.pool.Give(l.item, now)
	} else {
		kept = k.p.Give(l.item, now)
	}
	if !kept {
		k.closeLocked(l.item) // made before a Reset, past the Idle ceiling, or closed
	}
	k.settledLocked(now, &fx)
	k.unlockDo(&fx)
}

// end ends the loan, by moving its seat's loan generation on, and reports
// whether it was still out; an end of a loan that had ended already is
// counted as a double release. Release, Destroy, Hijack and Reset end a
// loan through it, so only the first of them does anything.
func (l Loan[T]) end() bool {
	if l.e.loan.CompareAndSwap(l.gen, l.gen+1) {
		return true
	}
	l.e.k.tally.doubles.Add(1)
	return false
}

// endedLocked is the watches' part of a loan of item, in e, that has just
// ended: the stall watch hears a loan came back; the leak watch forgets the loan, and a loan it had reported as a
// leak is reported again, as returned, once the lock is let go (never
// before its leak's report).
func (k *Keeper[T]) endedLocked(e *entry[T], item T, now time.Time, fx *effects[T]) {
	if k.stallAfter > 0 {
		k.stallBackLocked(now)
	}
	if e.lw == nil {
		return // the leak watch is off
	}
	if n, ok := k.endWatchLocked(e, item, now); ok {
		fx.leaks = append(fx.leaks, n)
	}
}

// Destroy ends the loan of a broken resource: it is taken off the books and
// closed (in the background), and its room goes to the oldest waiter (who
// dials) or to MinIdle.
func (l Loan[T]) Destroy() {
	if l.e == nil {
		return
	}
	k := l.e.k
	if l.end() {
		k.drop(l.e, l.item, true)
	}
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
	if !l.end() {
		return zero
	}
	k.drop(l.e, l.item, false) // not closed: the caller's now
	return l.item
}

// drop takes item, in e's seat, off the books (its loan already ended), to
// be closed when closeIt, and lets waiters and MinIdle use the room: the
// end of every loan that does not give its resource back (Destroy, Hijack,
// a failed BeforeReuse).
func (k *Keeper[T]) drop(e *entry[T], item T, closeIt bool) {
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	k.endedLocked(e, item, now, &fx)
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
			k.bgDoneLocked()
			k.mu.Unlock()
		}()
	}
	k.settledLocked(now, &fx)
	k.unlockDo(&fx)
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
