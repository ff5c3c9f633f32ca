package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/ward/shared"
)

// Shared holds the guards a Keeper shares with the other replicas of its
// service through a store (package ward/shared): they do I/O, so the Keeper
// asks them outside its lock, on the dialing goroutine, each round trip
// bounded by the guard's own store timeout. Both are optional; the zero
// Shared changes nothing.
//
// Before each dial the Keeper asks, in order:
//
//  0. Dials.Take, when set: one round trip; over the rate, the dial fails
//     with ErrSharedRate (see Dials).
//  1. Breaker.Allow. A refusal fails the dial at once, without dialing,
//     with an error wrapping ErrSharedOpen (counted as a failed dial, so
//     the ward's own backoff and breaker see it too). After the dial, its
//     outcome is reported (Fail, or Pass for the probe). A closed breaker
//     costs one round trip per dial and none per loan.
//  2. Budget.Lease. A refusal means the fleet's budget is spent: the
//     reservation is given back without counting a failure, and the caller
//     goes back to the front of the queue and waits as when the pool is
//     full, in order, bounded by its ctx (counted in SharedStats.BudgetWaits).
//     A connection given back by a loan is handed to it as usual; besides,
//     the Keeper asks the budget again every RetryEvery while callers wait
//     on it.
//
// Every resource whose dial was granted a slot gives it back (Budget.Return)
// when it is closed, on the closing goroutine, or at once when its dial
// fails. A loan that reuses an idle resource asks nothing.
//
// A goroutine of the Keeper renews the budget every Budget.RenewEvery (every
// 100ms while it holds more than its share, to hear soon that others ask),
// and then gives back what the budget says it owes (slots borrowed beyond its
// share while another replica waits): it closes that many idle resources,
// and the rest as their loans end (closed instead of kept or handed on:
// while it owes, releases skip the lane and take the locked path).
// A lease refused with a debt in its answer marks the debt the same way at
// once, so a borrower with callers of its own gives back within RetryEvery
// of the first loan that ends. At Close the Keeper leaves the fleet
// (Budget.Leave) once its resources are closed, waiting at most a second
// for them.
//
// A budget's refusal gives back the pool's Make reservation through a step
// the pool's Recorder does not write down yet (withdraw): a Keeper with both
// Config.Recorder and a Budget records what it does, but the recording does
// not replay once a lease was refused.
type Shared struct {
	Budget  *shared.Budget
	Breaker *shared.Breaker
	// Dials is a fleet-wide rate on dials (a shared two-window counter):
	// a dial over it fails at once with an error wrapping ErrSharedRate,
	// counted as a failed dial, so the ward's backoff spaces the next.
	Dials *shared.Counter
	// RetryEvery is how often callers waiting on a spent budget ask it
	// again; zero means 20ms.
	RetryEvery time.Duration
}

// ErrSharedOpen is the error of an acquire whose dial the shared breaker
// refused: the backend is failing for the fleet.
var ErrSharedOpen = errors.New("wardpool: shared breaker open")

// ErrSharedRate is the error of an acquire whose dial the fleet's shared
// rate on dials refused.
var ErrSharedRate = errors.New("wardpool: shared dial rate spent")

// errBudgetSpent is what a dial refused by the budget returns to runDial,
// which waits instead of failing.
var errBudgetSpent = errors.New("wardpool: the fleet's budget is spent")

// SharedStats is the Keeper's view of its shared guards.
type SharedStats struct {
	// BudgetWaits counts dials the budget refused; each one's caller, if
	// any, went back to wait as for a full pool.
	BudgetWaits uint64
	// BreakerRefused counts dials the shared breaker refused, and
	// RateRefused those the shared rate on dials refused.
	BreakerRefused, RateRefused uint64
	// Dials counts the shared rate's round trips, store errors and local
	// fallbacks.
	Dials shared.Stats
	// Budget is the budget's own view (share, held, fallbacks, store
	// errors); zero without a budget.
	Budget shared.BudgetStats
	// Breaker counts the breaker's round trips, store errors and local
	// fallbacks, and BreakerState is the state it last saw.
	Breaker      shared.Stats
	BreakerState shared.State
}

