package wardpool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// errZeroDial is the error of a dial that returned the zero T and no error.
var errZeroDial = errors.New("wardpool: Dial returned the zero value and no error")

// dialJob is a dial to start: for waiter w under ticket, or in the
// background (MinIdle, TryAcquire) when w is nil. ctx, when set, lends the
// dial its values, not its cancellation.
type dialJob[T comparable] struct {
	w      *waiter[T]
	ticket uint64
	ctx    context.Context
	gen    uint32 // the reservation's generation (Taken.Gen), for Made
	class  int    // the class the reservation was opened for (Config.Classes)
}

// startDialLocked counts a dial about to start, for a caller or, with a nil
// w, in the background.
func (k *Keeper[T]) startDialLocked(w *waiter[T]) {
	k.stats.dialing++
	k.bg++
	if w == nil {
		k.stats.warming++
		return
	}
	if k.check == nil || k.checkIdle >= 0 {
		k.dialers = append(k.dialers, slot[T]{w: w, ticket: w.ticket})
	}
}

// runDial dials for j and settles the reservation with what came of it.
func (k *Keeper[T]) runDial(j dialJob[T]) {
	parent := k.ctx
	if j.ctx != nil {
		parent = context.WithoutCancel(j.ctx)
	}
	ctx, cancel := context.WithCancel(parent)
	if k.dialTimeout > 0 {
		ctx, cancel = context.WithTimeout(parent, k.dialTimeout)
	}
	stop := context.AfterFunc(k.ctx, cancel)
	v, err := k.safeDial(ctx)
	timedOut := err != nil && ctx.Err() == context.DeadlineExceeded
	stop()
	cancel()

	var fx effects[T]
	var unseen error
	now := k.now()
	k.mu.Lock()
	k.stats.dialing--
	if j.w == nil {
		k.stats.warming--
	}
	owner := j.w != nil && j.w.attached && j.w.ticket == j.ticket
	var zero T
	jitter := k.drawJitter()
	switch {
	case err == nil && v == zero:
		err = errZeroDial
		fallthrough
	case err == nil && k.p.SeatOf(v) >= 0:
		if err == nil {
			// Dial handed back a resource the pool already holds: a bug in
			// Dial. Lending it again would lend one handle twice.
			err = errors.New("wardpool: Dial returned a resource already in the pool")
		}
		fallthrough
	case err != nil:
		refused := errors.Is(err, ErrSharedOpen) || errors.Is(err, ErrSharedRate)
		wait := false
		switch v, _ := k.verdict(err); {
		case refused:
			// A shared guard refused the dial before it was made: the
			// pool counts a refusal, and its own breaker and backoff hear
			// nothing (the fleet's breaker speaks for the backend).
			k.p.UnmadeAs(now, 0, ward.GuardShared, j.class)
		case v == Full:
			// The backend has no room for another: the Pool decides
			// whether the caller waits for a return instead.
			wait = k.p.UnmadeAs(now, k.roll(), ward.GuardFull, j.class)
		default:
			// During a hold after a failover, the Pool has the caller
			// wait for the next dial.
			wait = k.p.UnmadeAs(now, k.roll(), ward.GuardNone, j.class)
		}
		if timedOut {
			k.stats.dialTimeouts++
			err = fmt.Errorf("wardpool: dial timed out after %v: %w", k.dialTimeout, err)
		}
		if k.closed {
			err = ErrClosed // the dial was cancelled by Close
		}
		if !refused {
			k.stats.lastDial, k.stats.lastDialAt = err, now
		}
		switch {
		case owner && wait && !k.closed:
			// Back to the front of the queue, where it was: the next
			// resource to come back, or the next make, is its (a full
			// backend, or a hold after a failover).
			k.q.pushFront(j.w)
			k.stallWaitLocked(now)
			unseen = err
		case owner:
			k.grantLocked(j.w, grant[T]{err: err})
		default:
			unseen = err // nobody will see it: log it, after unlocking
		}
		k.serveLocked(now, &fx)
		k.armRetryLocked(now)
	case !k.p.MadeAs(v, j.gen, j.class, now, jitter):
		// Closed while dialing.
		k.closeLocked(v)
		if owner {
			k.grantLocked(j.w, grant[T]{err: ErrClosed})
		}
	default:
		seat := k.p.SeatOf(v)
		k.growLocked(seat)
		e := k.ents[seat]
		e.item = v
		if owner {
			w := j.w
			var l Loan[T]
			k.lendLocked(seat, v, now, w.stack, &l)
			k.grantLocked(w, grant[T]{loan: l})
		} else {
			// Nobody is waiting for this one now: hand it on like a return.
			if !k.p.Give(v, now) {
				k.closeLocked(v)
			}
			k.serveLocked(now, &fx)
			k.topUpLocked(now, &fx)
			k.armIdleLocked(now)
		}
	}
	k.bgDoneLocked()
	k.unlockDo(&fx)
	if unseen != nil {
		k.log.Debug("wardpool: dial failed", "err", unseen)
	}
}

// growLocked makes room in ents for seat, and every seat below it.
func (k *Keeper[T]) growLocked(seat int32) {
	if int(seat) < len(k.ents) {
		return
	}
	for i := len(k.ents); i <= int(seat); i++ {
		e := &entry[T]{k: k, seat: int32(i)}
		if k.leakAfter > 0 {
			e.lw = new(leakRec[T])
		} else if k.stallSites {
			e.site = new(stack)
		}
		k.ents = append(k.ents, e)
	}
}

func (k *Keeper[T]) drawJitter() time.Duration {
	if k.jitter <= 0 {
		return 0
	}
	return time.Duration(k.rand() * float64(k.jitter))
}

func (k *Keeper[T]) safeDial(ctx context.Context) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("Dial", r)
			err = fmt.Errorf("wardpool: Dial panicked: %v", r)
		}
	}()
	return k.dial(ctx)
}

// warms reports whether the Keeper keeps resources warm at all.
func (k *Keeper[T]) warms() bool { return k.minIdle > 0 || k.minLive > 0 }

// shortLocked reports whether the pool holds fewer than MinIdle idle
// resources (counting warming dials) or fewer than MinLive live ones
// (counting every dial: a reservation is live).
func (k *Keeper[T]) shortLocked() bool {
	b := k.p.Books()
	return b.Idle+k.stats.warming < k.minIdle || b.Live < k.minLive
}

// topUpLocked starts background dials until idle and warming resources
// reach MinIdle and live ones MinLive, as far as the pool lets it, at most
// warmDials at once.
func (k *Keeper[T]) topUpLocked(now time.Time, fx *effects[T]) {
	for k.shortLocked() && !k.closed {
		if k.stats.warming >= warmDials {
			return // a dial that ends tops up again (armRetryLocked)
		}
		r := k.p.Reserve(now, k.roll(), k.cpuNow())
		if r.Kind != pool.Make {
			k.armRetryLocked(now)
			return
		}
		k.startDialLocked(nil)
		fx.dials = append(fx.dials, dialJob[T]{gen: r.Gen, class: k.defClass})
	}
}

// armRetryLocked sets the timer for when MinIdle or MinLive can be topped
// up again, if either is short.
func (k *Keeper[T]) armRetryLocked(now time.Time) {
	if !k.shortLocked() || k.closed {
		return
	}
	at := now.Add(time.Second)
	if until, ok := k.p.HeldUntil(); ok && until.Before(at) {
		at = until
	}
	k.armLocked(now, at)
}
