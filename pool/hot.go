package pool

import (
	"context"
	"sync/atomic"
	"time"
)

// The hot slots: a lock-free way in and out for the common case.
//
// Most acquires in a healthy service find a resource idle and nobody
// waiting, and most releases find nobody waiting for it. For those, taking
// the Keeper's mutex twice is most of the cost. So a Release that finds
// nobody waiting parks its resource in one of a few hot slots (one atomic
// compare-and-swap), and an Acquire that finds nobody waiting takes one from
// there (another), with no lock at all. It is the idea of HikariCP's
// ConcurrentBag and of sync.Pool's per-P caches, kept small and honest:
//
//   - A resource in a hot slot is idle. Whatever reads the pool under the
//     lock (Stats, Loans, the timer, every acquire that has to ask the
//     pool) first cools the hot slots: gives their resources to the Pool at
//     the instant each came back, so the books, Keep and eviction order are
//     as if the slots did not exist.
//   - The slots close (gate) whenever a caller is waiting, the Keeper is
//     closed, or the sweep below is due, and for configurations whose
//     rules need the lock on every lend or return (LeakAfter, a ward with a
//     shedder or limiter, an Idle ceiling below Size). A waiter is therefore
//     always served through the FIFO queue: a Release never parks a
//     resource while someone waits, and a caller who queues cools the slots
//     after queueing, so a resource parked in the race is handed to it.
//     (Each side publishes first and looks second; one of them sees the
//     other.)
//   - Keep and Life are kept: a hot resource past either is not lent, and
//     the timer cools the slots at least every sweepEvery (or Keep, or
//     Life, when shorter), so a hot resource nobody takes reaches the Pool
//     (and its eviction) in time. Keep is exact, Life late by at most
//     sweepEvery for a resource nobody asks for.
//   - Check runs on a hot resource as on any other (it sat idle since it
//     was parked), Config.Reset runs before a resource is parked, and with
//     MinIdle set an acquire from the slots takes the lock once to top up
//     (unless the slots alone still hold MinIdle).
//   - Loans are counted by the slots themselves (see seatBits) and folded
//     into the books under the lock; Keeper.Loans may read a loan from the
//     slots up to atSlack long.

// hotSlots is how many resources can sit in the hot slots.
const hotSlots = 4

// A hot slot is one word: the low seatBits hold the parked resource's seat
// plus one (zero: empty), the rest count the resources taken from the slot,
// so that taking one and counting it are one compare-and-swap. The counts
// wrap; the Keeper folds them into its books at each sweep and each
// Stats, long before a wrap could be missed (2^40 takes in between).
const (
	seatBits = 24
	seatMask = 1<<seatBits - 1
	takeOne  = 1 << seatBits
)

// atSlack is how far the start of a loan from the hot slots may be from the
// one the Keeper records for Loans: a resource lent again within atSlack of
// its previous loan's start keeps that start (Loans reads it up to atSlack
// long; the loan's own Held is exact). It spares the hot path a store, a
// locked instruction, in the tight loops where it matters, and is the
// accuracy of the default clock anyway.
const atSlack = time.Millisecond

// sweepEvery is the longest a resource stays in a hot slot before the
// timer cools it into the Pool.
const sweepEvery = time.Second

// The gate's bits: the hot slots are open when none is set.
const (
	gateOff     uint32 = 1 << iota // the configuration needs the lock on every loan
	gateWaiters                    // callers are queued
	gateClosed                     // the Keeper is closed
	gateSweep                      // the sweep is not armed: a release under the lock arms it
)

