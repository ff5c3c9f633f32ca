package wardpool

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/ward/shared"
)

// Shared holds the guards a Keeper shares with the other replicas of its
// service through a store (package ward/shared): they do I/O, so the Keeper
// asks them outside its lock, each round trip bounded by the guard's own
// store timeout. All are optional; the zero Shared changes nothing.
//
// The budget is a ceiling the pool holds itself to (Pool.SetCeiling): the
// pool may have as many resources live as the slots this replica leased,
// less those on their way back. So the pool, not the runtime, decides: a
// Take at the ceiling answers Wait, and the caller waits in order, bounded
// by its ctx, exactly as when the pool is full. While callers wait at the
// ceiling (or MinIdle is short of it), one goroutine of the Keeper leases a
// slot at a time from the budget, raising the ceiling by one for each, and
// asks again every RetryEvery while the budget is spent (counted in
// SharedStats.BudgetWaits). A resource leaving the pool lowers the ceiling
// at once and gives its slot back (Budget.Return) once it is closed, on the
// closing goroutine. A loan that reuses an idle resource asks nothing.
//
// While the budget's store does not answer, the budget keeps this
// replica's safe share (see shared.Budget): the ceiling follows it, an
// acquire that gives up at it says so (AcquireError.BudgetStoreErr), and
// the outage is logged once when it begins and once when it ends, through
// Config.Logger unless the budget has a Logger of its own.
//
// A timer on the Keeper's Clock renews the budget every Budget.RenewEvery
// (every 100ms while it holds more than its share, to hear soon that others
// ask; a lease that makes it a borrower brings the next renewal forward).
// When the budget says this replica owes slots (borrowed beyond its share
// while another replica waits), the ceiling drops by that much: the pool
// retires idle resources over it at once (SetCeiling), and busy ones as they come
// back (a Give above the ceiling retires). At Close the Keeper leaves the
// fleet (Budget.Leave) once its resources are closed, waiting at most a
// second for them.
//
// Before each dial the Keeper asks, in order, Dials.Take (a fleet-wide rate
// on dials; over it the dial fails with ErrSharedRate) and Breaker.Allow (a
// refusal fails the dial, without dialing, with ErrSharedOpen; the dial's
// outcome is reported after). Either refusal gives the pool's reservation
// back as a refusal (Pool.Unreserve: counted in Books.Shed), not as a failed
// dial: the ward's own breaker and backoff do not hear of it, so one outage
// does not trip the shared breaker and the local one both. A closed breaker
// costs one round trip per dial and none per loan.
type Shared struct {
	Budget  *shared.Budget
	Breaker *shared.Breaker
	// Dials is a fleet-wide rate on dials (a shared two-window counter):
	// a dial over it fails at once with an error wrapping ErrSharedRate,
	// counted as a refusal (Books.Shed), not as a failed dial.
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

// SharedStats is the Keeper's view of its shared guards.
type SharedStats struct {
	// BudgetWaits counts leases the budget refused while callers waited at
	// the pool's ceiling (or MinIdle was short of it).
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
	budgetWaits atomic.Uint64
	refused     atomic.Uint64
	rateRefused atomic.Uint64

	// Guarded by Keeper.mu: the slots leased from the budget and held, of
	// them those whose resource is being closed (given back once closed),
	// and those the budget says this replica owes. The pool's ceiling is
	// leased - transit - owe.
	leased, transit, owe int
	leasing              bool      // the leaser is running
	renew                Timer     // the budget's next renewal; nil until the first has run
	renewAt              time.Time // when renew fires
	renewing             bool      // a renewal is running
}

// ceilingLocked sets the pool's ceiling from the slots held.
func (k *Keeper[T]) ceilingLocked() {
	sh := k.sh
	k.setCeilingLocked(max(sh.leased-sh.transit-sh.owe, 0))
}

// slotGoneLocked follows a resource's leaving the pool (to be closed, or
// hijacked): its slot is on its way back to the budget, and counts toward
// a debt.
func (k *Keeper[T]) slotGoneLocked() {
	sh := k.sh
	if sh == nil || sh.Budget == nil {
		return
	}
	sh.transit++
	if sh.owe > 0 {
		sh.owe--
	}
	k.ceilingLocked()
}

// slotBack gives the slot of a resource that left the pool back to the
// budget, outside the lock, and settles it.
func (k *Keeper[T]) slotBack() {
	sh := k.sh
	_ = sh.Budget.Return(context.Background())
	k.mu.Lock()
	sh.leased--
	sh.transit--
	k.ceilingLocked() // unchanged: both fell by one
	k.mu.Unlock()
}

// sharedLocked starts the leaser when callers wait at the ceiling, or
// MinIdle is short because of it. Called by unlockDo.
func (k *Keeper[T]) sharedLocked() {
	sh := k.sh
	if sh.Budget == nil || sh.leasing || k.closed || !k.wantSlotLocked() {
		return
	}
	sh.leasing = true
	k.bg++
	go k.leaser()
}

// wantSlotLocked reports whether another slot would let the pool serve
// someone: callers wait, or MinIdle is short, and the ceiling (not Size) is
// what holds the pool back.
func (k *Keeper[T]) wantSlotLocked() bool {
	if k.q.live == 0 && !k.shortLocked() {
		return false
	}
	c := k.ceiling
	return c >= 0 && k.p.Books().Live >= c && (k.limits.Size == 0 || c < k.limits.Size) && k.sh.owe == 0
}

// leaser leases slots one at a time while they are wanted, raising the
// ceiling for each; a spent budget is asked again every RetryEvery.
func (k *Keeper[T]) leaser() {
	sh := k.sh
	defer func() {
		k.mu.Lock()
		sh.leasing = false
		k.bgDoneLocked()
		k.mu.Unlock()
	}()
	for {
		k.mu.Lock()
		want := !k.closed && k.wantSlotLocked()
		k.mu.Unlock()
		if !want {
			return
		}
		if ok, _ := sh.Budget.Lease(k.ctx); !ok {
			sh.budgetWaits.Add(1)
			if k.sleep(k.ctx, sh.RetryEvery) != nil {
				return
			}
			continue
		}
		var fx effects[T]
		now := k.now()
		k.mu.Lock()
		if k.closed {
			// Closed while the lease was asked: the slot goes straight back.
			k.mu.Unlock()
			_ = sh.Budget.Return(context.Background())
			return
		}
		sh.leased++
		k.ceilingLocked()
		k.borrowingLocked(now)
		k.serveLocked(now, &fx)
		k.topUpLocked(now, &fx)
		k.unlockDo(&fx)
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
	sh := &sharedRun{Shared: s}
	k.sh = sh
	dial, closeFn := k.dial, k.close
	k.dial = func(ctx context.Context) (v T, err error) {
		if sh.Dials != nil {
			if ok, _ := sh.Dials.Take(ctx, k.now()); !ok {
				sh.rateRefused.Add(1)
				return v, ErrSharedRate
			}
		}
		var call shared.Call
		if sh.Breaker != nil {
			var ok bool
			call, ok, _ = sh.Breaker.Allow(ctx, k.now())
			if !ok {
				sh.refused.Add(1)
				return v, ErrSharedOpen
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
			// The dial failed or panicked: the breaker hears of it. (A
			// budget's slot stays leased: the pool's reservation is given
			// back with Unmade, and the next dial uses it.)
			_ = call.Fail(context.WithoutCancel(ctx), k.now())
		}()
		v, err = dial(ctx)
		dialed = true
		return v, err
	}
	if sh.Budget != nil {
		sh.Budget.UseLogger(k.log)
		k.close = func(v T) error {
			defer k.slotBack()
			return closeFn(v)
		}
		k.setCeilingLocked(0) // nothing leased yet
		go k.renew()          // the first renewal, at once; it arms the next
	}
}

// borrowerRenew is how often a Keeper holding more than its share renews,
// so that it learns within that long that another replica waits.
const borrowerRenew = 100 * time.Millisecond

// leaveWait is the longest Close's leaving the fleet waits for the slots of
// the resources it closes to come back.
const leaveWait = time.Second

// renew renews the budget (a store round trip, on the timer's goroutine),
// gives back what it owes, and arms the next renewal on the Keeper's clock:
// in RenewEvery, or in borrowerRenew while the replica holds more than its
// share (and sooner when a lease makes it a borrower: see borrowingLocked).
// It is a timer armed for something due (the lease would lapse without
// it), not a tick, and Close stops it.
func (k *Keeper[T]) renew() {
	sh := k.sh
	k.mu.Lock()
	if k.closed || sh.renewing {
		k.mu.Unlock()
		return
	}
	sh.renewing = true
	k.bg++
	k.mu.Unlock()
	_ = sh.Budget.Renew(k.ctx)
	k.giveBack()
	every := sh.Budget.RenewEvery()
	if st := sh.Budget.Stats(); st.Held > st.Share {
		every = min(every, borrowerRenew)
	}
	now := k.now()
	k.mu.Lock()
	sh.renewing = false
	if !k.closed {
		sh.renewAt = now.Add(every)
		if sh.renew == nil {
			sh.renew = k.clock.AfterFunc(every, k.renew)
		} else {
			sh.renew.Reset(every)
		}
	}
	k.bgDoneLocked()
	k.mu.Unlock()
}

// borrowingLocked brings the next renewal forward to borrowerRenew from now
// once a lease has made this replica hold more than its share: a borrower
// renews often, to hear soon that others ask, and gives back what it owes.
func (k *Keeper[T]) borrowingLocked(now time.Time) {
	sh := k.sh
	if sh.renew == nil || sh.renewing || k.closed || !sh.renewAt.After(now.Add(borrowerRenew)) {
		return
	}
	if st := sh.Budget.Stats(); st.Held <= st.Share {
		return
	}
	sh.renewAt = now.Add(borrowerRenew)
	sh.renew.Reset(borrowerRenew)
}

// giveBack lowers the ceiling by what the budget says is owed: the pool
// retires idle resources over it now, and busy ones as they come back.
func (k *Keeper[T]) giveBack() {
	owed := k.sh.Budget.Owed()
	k.mu.Lock()
	// What is on its way back already pays part of the debt; each resource
	// Trim retires pays one more (slotGoneLocked).
	k.sh.owe = max(owed-k.sh.transit, 0)
	k.ceilingLocked()
	k.mu.Unlock()
}

// leave leaves the fleet once the Keeper is quiet (closed, every loan home,
// every close done, so every slot given back), or after leaveWait on the
// Keeper's clock if it is not by then; Close returns once both the Keeper
// is quiet and the fleet is left.
func (k *Keeper[T]) leave() {
	gone := make(chan struct{})
	t := k.clock.AfterFunc(leaveWait, func() { close(gone) })
	select {
	case <-k.quiet:
		t.Stop()
	case <-gone:
	}
	_ = k.sh.Budget.Leave(context.Background())
	<-k.quiet // loans still out: Close waits for them, as without a budget
	close(k.drained)
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

// budgetStoreLocked names, in the error of an acquire that gave up, the
// outage of the budget's store under way, if any: the ceiling is then the
// replica's safe share.
func (k *Keeper[T]) budgetStoreLocked(e *AcquireError) {
	if k.sh == nil || k.sh.Budget == nil {
		return
	}
	if out, down := k.sh.Budget.Outage(); down {
		e.BudgetStoreErr, e.BudgetStoreDown = out.Err, out.For
	}
}

// setCeilingLocked sets the pool's ceiling to n, keeps a note of it, and
// closes the idle resources the pool retires above it.
func (k *Keeper[T]) setCeilingLocked(n int) {
	k.ceiling = max(n, -1)
	k.closeAllLocked(k.p.SetCeiling(n, k.now()))
}
