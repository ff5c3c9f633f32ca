package wardpool

import (
	"time"

	"github.com/wardpool/wardpool/pool"
)

// The lane: a lock-free way in and out for a release followed by an
// acquire while nobody waits, open only while the Pool says a Give and a
// Take of the same resource would be answered so (Pool.Lane). It makes no
// rule of its own; DESIGN.md ("The lane") says how it holds to the Pool's.

// The slot's word, from the low bits up: the parked resource's seat plus one
// (zero: none); the epoch of the unlock that opened it, modulo 2^32; how
// many loans the lane has made since lock last counted them; and the shut
// bit. Within an opening the count only rises, so the word never returns to
// a value a release or an acquire read before: a compare-and-swap made on
// an old reading fails. A resource whose seat does not fit is never parked;
// a take that would overflow the count goes to the mutex, which empties it.
// The instant a resource was parked is its entry's back, written before the
// compare-and-swap that parks it.
const (
	seatBits  = 16
	epochBits = 32
	seatMask  = 1<<seatBits - 1
	epochMask = 1<<epochBits - 1
	epochAt   = seatBits
	cntShift  = seatBits + epochBits
	cntOne    = 1 << cntShift
	cntMax    = 1<<(63-cntShift) - 1
	shut      = 1 << 63
)

// atSlack is how far the start of a loan from the lane may be from the one
// the Keeper records: a resource lent again within atSlack of its previous
// loan's start keeps that start (Keeper.Loans reads it up to atSlack long,
// the loan's own Held is exact). It spares the lane a store, a locked
// instruction, in the tight loops where it matters.
const atSlack = time.Millisecond

// relendsMax is where the lane's count of a resource's loans is reported
// to the pool at once (a lock every 16,384 loans of one resource), below
// where its int16 would overflow.
const relendsMax = 1 << 14

// sweepEvery is the longest a resource stays in the slot before the timer
// folds it into the pool.
const sweepEvery = time.Second

// initLane sets up the lane when on, and how often the sweep folds it. The
// slot starts shut: the first release goes through the mutex and arms the
// sweep.
func (k *Keeper[T]) initLane(on bool) {
	k.slot.Store(shut)
	if !on {
		return
	}
	k.laneOn = true
	k.sweep = sweepFor(*k.limits.Load(), k.leakAfter)
}

// sweepFor is how often the timer folds the lane under limits l: every
// sweepEvery, or Keep, Life or leakAfter when shorter.
func sweepFor(l pool.Limits, leakAfter time.Duration) time.Duration {
	var sweep time.Duration
	for _, d := range []time.Duration{l.Keep, l.Life} {
		if d > 0 && (sweep == 0 || d < sweep) {
			sweep = d
		}
	}
	if sweep == 0 || sweep > sweepEvery {
		sweep = sweepEvery
	}
	// The lane's loans arm no timer of their own: with the leak watch on,
	// the sweep that must come before one is LeakAfter old finds it, and
	// sets the timer for when it will be.
	if leakAfter > 0 && leakAfter < sweep {
		sweep = leakAfter
	}
	return sweep
}

// lock takes k.mu and shuts the lane, folding what was parked into the
// pool, so that whatever the holder asks the pool sees every resource given
// back, and nothing moves through the lane until unlock. Every path that
// asks the pool takes the mutex through lock.
func (k *Keeper[T]) lock() {
	k.mu.Lock()
	k.lockedTail()
}

// lockedTail is what lock does once it holds k.mu: shut the lane, and take
// in what it held. An open slot may hold a parked resource (folded); a shut
// one may hold returns in the inbox (inbox.go), given in. A shut slot with
// neither (callers queued, say) is left alone: no swap, which spares a
// saturated queue one locked instruction each way.
func (k *Keeper[T]) lockedTail() {
	if w := k.slot.Load(); w != shut {
		k.takeInLocked(k.slot.Swap(shut))
	}
}