// entry is the Keeper's record of one of the pool's seats, kept beside it,
// and what a hot slot holds. Entries are allocated once per seat and never
// move, so a loan and a hot slot can point at one.
type entry[T comparable] struct {
	k     *Keeper[T]
	item  T      // the resource in the seat
	seat  int32  // its index
	epoch uint32 // Keeper's reset epoch when the resource was made
	dies  int64  // when it is past Life, ns since Keeper.base; 0 without Life

	gen atomic.Uint32 // the generation of the seat's current (or next) loan
	at  atomic.Int64  // when the current loan began, ns since Keeper.base

	parked int64 // when it was parked in a hot slot, ns since Keeper.base

	stack    *stack // the current loan's Acquire stack, with LeakAfter only
	reported bool   // the current loan was reported as a leak
}

// hotOff reports why cfg's Keeper cannot use the hot slots: every one of
// these rules has to see each loan begin or end under the lock.
func hotOff[T comparable](cfg Config[T]) bool {
	l := cfg.Limits
	return cfg.LeakAfter > 0 ||
		cfg.Ward.Shedder != nil || cfg.Ward.Limiter != nil ||
		(l.Idle > 0 && (l.Size == 0 || l.Idle < l.Size))
}

// ns is now on the Keeper's scale: nanoseconds since base.
func (k *Keeper[T]) ns(now time.Time) int64 { return int64(now.Sub(k.base)) }

// nanos reads the Keeper's clock on its own scale; with the default clock
// that is one load, no time.Time to build and subtract.
func (k *Keeper[T]) nanos() int64 {
	if k.cached != nil {
		return k.cached.mono.Load() - k.baseMono
	}
	return k.ns(k.clock.Now())
}

// acquireHot lends a resource from the hot slots, when one is there and
// fit to lend. ok false with a nil error means none was: ask the pool.
func (k *Keeper[T]) acquireHot(ctx context.Context) (l Loan[T], ok bool, err error) {
	for {
		e := k.popHot()
		if e == nil {
			return Loan[T]{}, false, nil
		}
		t := k.nanos()
		if !k.fresh(e, t) {
			k.hotStale.Add(1) // taken, but not lent: no loan on the books
			k.coolOne(e)
			continue
		}
		if t-e.at.Load() >= int64(atSlack) {
			e.at.Store(t)
		}
		l = Loan[T]{e: e, item: e.item, gen: e.gen.Load(), at: t}
		if k.check != nil && k.due(time.Duration(t-e.parked)) {
			if ok, err := k.checkLoan(ctx, l); !ok {
				k.hotUnlent.Add(1)
				if err != nil {
					return Loan[T]{}, false, err
				}
				continue
			}
		}
		if k.minIdle > 0 && k.hotCount() < k.minIdle {
			k.topUp() // the lock, unless the slots alone hold MinIdle
		}
		return l, true, nil
	}
}

// topUp starts the dials MinIdle needs now that a resource left the hot
// slots.
func (k *Keeper[T]) topUp() {
	var fx effects[T]
	k.mu.Lock()
	k.topUpLocked(k.clock.Now(), &fx)
	k.mu.Unlock()
	if fx.dials != nil {
		k.do(&fx)
	}
}

// popHot takes a resource out of the hot slots, counting it, or returns nil.
func (k *Keeper[T]) popHot() *entry[T] {
	for i := range k.hot {
		s := &k.hot[i]
		if w := s.Load(); w&seatMask != 0 && s.CompareAndSwap(w, w&^seatMask+takeOne) {
			return (*k.table.Load())[w&seatMask-1]
		}
	}
	return nil
}

// fresh reports whether the hot resource in e may be lent at t: within Keep
// and Life, and made since the last Reset.
func (k *Keeper[T]) fresh(e *entry[T], t int64) bool {
	if keep := int64(k.limits.Keep); keep > 0 && t-e.parked > keep {
		return false
	}
	if k.limits.Life > 0 && t > e.dies {
		return false
	}
	return e.epoch == k.epoch.Load()
}

