package wardpool

import (
	"context"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// A decision is what decideLocked made of the pool's answer for one taker.
type decision[T comparable] struct {
	kind  pool.Kind     // Ready, Make, Wait, Later, Shed or Closed; never Stale
	loan  Loan[T]       // Ready: the loan, begun
	check bool          // Ready: Config.Check is due before the caller has it
	delay time.Duration // Later: how long to hold back; Wait: when to ask again (a full backend, a hold), or 0
	err   error         // Shed and Closed: the taker's error
	gen   uint32        // Make: the reservation's generation, for Made
}

// decideLocked asks the pool for one taker at now and does what the answer
// asks under the lock, the same for every taker (Acquire, TryAcquire, a
// queued caller, AcquireAllIdle): this is the one place where a Taken turns
// into an action. A Stale resource is queued for closing and the pool asked
// again; Ready begins a loan recorded with the taker's stack st; Shed and
// Closed become the taker's error. Make (a reservation to dial for), Wait
// and Later are left to the taker, whose ways of waiting differ. With
// idleOnly, the pool is asked only while it has something idle (Wait
// otherwise), so no reservation is opened. class is the taker's class
// (Config.Classes; the default class without them).
//
// The decision is written into *s, field by field, and the loan into
// s.loan by lendLocked, rather than returned: a decision (and a Loan) is
// too big to live in registers, and Go returned it in registers only to
// store them to the stack and copy them on with 16-byte moves, each of
// which then waits for the narrower stores it reads (a failed store
// forwarding, seen as the hottest instructions of decideLocked in a CPU
// profile). On BenchmarkUncontended with a clock that never moves (the
// Keeper without its clock reads) that took the median of 8 rounds from
// 161 to 140 ns per Acquire+Release, though callgrind counts 24 more
// instructions. Every acquire test covers it (keeper_acquire_test.go,
// keeper_waiters_test.go for the queued callers of serve.go).
func (k *Keeper[T]) decideLocked(now time.Time, st *stack, idleOnly bool, class int, s *decision[T]) {
	*s = decision[T]{}
	for {
		if idleOnly && k.p.Books().Idle == 0 {
			s.kind = pool.Wait
			return
		}
		if k.shedder && k.cpuTimer == nil {
			k.wakeCPULocked()
		}
		var t pool.Taken[T]
		if k.pool != nil { // nothing records: see machine.go
			t = k.pool.TakeAs(now, k.roll(), k.cpuNow(), class)
		} else {
			t = k.p.TakeAs(now, k.roll(), k.cpuNow(), class)
		}
		s.kind = t.Kind
		switch t.Kind {
		case pool.Stale:
			k.closeLocked(t.Item)
			continue
		case pool.Ready:
			k.lendLocked(t.Seat, t.Item, now, st, &s.loan)
			s.check = k.due(t.Idle)
		case pool.Later:
			s.delay = t.Delay
		case pool.Shed:
			s.err = k.shedErrorLocked(t, now)
		case pool.Closed:
			s.err = ErrClosed
		default: // Make, Wait
			s.gen, s.delay = t.Gen, t.Delay
		}
		return
	}
}

// due reports whether a resource the pool lends after it sat idle for idle
// is checked first (Config.Check, Config.CheckIdle).
func (k *Keeper[T]) due(idle time.Duration) bool {
	return k.check != nil && (k.checkIdle < 0 || idle > k.checkIdle)
}

// lendLocked records a new loan of the resource at seat, lent at now, in l.
func (k *Keeper[T]) lendLocked(seat int32, item T, now time.Time, st *stack, l *Loan[T]) {
	e := k.ents[seat]
	if e.lw != nil {
		e.lw.lent(st, now)
		k.armLocked(now, now.Add(k.leakAfter))
	} else if e.site != nil {
		e.site.copyFrom(st)
	}
	l.e, l.item, l.gen, l.at = e, item, e.loan.Load(), int64(now.Sub(k.epoch))
}

// shedErrorLocked builds the error of a Shed answer.
func (k *Keeper[T]) shedErrorLocked(t pool.Taken[T], now time.Time) error {
	e := &ShedError{Pool: k.name, Guard: t.Guard}
	if t.Guard == ward.GuardBreaker {
		e.Ratio = k.p.Refusal(now)
		e.Cause = k.stats.lastDial
	}
	return e
}

// Acquire lends a resource, waiting for one if every resource is out: in
// strict arrival order, until one is handed to it or ctx ends. When ctx
// ends first it returns an *AcquireError that unwraps to ctx.Err() and says
// what the pool was doing (ctx.Err() itself when ctx had ended before the
// call); when Config.AcquireTimeout runs out first, one that unwraps to
// ErrAcquireTimeout; ErrClosed after Close; a *ShedError when the ward
// refuses; and Dial's error when the dial made for this caller fails,
// unless the backend refused it for want of room (a Full verdict) while
// other resources are live: then the caller waits for one to come back.
//
// A resource found past its age is closed and another taken; one that fails
// Config.Check is dropped and replaced; the caller sees neither, and neither
// is closed on its time (see Config.Close).
//
// In steady state (a resource idle and fresh) Acquire allocates nothing.
func (k *Keeper[T]) Acquire(ctx context.Context) (Loan[T], error) {
	if k.classIx != nil {
		return k.acquireClassed(ctx) // classq.go
	}
	if k.leakAfter > 0 || k.stallSites {
		return k.acquireWatched(ctx, 0)
	}
	return k.acquire(ctx, nil, 0)
}

// acquireWatched is Acquire with the leak watch on, or the stall watch's
// call sites: the caller's stack, or its call site, is recorded first.
func (k *Keeper[T]) acquireWatched(ctx context.Context, class int) (Loan[T], error) {
	skip := 2 // past acquireWatched and Acquire: the caller
	if k.classIx != nil {
		skip++ // and acquireClassed
	}
	var st stack // stays on this goroutine's stack: the loan copies it
	if k.leakAfter > 0 {
		st.capture(skip)
	} else {
		st.captureSite(skip)
	}
	return k.acquire(ctx, &st, class)
}

// acquire is Acquire; st is the caller's stack, with the leak watch on,
// and class the caller's class (0 without classes).
//
// While others wait, a new caller joins the back of the queue and the pool
// is asked for those ahead of it first, in order (serveLocked): whether it
// waits is the pool's answer to the caller at the front, not a rule of the
// Keeper's. A caller whose grant fell through (a failed check) asks again
// at the front.
func (k *Keeper[T]) acquire(ctx context.Context, st *stack, class int) (Loan[T], error) {
	if err := k.enter(ctx); err != nil {
		return Loan[T]{}, err
	}
	start := k.now()
	now := start
	front := false  // this caller was served once: it asks at the front
	waited := false // it had to wait or dial: counted in EmptyAcquires
	for tries := 0; ; tries++ {
		if tries > 0 {
			now = k.now()
			if k.acqTimeout > 0 && !now.Before(start.Add(k.acqTimeout)) {
				return Loan[T]{}, k.timeout(start)
			}
		}
		var fx effects[T]
		var w *waiter[T]
		k.mu.Lock()
		if k.q.live > 0 && !front {
			w = k.attachLocked(ctx, start, st, class)
			k.q.push(w)
			k.stallWaitLocked(now)
			k.serveLocked(now, &fx)
			if err := k.admitLocked(ctx, now, w, false); err != nil {
				k.unlockDo(&fx)
				k.recycle(w)
				return Loan[T]{}, err
			}
		} else {
			var s decision[T]
			k.decideLocked(now, st, false, class, &s)
			switch s.kind {
			case pool.Ready:
				if k.warms() {
					k.topUpLocked(now, &fx)
				}
				if !s.check && !waited {
					k.stats.acquired++ // final already: counted under the lock
				}
				k.unlockDo(&fx)
				if s.check {
					if ok, err := k.checkLoan(ctx, s.loan); !ok {
						if err != nil {
							return Loan[T]{}, k.giveUp(err, start)
						}
						continue
					}
				}
				if s.check || waited {
					k.counted(start, s.loan, waited)
				}
				return s.loan, nil
			case pool.Make:
				w = k.attachLocked(ctx, start, st, class)
				k.startDialLocked(w)
				fx.dials = append(fx.dials, dialJob[T]{w: w, ticket: w.ticket, ctx: ctx, gen: s.gen, class: class})
			case pool.Wait:
				w = k.attachLocked(ctx, start, st, class)
				if front {
					k.q.pushFront(w)
				} else {
					k.q.push(w)
				}
				k.stallWaitLocked(now)
				k.waitLocked(now, s)
				if err := k.admitLocked(ctx, now, w, front); err != nil {
					k.unlockDo(&fx)
					k.recycle(w)
					return Loan[T]{}, err
				}
			case pool.Later:
				k.mu.Unlock()
				waited = true
				d := s.delay
				if k.acqTimeout > 0 {
					d = min(d, start.Add(k.acqTimeout).Sub(now)) // the next try gives up
				}
				if err := k.sleep(ctx, d); err != nil {
					k.countCanceled()
					return Loan[T]{}, k.giveUp(err, start)
				}
				continue
			default: // Shed, Closed
				k.mu.Unlock()
				return Loan[T]{}, s.err
			}
		}
		k.unlockDo(&fx)
		waited = true
		l, again, err := k.await(ctx, w)
		if !again {
			return l, err
		}
		front = true
	}
}

// admitLocked asks the pool, with Config.Admission on, whether w, queued
// at the back, can be served before its deadline, the earlier of its
// context's and Config.AcquireTimeout's (see Pool.Admit); when it cannot,
// w leaves the queue and the caller gets a *LateError at once. A caller
// asking again at the front (front), or one already served, is not asked
// about.
func (k *Keeper[T]) admitLocked(ctx context.Context, now time.Time, w *waiter[T], front bool) error {
	if !k.admission || front || !w.queued {
		return nil
	}
	within, bound := time.Duration(0), false
	if dl, ok := ctx.Deadline(); ok {
		within, bound = time.Until(dl), true // the context's deadline is on the wall clock
	}
	if k.acqTimeout > 0 {
		if left := w.start.Add(k.acqTimeout).Sub(now); !bound || left < within {
			within, bound = left, true // the timeout is on the Keeper's clock
		}
	}
	if !bound || within <= 0 {
		return nil // no deadline, or past it already: await returns its error
	}
	wait, ok := k.p.Admit(now, k.q.live-1, within)
	if ok {
		return nil
	}
	k.q.remove(w)
	w.attached = false
	w.ticket++
	k.stats.late++
	return &LateError{Pool: k.name, Predicted: wait, Within: within, Ahead: k.q.live}
}

// enter begins an acquire: ctx's error (counted as canceled) when it has
// ended already.
func (k *Keeper[T]) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		k.countCanceled()
		return err
	}
	return nil
}

