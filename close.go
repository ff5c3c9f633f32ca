package wardpool

import (
	"context"
	"time"
)

// Reset closes every idle resource now, and retires every resource lent
// now when it comes back (it is closed then instead of kept): for after a
// backend failover, when every connection made before is suspect. Dials in
// flight are kept. It is the pool's Reset (see Pool.Reset), carried out,
// and is counted in Stats.ResetCauses under CauseManual. A reset on the
// word of a failed resource is Loan.Reset.
func (k *Keeper[T]) Reset() {
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	if retired := k.p.Reset(now, 0); !k.closed {
		k.retireLocked(retired, CauseManual)
	}
	k.serveLocked(now, &fx)
	k.topUpLocked(now, &fx)
	k.unlockDo(&fx)
}

// Rotate replaces every resource the pool holds now, and every dial in
// flight, over the window over, at a bounded pace: for rotated credentials
// (a new password, an IAM or OAuth token, a Vault lease: have Dial use the
// new ones) or a moved endpoint, without a wave of n reconnects at once.
// One old resource is closed at once and one more every over/n: idle ones
// by the timer, idle longest first, and lent ones when they come back, each
// when its turn is due (until then an old one may still be lent). New dials
// are of the new generation. By the end of the window every old resource
// is closed, or closed on its return. Stats.Rotating counts the old ones
// still live; the rotation is counted in Stats.ResetCauses under
// CauseRotate. Rotate with over zero (or less) is Reset. A Reset, or a
// Loan.Reset, during a rotation closes what is left of it at once.
func (k *Keeper[T]) Rotate(over time.Duration) {
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	cause := CauseRotate
	if over <= 0 {
		cause = CauseManual
	}
	if retired := k.p.Reset(now, over); !k.closed {
		k.retireLocked(retired, cause)
	}
	k.serveLocked(now, &fx)
	k.topUpLocked(now, &fx)
	k.armIdleLocked(now)
	k.unlockDo(&fx)
}

// Close shuts the pool: from now on acquires fail with ErrClosed, and so do
// the callers waiting; idle resources are closed; dials in flight are
// cancelled. Then it waits for every loan to come home (each is closed as it
// does), for every close to be done and for the Keeper's goroutines to end,
// until ctx ends; it returns ctx.Err() if ctx ended first. Calling it again
// waits again.
func (k *Keeper[T]) Close(ctx context.Context) error {
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	if !k.closed {
		k.closeAllLocked(k.p.Close())
		k.closed = true
		k.serveLocked(now, &fx) // every waiter gets ErrClosed
		if k.alarm.t != nil && k.alarm.t.Stop() {
			k.alarm.armed = false
		}
		if k.stall.t != nil && k.stall.t.Stop() {
			k.stall.armed = false
		}
		if k.cpuTimer != nil && k.cpuTimer.Stop() {
			k.cpuTimer = nil
			k.bg-- // the sampler will not run again
		}
		if k.sh != nil && k.sh.Budget != nil {
			if k.sh.renew != nil {
				k.sh.renew.Stop()
			}
			go k.leave() // once every slot is back: see leave
		}
		k.cancel()
	}
	k.drainedLocked()
	k.unlockDo(&fx)
	select {
	case <-k.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
