package wardpool

import "time"

// armIdleLocked sets the timer for the next idle expiry, if that is before
// it would fire anyway.
func (k *Keeper[T]) armIdleLocked(now time.Time) {
	if at, ok := k.p.Next(); ok {
		k.armLocked(now, at)
	}
}

// armLocked makes the one timer fire at or before at.
func (k *Keeper[T]) armLocked(now, at time.Time) {
	if k.closed || (k.armed && !at.Before(k.timerAt)) {
		return
	}
	d := max(at.Sub(now), time.Nanosecond)
	k.timerAt, k.armed = at, true
	if k.timer == nil {
		k.timer = k.clock.AfterFunc(d, k.tick)
		return
	}
	k.timer.Reset(d)
}

// tick is the one timer's work: fold the lane, evict what expired, serve
// waiters held back by a Later, report leaks, top up MinIdle, and set the
// timer again.
func (k *Keeper[T]) tick() {
	var fx effects[T]
	k.lock() // folds the lane: nothing stays parked past a sweep
	if k.closed {
		k.unlock()
		return
	}
	// The lane stays shut until a release through the mutex arms the next
	// sweep: an idle Keeper runs no timer for it.
	k.sweepArmed = false
	k.bg++
	k.armed = false
	now := k.clock.Now()
	gone := k.p.Evict(now)
	evicted := len(gone)
	k.closeAllLocked(gone)
	if k.retry || evicted > 0 {
		// Only ask for the waiters when something changed for them: a Later
		// ran out, or eviction made room. Asking for nothing would count a
		// Wait answer in the books each time.
		k.retry = false
		k.serveLocked(now, &fx)
	}
	if k.leakAfter > 0 {
		k.watchLocked(now, &fx)
	}
	k.topUpLocked(now, &fx)
	k.armIdleLocked(now)
	k.unlockDo(&fx)
	k.mu.Lock()
	k.bg--
	k.drainedLocked()
	k.unlockMu()
}
