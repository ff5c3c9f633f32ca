package pool

import "time"

// The lane: a lock-free way in and out for the commonest pair of events, a
// release and then an acquire while nobody waits.
//
// The lane is one word, the slot. A release that finds it empty, and nobody
// waiting, parks its resource there with one compare-and-swap instead of
// giving it to the pool under the mutex; the next acquire takes it back
// with another. The lane makes no rule of its own; it carries out answers
// the pool has already fixed:
//
//   - What is parked is a Give the pool has not heard of yet, on top of
//     every Give it has: the slot holds one resource, the one returned last,
//     and whoever takes the mutex (lock) first hands it to the pool with
//     GiveSeat at the instant it was parked. So the pool's idle list is
//     always "what it holds, then the slot", in return order, and the next
//     Take after the slot's Give would answer with the slot's resource:
//     LIFO holds in every configuration.
//   - An acquire takes from the slot only when that Take would answer Ready
//     with it: Pool.Lane says a Give-then-Take pair touches nothing but the
//     loan and the books (no shedder, no limiter, no Idle ceiling below
//     Size), Limits.Past (the pool's own definition of fresh) says it is
//     fresh, it is of the pool's current generation (no Reset since it was
//     made), and Check is not due. Anything else goes to the mutex, which
//     folds the slot into the pool and lets the pool answer (Stale, say).
//   - The pair is reported to the pool with Relent when the resource next
//     passes through the mutex (its holder releases or destroys it there, or
//     it is folded from the slot), so the books, Loans and a recording hold
//     every loan. Until then Stats adds the loans the lane made and the pool
//     has not heard of: the lane counts its loans in the slot's word, the
//     mutex moves that count to laneTakes each time it folds, and relent
//     counts what reached the pool: exact, and without a second atomic.
//   - The lane shuts (the gate) while a caller is queued, when the Keeper
//     closes, when the sweep is due, and for configurations that must see
//     every loan under the lock (Pool.Lane false, or LeakAfter). A caller
//     who queues folds the slot after the gate is shut, and a release that
//     parked checks the gate afterwards and folds if it shut meanwhile: each
//     publishes first and looks second, so one of them sees the other, and
//     a queued caller is served from the queue in order.
//   - Time: the slot keeps the instant of parking in microseconds, rounded
//     down, and the pool is given that same instant: the lane's idle time is
//     never shorter than the pool's, and both apply Past to the same
//     numbers. The timer folds the slot at least every sweepEvery (or Keep,
//     or Life, when shorter), so a parked resource reaches the pool and its
//     eviction in time, and the slot's 40 bits of microseconds (12 days)
//     never wrap between parking and folding.

// The slot's word, from the low bits up: the parked resource's seat plus one
// (zero: empty), the microsecond it was parked modulo 2^32, and how many
// loans the lane has made since the mutex last counted them (see
// foldLocked). A resource whose seat does not fit is never parked; a take
// that would overflow the count goes to the mutex, which empties it.
const (
	seatBits  = 16
	usBits    = 32
	seatMask  = 1<<seatBits - 1
	usMask    = 1<<usBits - 1
	countOne  = 1 << (seatBits + usBits)
	countMax  = 1<<(64-seatBits-usBits) - 1
	laneShift = seatBits
)

// atSlack is how far the start of a loan from the lane may be from the one
// the Keeper records: a resource lent again within atSlack of its previous
// loan's start keeps that start (Keeper.Loans reads it up to atSlack long,
// the loan's own Held is exact). It spares the lane a store, a locked
// instruction, in the tight loops where it matters.
const atSlack = time.Millisecond

// sweepEvery is the longest a resource stays in the slot before the timer
// folds it into the pool.
const sweepEvery = time.Second

// The gate's bits: the lane is open when none is set.
const (
	gateOff     uint32 = 1 << iota // the configuration needs the lock on every loan
	gateWaiters                    // callers are queued
	gateClosed                     // the Keeper is closed
	gateSweep                      // the sweep is not armed: a release under the lock arms it
)

// initLane opens the lane when on, and sets how often the sweep folds it.
func (k *Keeper[T]) initLane(on bool) {
	if !on {
		k.gate.Store(gateOff)
		return
	}
	k.laneOn = true
	l := k.limits
	for _, d := range []time.Duration{l.Keep, l.Life} {
		if d > 0 && (k.sweep == 0 || d < k.sweep) {
			k.sweep = d
		}
	}
	if k.sweep == 0 || k.sweep > sweepEvery {
		k.sweep = sweepEvery
	}
	k.gate.Store(gateSweep)
}

// takeLane lends the resource parked in the slot, when the pool's Take
// would lend it now; ok false means ask the pool.
func (k *Keeper[T]) takeLane() (l Loan[T], ok bool) {
	for {
		w := k.slot.Load()
		if w&seatMask == 0 || w>>(seatBits+usBits) == countMax {
			return Loan[T]{}, false
		}
		e := (*k.table.Load())[w&seatMask-1]
		t := k.nanos()
		idle := k.laneIdle(w, t)
		if t > k.sweepBy.Load() || k.limits.Past(idle, time.Duration(t-e.born.Load())) ||
			(k.check != nil && k.due(idle)) || e.gen.Load() != k.laneGen.Load() {
			return Loan[T]{}, false
		}
		// Empty the slot and count the loan, in one step.
		if !k.slot.CompareAndSwap(w, w&^(seatMask|usMask<<seatBits)+countOne) {
			continue
		}
		// The resource is this caller's now: the pool's Give at parking and
		// Take at t are owed to the pool (relends).
		e.relends++
		if t-e.at.Load() >= int64(atSlack) {
			e.at.Store(t)
		}
		if k.minIdle > 0 {
			k.topUp()
		}
		return Loan[T]{e: e, item: e.item, gen: e.loan.Load(), at: t}, true
	}
}

