package pool

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
// mutex itself, and unlock looks again after letting go, so nothing stays
// in the inbox while the mutex is free. No rule is made here: each return
// is the pool's Give, made late by at most one critical section, as if the
// release had waited for the mutex.
//
// The list is linked through the entries (entry.next, seats plus one); a
// push is one compare-and-swap, a drain one swap, so there is no ABA to
// fear. It is used where a loan can end without the mutex: not with the
// leak watch, whose reports need the lock as a loan ends.

// pushReturn puts e's resource, whose loan has ended, in the inbox.
func (k *Keeper[T]) pushReturn(e *entry[T]) {
	e.gave.Store(k.nanos())
	me := uint32(e.seat + 1)
	for {
		h := k.inbox.Load()
		e.next.Store(h)
		if k.inbox.CompareAndSwap(h, me) {
			return
		}
	}
}

// drainLocked gives the pool every return in the inbox, oldest first, and
// serves the waiters with them; it reports whether there was any.
func (k *Keeper[T]) drainLocked(fx *effects[T]) bool {
	h := k.inbox.Swap(0)
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
		k.relentLocked(e, e.item)
		if !k.p.GiveSeat(e.seat, e.item, k.at(e.gave.Load())) {
			k.closeLocked(e.item)
		}
	}
	now := k.clock.Now()
	k.armSweepLocked(now)
	k.settledLocked(now, fx)
	return true
}

// giveEnded gives back the resource of a loan ended already: through the
// mutex when it is free, through the inbox when it is not.
func (k *Keeper[T]) giveEnded(e *entry[T], item T) {
	var fx effects[T]
	if k.leakAfter > 0 {
		k.lock()
		k.giveEndedLocked(e, item, k.now(), &fx)
		k.unlockDo(&fx)
		return
	}
	if k.mu.TryLock() {
		k.lockedTail()
		k.giveEndedLocked(e, item, k.now(), &fx)
		k.unlockDo(&fx)
		return
	}
	k.pushReturn(e)
	if k.mu.TryLock() { // the holder may have let go before the push
		k.lockedTail()
		k.unlockDo(&fx)
	}
}