// sharedRun is a Keeper's running Shared.
type sharedRun struct {
	Shared
	wake        chan struct{} // a caller waits on the budget: retry soon
	budgetWaits atomic.Uint64
	refused     atomic.Uint64
	rateRefused atomic.Uint64
	// blocked is until when (Unix ns) the budget is known spent: dials
	// until then wait without asking it, so that a queue of callers costs
	// one round trip per RetryEvery, not one per release.
	blocked atomic.Int64
	// owe is how many resources to close as their loans end rather than
	// keep, to give back slots borrowed beyond the share.
	owe atomic.Int64
}

// owing reports whether the Keeper owes the fleet slots: releases then take
// the locked path, where oweLocked closes what is owed. No lock needed.
func (k *Keeper[T]) owing() bool { return k.sh != nil && k.sh.owe.Load() > 0 }

// oweLocked reports whether the resource of a loan ending now is to be
// closed to give its slot back to the fleet, and counts it if so. k.mu
// must be held.
func (k *Keeper[T]) oweLocked() bool {
	if k.sh == nil || k.closed {
		return false
	}
	for {
		n := k.sh.owe.Load()
		if n <= 0 {
			return false
		}
		if k.sh.owe.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// startShared wraps the Keeper's dial and close with the shared guards and
// starts the goroutine that renews the budget. It runs in NewKeeper, before
// any dial.
func (k *Keeper[T]) startShared(s Shared) {
	if s.Budget == nil && s.Breaker == nil && s.Dials == nil {
		return
	}
	if s.RetryEvery <= 0 {
		s.RetryEvery = 20 * time.Millisecond
	}
	sh := &sharedRun{Shared: s, wake: make(chan struct{}, 1)}
	k.sh = sh
	dial, closeFn := k.dial, k.close
	k.dial = func(ctx context.Context) (v T, err error) {
		if sh.Dials != nil {
			if ok, _ := sh.Dials.Take(ctx, k.clock.Now()); !ok {
				sh.rateRefused.Add(1)
				return v, ErrSharedRate
			}
		}
		var call shared.Call
		if sh.Breaker != nil {
			var ok bool
			call, ok, _ = sh.Breaker.Allow(ctx, k.clock.Now())
			if !ok {
				sh.refused.Add(1)
				return v, ErrSharedOpen
			}
		}
		if sh.Budget != nil {
			if time.Now().UnixNano() < sh.blocked.Load() {
				return v, errBudgetSpent
			}
			if ok, _ := sh.Budget.Lease(ctx); !ok {
				sh.blocked.Store(time.Now().Add(sh.RetryEvery).UnixNano())
				if owed := int64(sh.Budget.Owed()); owed > sh.owe.Load() {
					// Others wait below their share while this replica
					// holds more: close as many as loans end.
					sh.owe.Store(owed)
				}
				return v, errBudgetSpent
			}
		}
		dialed := false
		defer func() {
			if dialed && err == nil {
				if call.Probe {
					_ = call.Pass(ctx)
				}
				return
			}
			// The dial failed or panicked: its slot goes back at once.
			if sh.Budget != nil {
				_ = sh.Budget.Return(context.WithoutCancel(ctx))
			}
			_ = call.Fail(context.WithoutCancel(ctx), k.clock.Now())
		}()
		v, err = dial(ctx)
		dialed = true
		return v, err
	}
	if sh.Budget != nil {
		k.close = func(v T) error {
			err := closeFn(v)
			_ = sh.Budget.Return(context.Background())
			return err
		}
		k.bg++ // the renewer; ended by Close
		go k.renewer()
	}
}

// budgetSpentLocked settles a dial the budget refused: the reservation goes
// back uncounted, and its caller, if still waiting for it, goes back to the
// front of the queue; the renewer asks the budget again soon.
func (k *Keeper[T]) budgetSpentLocked(j dialJob[T], owner bool, now time.Time, fx *effects[T]) {
	k.p.withdraw(now)
	k.sh.budgetWaits.Add(1)
	if owner && !k.closed {
		k.q.pushFront(j.w) // the lane stays shut while anyone is queued
		select {
		case k.sh.wake <- struct{}{}:
		default:
		}
		return
	}
	if owner {
		k.grantLocked(j.w, grant[T]{err: ErrClosed})
	}
	k.serveLocked(now, fx)
	k.armRetryLocked(now)
}

// withdraw gives back a Make reservation that will not be dialed (the
// fleet's budget refused it) without counting a failure: nothing failed.
func (p *Pool[T]) withdraw(now time.Time) {
	if p.making == 0 {
		return
	}
	p.making--
	p.unlease(p.clock(now))
}

// borrowerRenew is how often a Keeper holding more than its share renews,
// so that it learns within that long that another replica waits.
const borrowerRenew = 100 * time.Millisecond

// renewer renews the budget every RenewEvery (every borrowerRenew while it
// holds more than its share) and gives back what it owes,
// retries the waiting callers every RetryEvery while some wait on the
// budget, and leaves the fleet at Close.
func (k *Keeper[T]) renewer() {
	sh := k.sh
	every := sh.Budget.RenewEvery()
	tick := time.NewTicker(min(every, borrowerRenew))
	defer tick.Stop()
	_ = sh.Budget.Renew(k.ctx)
	last := time.Now()
	var retry <-chan time.Time
	for {
		select {
		case <-k.ctx.Done():
			k.leave()
			return
		case <-tick.C:
			// A borrower renews often, to hear soon that others ask.
			if st := sh.Budget.Stats(); time.Since(last) < every && st.Held <= st.Share {
				continue
			}
			_ = sh.Budget.Renew(k.ctx)
			last = time.Now()
			k.giveBack()
		case <-sh.wake:
			if retry == nil {
				retry = time.After(sh.RetryEvery)
			}
		case <-retry:
			retry = nil
			var fx effects[T]
			k.lock()
			k.serveLocked(k.clock.Now(), &fx)
			k.unlockDo(&fx)
		}
	}
}

// giveBack closes as many idle resources as the budget says are owed, and
// marks the rest to be closed as their loans end.
func (k *Keeper[T]) giveBack() {
	owed := k.sh.Budget.Owed()
	if owed > 0 {
		for _, l := range k.AcquireAllIdle(k.ctx) {
			if owed > 0 {
				owed--
				l.Destroy()
			} else {
				l.Release()
			}
		}
	}
	k.sh.owe.Store(int64(owed))
}

// leave waits (up to a second) for the closes Close started to give their
// slots back, then leaves the fleet, and ends the renewer.
func (k *Keeper[T]) leave() {
	for range 100 {
		if k.sh.Budget.Held() == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = k.sh.Budget.Leave(context.Background())
	k.mu.Lock()
	k.bg--
	k.drainedLocked()
	k.mu.Unlock()
}

// SharedStats returns the Keeper's view of its shared guards; the zero
// SharedStats without them.
func (k *Keeper[T]) SharedStats() SharedStats {
	if k.sh == nil {
		return SharedStats{}
	}
	s := SharedStats{BudgetWaits: k.sh.budgetWaits.Load(), BreakerRefused: k.sh.refused.Load(), RateRefused: k.sh.rateRefused.Load()}
	if k.sh.Dials != nil {
		s.Dials = k.sh.Dials.Stats()
	}
	if k.sh.Budget != nil {
		s.Budget = k.sh.Budget.Stats()
	}
	if k.sh.Breaker != nil {
		s.Breaker, s.BreakerState = k.sh.Breaker.Stats(), k.sh.Breaker.Seen()
	}
	return s
}