// laneIdle is how long the resource in slot word w has been parked at t,
// from the parking microsecond (rounded down): never less than the truth.
func (k *Keeper[T]) laneIdle(w uint64, t int64) time.Duration {
	us := uint64(t/1000) & usMask
	d := (us - w>>seatBits) & usMask
	return time.Duration(int64(d)*1000 + t%1000)
}

// The slot keeps microseconds modulo 2^32 (about 71 minutes): the lane reads
// a parking instant only before sweepBy, which the timer keeps within a
// sweep (at most a second) of now while the lane is open, so a stopped or
// starved process never reads a wrapped instant; it asks the pool instead.

// releaseLane tries to end loan l by parking its resource in the slot. It
// reports false, having done nothing, when l has ended already (the mutex
// counts the double release); otherwise it has ended the loan and seen the
// resource home, through the slot or the mutex.
func (k *Keeper[T]) releaseLane(l Loan[T]) bool {
	e := l.e
	if !e.loan.CompareAndSwap(l.gen, l.gen+1) {
		return false
	}
	if k.reset != nil {
		if err := k.safeReset(l.item); err != nil {
			k.destroyEnded(e, l.item)
			return true
		}
	}
	if e.seat < seatMask-1 && e.gen.Load() == k.laneGen.Load() {
		t := k.nanos()
		old := k.slot.Load()
		w := old&^(seatMask|usMask<<seatBits) | uint64(t/1000)&usMask<<seatBits | uint64(e.seat+1)
		if old&seatMask == 0 && t >= 0 && k.slot.CompareAndSwap(old, w) {
			// Parked. If the gate shut or a Reset came meanwhile, hand it to
			// the pool now: a queued caller is owed it, or it is retired.
			if k.gate.Load() != 0 || e.gen.Load() != k.laneGen.Load() {
				k.foldNow()
			}
			return true
		}
	}
	k.giveEnded(e, l.item)
	return true
}

// foldNow folds the slot into the pool, and serves the queue with it.
func (k *Keeper[T]) foldNow() {
	var fx effects[T]
	k.lock() // folds
	now := k.clock.Now()
	k.settledLocked(now, &fx)
	k.unlockDo(&fx)
}

// foldLocked hands the resource parked in the slot, if any, to the pool as
// given back at the instant it was parked, with the lane's loans of it
// before that (Relent), and reports whether there was one.
func (k *Keeper[T]) foldLocked() bool {
	for {
		w := k.slot.Load()
		if w == 0 {
			return false
		}
		if !k.slot.CompareAndSwap(w, 0) {
			continue
		}
		k.laneTakes += w >> (seatBits + usBits)
		if w&seatMask == 0 {
			return false
		}
		e := k.ents[w&seatMask-1]
		now := k.clock.Now()
		t := k.ns(now)
		parked := k.at(t - int64(k.laneIdle(w, t)))
		k.relentLocked(e, e.item)
		if !k.p.GiveSeat(e.seat, e.item, parked) {
			k.closeLocked(e.item) // retired: made before a Reset, or closed
		}
		return true
	}
}

// relentLocked reports to the pool the loans the lane made of item, in e's
// seat, that the pool has not heard of yet. Only the holder of item's loan
// (or the mutex, for a parked resource) calls it.
func (k *Keeper[T]) relentLocked(e *entry[T], item T) {
	if e.relends == 0 {
		return
	}
	n := e.relends
	e.relends = 0
	if !k.p.Relent(e.seat, item, n, k.at(e.at.Load())) {
		panic("wardpool: the pool refused loans the lane made: a bug in the lane")
	}
	k.relent += uint64(n)
}

// laneCount is how many resources sit in the slot now: 0 or 1.
func (k *Keeper[T]) laneCount() int {
	if k.slot.Load()&seatMask != 0 {
		return 1
	}
	return 0
}

// topUp starts the dials MinIdle needs now that a resource left the lane.
func (k *Keeper[T]) topUp() {
	var fx effects[T]
	k.lock()
	k.topUpLocked(k.clock.Now(), &fx)
	k.unlockDo(&fx)
}

// armSweepLocked arms the sweep, if it is due, and opens that bit of the
// gate: from now until the timer fires, releases may park.
func (k *Keeper[T]) armSweepLocked(now time.Time) {
	if k.gate.Load()&gateSweep == 0 || k.closed || !k.laneOn {
		return
	}
	k.armLocked(now, now.Add(k.sweep))
	// The lane reads parking instants until a little past the sweep: the
	// timer folds the slot by then, or the lane asks the pool.
	k.sweepBy.Store(k.ns(now) + int64(k.sweep) + int64(sweepEvery))
	k.gate.And(^gateSweep)
}