// timeout is timeoutLocked, taking the lock.
func (k *Keeper[T]) timeout(start time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.timeoutLocked(start)
}

func (k *Keeper[T]) countCanceled() {
	k.mu.Lock()
	k.stats.canceled++
	k.mu.Unlock()
}

// counted records a successful acquire that began at start and ended with
// the loan l: once, when it is final. waited says it found nothing ready.
func (k *Keeper[T]) counted(start time.Time, l Loan[T], waited bool) {
	k.tally.acquired.Add(1)
	if waited {
		k.tally.empty.Add(1)
	}
	if w := l.at - int64(start.Sub(k.epoch)); w > 0 {
		k.tally.waitNs.Add(int64(w))
	}
}

// TryAcquire lends a resource only if one is ready now, with the same checks
// as Acquire, and never waits for a return. Otherwise it returns
// ErrWouldWait, and, if there is room, starts a dial in the background whose
// resource joins the pool (or goes to a waiter) when it is ready: a later
// TryAcquire may find it. It returns ErrClosed after Close and a *ShedError
// when the ward refuses. While callers wait, the pool is asked for them
// first: TryAcquire lends only what is left once they are served.
func (k *Keeper[T]) TryAcquire(ctx context.Context) (Loan[T], error) {
	if err := k.enter(ctx); err != nil {
		return Loan[T]{}, err
	}
	class := 0
	if k.classIx != nil {
		var err error
		if class, err = k.classOf(ctx); err != nil {
			return Loan[T]{}, err
		}
	}
	var st *stack
	var rec stack
	if k.leakAfter > 0 {
		rec.capture(1) // past TryAcquire: the caller
		st = &rec
	} else if k.stallSites {
		rec.captureSite(1)
		st = &rec
	}
	for {
		now := k.now()
		var fx effects[T]
		k.mu.Lock()
		if k.q.live > 0 {
			k.serveLocked(now, &fx)
			if k.q.ahead(class) > 0 {
				k.unlockDo(&fx)
				return Loan[T]{}, ErrWouldWait
			}
		}
		var s decision[T]
		k.decideLocked(now, st, false, class, &s)
		switch s.kind {
		case pool.Ready:
			if k.warms() {
				k.topUpLocked(now, &fx)
			}
			if !s.check {
				k.stats.acquired++ // final already: counted under the lock
			}
			k.unlockDo(&fx)
			if s.check {
				if ok, err := k.checkLoan(ctx, s.loan); !ok {
					if err != nil {
						return Loan[T]{}, err
					}
					continue
				}
				k.counted(now, s.loan, false)
			}
			if k.classIx != nil {
				k.classCounted(class, 0) // classq.go
			}
			return s.loan, nil
		case pool.Make:
			k.startDialLocked(nil)
			fx.dials = append(fx.dials, dialJob[T]{ctx: ctx, gen: s.gen, class: class})
			k.unlockDo(&fx)
			return Loan[T]{}, ErrWouldWait
		case pool.Wait, pool.Later:
			k.unlockDo(&fx)
			return Loan[T]{}, ErrWouldWait
		default: // Shed, Closed
			k.unlockDo(&fx)
			return Loan[T]{}, s.err
		}
	}
}

// AcquireFunc acquires a resource, calls f with it, and releases it when f
// returns, or destroys it when f panics (and panics on). It returns
// Acquire's error, or f's.
func (k *Keeper[T]) AcquireFunc(ctx context.Context, f func(T) error) error {
	l, err := k.Acquire(ctx)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			l.Destroy()
		}
	}()
	err = f(l.Value())
	done = true
	l.Release()
	return err
}

// AcquireAllIdle lends every idle resource at once, without Check, and
// returns the loans (nil when none is idle): for a caller that wants to work
// on each idle resource in turn, such as a keep-alive ping. It does not wait.
// The callers waiting are served first: it lends only what is idle once
// they are.
func (k *Keeper[T]) AcquireAllIdle(ctx context.Context) []Loan[T] {
	if ctx.Err() != nil {
		return nil
	}
	var loans []Loan[T]
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	if k.q.live > 0 {
		k.serveLocked(now, &fx)
	}
	for k.q.live == 0 {
		var s decision[T]
		k.decideLocked(now, nil, true, k.defClass, &s)
		if s.kind != pool.Ready {
			break
		}
		loans = append(loans, s.loan)
		k.stats.acquired++
	}
	k.unlockDo(&fx)
	return loans
}