// releaseHot tries to end loan l by parking its resource in a hot slot. It
// reports false, having done nothing, when l has ended already (the slow
// path counts the double release); otherwise it has ended the loan and
// seen the resource home, by the hot slots or the lock.
func (k *Keeper[T]) releaseHot(l Loan[T]) bool {
	e := l.e
	if !e.gen.CompareAndSwap(l.gen, l.gen+1) {
		return false
	}
	if k.reset != nil {
		if err := k.safeReset(l.item); err != nil {
			k.destroyEnded(l.item)
			return true
		}
	}
	if e.epoch == k.epoch.Load() && e.seat < seatMask {
		e.parked = k.nanos()
		me := uint64(e.seat + 1)
		for i := range k.hot {
			s := &k.hot[i]
			if w := s.Load(); w&seatMask == 0 && s.CompareAndSwap(w, w|me) {
				// Parked. If the gate closed meanwhile (a caller queued, the
				// Keeper closed, a sweep began), take it back to the lock,
				// unless whoever closed it already took it.
				if k.gate.Load() != 0 && s.CompareAndSwap(w|me, w) {
					break
				}
				return true
			}
		}
	}
	k.giveEnded(l)
	return true
}

// coolOne gives the hot resource e, taken out of its slot, to the Pool,
// which retires it when it is past its age.
func (k *Keeper[T]) coolOne(e *entry[T]) {
	var fx effects[T]
	k.mu.Lock()
	now := k.clock.Now()
	k.coolLocked(e, now, &fx)
	fx.close = append(fx.close, k.p.Evict(now)...)
	k.settledLocked(now, &fx)
	k.mu.Unlock()
	k.do(&fx)
}

// coolAllLocked gives every resource in the hot slots to the Pool, and
// reports whether there was any.
func (k *Keeper[T]) coolAllLocked(now time.Time, fx *effects[T]) bool {
	found := false
	for i := range k.hot {
		s := &k.hot[i]
		for {
			w := s.Load()
			if w&seatMask == 0 {
				break
			}
			if s.CompareAndSwap(w, w&^seatMask) {
				k.coolLocked(k.ents[w&seatMask-1], now, fx)
				found = true
				break
			}
		}
	}
	k.foldLocked()
	return found
}

// coolLocked gives the hot resource e to the Pool as given back when it was
// parked; one made before the last Reset is retired instead, and one the
// Pool does not keep is closed.
func (k *Keeper[T]) coolLocked(e *entry[T], now time.Time, fx *effects[T]) {
	if e.epoch != k.epoch.Load() {
		k.p.retireLent(e.item, now)
		fx.close = append(fx.close, e.item)
		return
	}
	if !k.p.giveSeatAt(e.seat, e.item, k.base.Add(time.Duration(e.parked)), now) {
		fx.close = append(fx.close, e.item)
	}
}

// hotCount is how many resources sit in the hot slots now.
func (k *Keeper[T]) hotCount() int {
	n := 0
	for i := range k.hot {
		if k.hot[i].Load()&seatMask != 0 {
			n++
		}
	}
	return n
}

// foldLocked adds what was taken from each hot slot since the last fold to
// hotTaken.
func (k *Keeper[T]) foldLocked() {
	for i := range k.hot {
		n := k.hot[i].Load() >> seatBits
		k.hotTaken += (n - k.hotSeen[i]) & (1<<(64-seatBits) - 1)
		k.hotSeen[i] = n
	}
}

// hotLoansLocked is how many loans the hot slots made: taken, less those
// found past their age (closed, not lent).
func (k *Keeper[T]) hotLoansLocked() uint64 {
	k.foldLocked()
	return k.hotTaken - k.hotStale.Load()
}

// armSweepLocked arms the sweep, if it is due, and opens that bit of the
// gate: from now until the timer fires, releases may park.
func (k *Keeper[T]) armSweepLocked(now time.Time) {
	if k.gate.Load()&gateSweep == 0 || k.closed {
		return
	}
	k.armLocked(now, now.Add(k.sweep))
	k.gate.And(^gateSweep)
}