// takeInLocked takes in slot word w, swapped out for shut: a parked
// resource and the lane's loans from an open slot, or the inbox from a shut
// one. Dials that serving the queue with the inbox starts (rare: a return
// that frees room, not a resource) run on a goroutine of their own.
func (k *Keeper[T]) takeInLocked(w uint64) {
	if w&shut == 0 {
		k.foldLocked(w)
		return
	}
	var fx effects[T]
	if k.drainLocked(w, &fx) && fx.pending() {
		go k.do(&fx)
	}
}

// unlock takes in the inbox, opens the lane if the pool and the queue then
// allow, and releases k.mu; if a return arrived as it let go and the mutex
// is free, it takes the mutex again to give it in.
func (k *Keeper[T]) unlock() {
	for {
		k.openLocked()
		k.mu.Unlock()
		if !k.retake() {
			return
		}
	}
}

// openLocked takes in the inbox and then opens the lane if the pool and the
// queue allow, asking only after the returns are in: they may have filled
// the Idle ceiling, or served the last waiter. An empty inbox and an open
// lane are one fact (the open word is written over a bare shut slot, with
// one compare-and-swap), so no release parks above a return the pool has
// not had. A stream of returns that keeps beating the compare-and-swap
// leaves the lane shut: the next unlock opens it.
func (k *Keeper[T]) openLocked() {
	if !k.laneOn {
		// No lane: only the inbox to take in.
		if w := k.slot.Load(); w != shut {
			k.takeInLocked(k.slot.Swap(shut))
		}
		if k.sh != nil {
			k.sharedLocked()
		}
		return
	}
	for tries := 0; ; tries++ {
		if w := k.slot.Load(); w != shut {
			k.takeInLocked(k.slot.Swap(shut))
		}
		if k.sh != nil {
			k.sharedLocked()
		}
		if tries == 4 || !(k.laneOn && !k.closed && k.q.live == 0 && k.sweepArmed && k.p.Lane()) {
			return // the slot stays shut
		}
		k.epoch++
		if k.slot.CompareAndSwap(shut, uint64(k.epoch&epochMask)<<epochAt) {
			return
		}
	}
}

// unlockMu releases k.mu for a holder that took it with k.mu.Lock() to
// touch counters, not to ask the pool; it too takes in returns that
// arrived meanwhile.
func (k *Keeper[T]) unlockMu() {
	k.mu.Unlock()
	if k.retake() {
		k.unlock()
	}
}

// retake, called just after k.mu was released, takes it again when the
// inbox holds returns and the mutex is free, and takes them in; it reports
// whether it holds k.mu. Every release of the mutex ends with it: a
// release that pushed and found the mutex held leaves its return to the
// holder, and whoever holds the mutex last looks once more after letting
// go, so no return stays in the inbox while the mutex is free.
func (k *Keeper[T]) retake() bool {
	if w := k.slot.Load(); w&shut == 0 || w&seatMask == 0 || !k.mu.TryLock() {
		return false
	}
	k.lockedTail()
	return true
}

// takeLane lends the resource parked in the slot, when the pool's Take
// would lend it now; ok false means ask the pool.
func (k *Keeper[T]) takeLane() (l Loan[T], ok bool) {
	for {
		w := k.slot.Load()
		if w&shut != 0 || w&seatMask == 0 || w>>cntShift >= cntMax {
			return Loan[T]{}, false
		}
		e := (*k.table.Load())[w&seatMask-1]
		t := k.nanos()
		idle := time.Duration(t - e.back.Load())
		if k.limits.Load().Past(idle, time.Duration(t-e.born.Load())) || (k.check != nil && k.due(idle)) {
			return Loan[T]{}, false
		}
		// Empty the slot and count the loan, in one step.
		if !k.slot.CompareAndSwap(w, w&^seatMask+cntOne) {
			continue
		}
		// The resource is this caller's now: the pool's Give at parking and
		// Take at t are owed to the pool (relends).
		if e.relends++; e.relends == relendsMax {
			// Tell the pool before the count can overflow (it never
			// comes near: every sweep sends the resource through the lock).
			k.lock()
			k.relentLocked(e, e.item)
			k.unlock()
		}
		if t-e.at.Load() >= int64(atSlack) {
			e.at.Store(t)
		}
		if k.leakAfter > 0 {
			// The stack first, then the word that lets the watch read it.
			e.lw.stack.capture(0)
			e.lentWatch(t, e.loan.Load())
		}
		if k.minIdle > 0 {
			k.topUp()
		}
		return Loan[T]{e: e, item: e.item, gen: e.loan.Load(), at: t}, true
	}
}

