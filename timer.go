package wardpool

import (
	"context"
	"time"
)

// alarm is the Keeper's one timer: it fires at the earliest instant
// something is due (an idle resource past Keep or Life, a MinIdle retry, a
// loan due for the leak watch, waiters held back by a Later), and never
// otherwise. Guarded by Keeper.mu.
type alarm struct {
	t     Timer
	at    time.Time // when t fires, if armed
	armed bool
	retry bool // waiters were held back by a Later: the timer serves them
}

// armIdleLocked sets the timer for the next idle expiry the Pool names, if
// that is before it would fire anyway.
func (k *Keeper[T]) armIdleLocked(now time.Time) {
	if at, ok := k.p.Next(); ok {
		k.armLocked(now, at)
	}
}

// armLocked makes the one timer fire at or before at.
func (k *Keeper[T]) armLocked(now, at time.Time) {
	a := &k.alarm
	if k.closed || (a.armed && !at.Before(a.at)) {
		return
	}
	d := max(at.Sub(now), time.Nanosecond)
	a.at, a.armed = at, true
	if a.t == nil {
		a.t = k.clock.AfterFunc(d, k.tick)
		return
	}
	a.t.Reset(d)
}

// tick is the one timer's work: evict what expired, serve waiters held back
// by a Later, report leaks, top up MinIdle, and set the timer again for
// whatever is due next.
func (k *Keeper[T]) tick() {
	var fx effects[T]
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	k.bg++
	k.alarm.armed = false
	now := k.now()
	gone := k.p.Evict(now)
	k.closeAllLocked(gone)
	if k.alarm.retry || len(gone) > 0 {
		// Only ask for the waiters when something changed for them: a Later
		// ran out, or eviction made room. Asking for nothing would count a
		// Wait answer in the books each time.
		k.alarm.retry = false
		k.serveLocked(now, &fx)
	}
	if k.leakAfter > 0 {
		k.watchLocked(now, &fx)
	}
	k.topUpLocked(now, &fx)
	k.armIdleLocked(now)
	k.unlockDo(&fx)
	k.mu.Lock()
	k.bgDoneLocked()
	k.mu.Unlock()
}

// sleep waits d on the Keeper's clock, or until ctx ends (its error then).
func (k *Keeper[T]) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	t := k.clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}
