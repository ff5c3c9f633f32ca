package wardpool

// The inbox: returns that do not wait for the mutex. A release that finds
// the mutex held pushes its resource here and goes on; the holder gives
// each to the Pool, at its own instant, before it asks the Pool anything
// and before it lets go. DESIGN.md ("The inbox") says why and how.

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
		e.next = uint16(w & seatMask)
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
		s = uint32(e.next)
	}
	now := k.clock.Now()
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		k.giveBackLocked(e, e.item, k.at(e.back.Load()))
		// Each return serves the queue before the next is given, as if
		// its release had waited for the mutex: the guards see every loan
		// end and the next begin in the order a lock would have made.
		if k.q.live > 0 && i > 0 {
			k.serveLocked(now, fx)
		}
	}
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