// tryPark parks e's resource, whose loan has ended, in the slot, read as w,
// and reports whether it did: only an open, empty slot takes it, and only
// a resource of the pool's current generation whose seat fits.
//
// With the leak watch on, a loan that ends by parking leaves its watch word
// as it was, one locked instruction fewer than the swap that ends a watch
// elsewhere, and only if the watch has not reported it: the word is read
// after the slot (by the caller) and before the compare-and-swap, and the
// watch claims reports only under the mutex, whose lock changes the slot
// first, so a claim after the read makes the compare-and-swap fail and the
// release ends the watch the long way. The word left behind is no longer
// the current loan's (its generation is past: see entry.watching).
func (k *Keeper[T]) tryPark(e *entry[T], w uint64) bool {
	if w&(shut|seatMask) != 0 || e.seat >= seatMask-1 || e.gen.Load() != k.laneGen.Load() {
		return false
	}
	if e.lw != nil && e.lw.watch.Load()&watchReported != 0 {
		return false // reported: its return is reported the long way
	}
	// The parking instant, for the taker and the fold; a store is a locked
	// instruction, so it is made only when the instant changed (the default
	// clock moves once a millisecond: a busy lane parks the same resource
	// many times within one).
	if t := k.nanos(); e.back.Load() != t {
		e.back.Store(t)
	}
	return k.slot.CompareAndSwap(w, w|uint64(e.seat+1))
}

// foldLocked takes in the slot's word w, swapped out by lock: the lane's
// loans are counted, and the resource parked, if any, goes to the pool as
// given back at the instant it was parked, after the lane's loans of it
// (Relent).
func (k *Keeper[T]) foldLocked(w uint64) {
	n := w &^ shut >> cntShift
	k.laneTakes += n
	if w&seatMask == 0 {
		return
	}
	e := k.ents[w&seatMask-1]
	k.giveBackLocked(e, e.item, k.at(e.back.Load()))
}

// relentLocked reports to the pool the loans the lane made of item, in e's
// seat, that the pool has not heard of yet. Only the holder of item's loan
// (or lock, for a parked resource) calls it.
func (k *Keeper[T]) relentLocked(e *entry[T], item T) {
	if e.relends == 0 {
		return
	}
	n := int(e.relends)
	e.relends = 0
	if !k.p.Relent(e.seat, item, n, k.at(e.at.Load())) {
		panic("wardpool: the pool refused loans the lane made: a bug in the lane")
	}
	k.relent += uint64(n)
}

// laneCount is how many resources sit in the slot now: 0 or 1.
func (k *Keeper[T]) laneCount() int {
	if w := k.slot.Load(); w&shut == 0 && w&seatMask != 0 {
		return 1
	}
	return 0
}

// laneOpen reports whether the slot is open now.
func (k *Keeper[T]) laneOpen() bool { return k.slot.Load()&shut == 0 }

// topUp starts the dials MinIdle needs now that a resource left the lane.
func (k *Keeper[T]) topUp() {
	var fx effects[T]
	k.lock()
	k.topUpLocked(k.clock.Now(), &fx)
	k.unlockDo(&fx)
}

// armSweepLocked arms the sweep, if it is not armed: from now until the
// timer fires, the lane may open.
func (k *Keeper[T]) armSweepLocked(now time.Time) {
	if !k.laneOn || k.sweepArmed || k.closed {
		return
	}
	k.armLocked(now, now.Add(k.sweep))
	k.sweepArmed = true
}
