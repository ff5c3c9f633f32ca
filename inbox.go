package wardpool

// The inbox: returns that do not wait for the mutex.
//
// A release that cannot park in the lane gives its resource back under the
// mutex. When the mutex is busy, waiting for it would keep the resource
// from everyone while the releaser sleeps, and under load (more goroutines
// than CPUs) a few releasers asleep on the mutex with resources in hand are
// what tips a pool into a convoy where every acquire queues. So a release
// that finds the mutex held pushes its resource onto the inbox, a
// lock-free list of returns, and goes on; whoever holds the mutex gives
// what is in the inbox to the pool, in the order it came, at the instant
// each came (GiveSeat), before it lets the mutex go (unlock) and before it
// asks the pool anything (lock). A release that pushed then tries the
// mutex itself, and every release of the mutex looks again after letting
// go (unlock, and unlockMu for a holder that only touched counters), so
// nothing stays in the inbox while the mutex is free: a return left there
// by a holder that did not look would strand its resource with callers
// queued for it (the linearizability check's histories deadlocked on
// exactly that, from the end of a dial). No rule is made here: each return
// is the pool's Give, made late by at most one critical section, as if the
// release had waited for the mutex.
//
// The list is linked through the entries (entry.ret, seats plus one); a
// push is one compare-and-swap, a drain one swap, so there is no ABA to
// fear. Its head lives in the slot's seat bits while the lane is shut, so
// the lane can open only with the inbox empty, in one compare-and-swap (see
// unlock), and unlock asks the pool whether to open only after the inbox is
// in. It serves every configuration: with the lane shut (LockEveryLoan,
// callers queued, a hot shedder, a limiter's leases all out) every release
// that finds the mutex held comes here, and the leak watch lets a loan end
// without the lock (its word, in leak.go).

// pushReturn puts e's resource, whose loan has ended, in the inbox, and
// reports whether it did: the inbox takes returns only while the lane is
// shut, and only resources whose seat fits in the slot's seat bits.
func (k *Keeper[T]) pushReturn(e *entry[T]) bool {
	if e.seat >= seatMask-1 {
		return false
	}
	e.back.Store(k.nanos())
	me := uint64(e.seat + 1)
	for {
		w := k.slot.Load()
		if w&shut == 0 {
			return false // open: the lane or the mutex, not the inbox
		}
		e.next.Store(uint32(w & seatMask))
		if k.slot.CompareAndSwap(w, w&^seatMask|me) {
			return true
		}
	}
}

// drainLocked gives the pool every return in the inbox whose head w holds,
// oldest first, and serves the waiters with them; it reports whether there
// was any.
func (k *Keeper[T]) drainLocked(w uint64, fx *effects[T]) bool {
	h := uint32(w & seatMask)
	if h == 0 {
		return false
	}
	// The list runs newest first: give in the order the returns came.
	var buf [16]*entry[T]
	list := buf[:0]
	for s := h; s != 0; {
		e := k.ents[s-1]
		list = append(list, e)
		s = e.next.Load()
	}
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		k.giveBackLocked(e, e.item, k.at(e.back.Load()))
	}
	now := k.clock.Now()
	k.armSweepLocked(now)
	k.settledLocked(now, fx)
	return true
}

// giveEnded gives back the resource of a loan ended already: through the
// mutex when it is free, through the inbox when it is held (and the lane
// shut), through the lane when it opened meanwhile, and through the mutex,
// waiting, only when none of these can take it.
func (k *Keeper[T]) giveEnded(e *entry[T], item T) {
	var fx effects[T]
	if k.mu.TryLock() {
		k.lockedTail()
	} else if k.pushReturn(e) {
		if k.mu.TryLock() { // the holder may have let go before the push
			k.lockedTail()
			k.unlockDo(&fx)
		}
		return
	} else if k.tryPark(e, k.slot.Load()) {
		return // the lane opened meanwhile: parked
	} else {
		k.lock()
	}
	k.giveEndedLocked(e, item, k.now(), &fx)
	k.unlockDo(&fx)
}
