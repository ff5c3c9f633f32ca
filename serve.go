package wardpool

import (
	"context"
	"fmt"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// serveLocked asks the pool on behalf of the waiters, oldest first, for as
// long as it has something for them: it is called whenever something came
// back or room was freed. Waiters whose context has ended are skipped and
// told so (nothing is handed to a caller who cannot use it).
func (k *Keeper[T]) serveLocked(now time.Time, fx *effects[T]) {
	defer k.serveDialersLocked(now)
	if k.q.by != nil {
		k.serveClassesLocked(now, fx) // classq.go
		return
	}
	for k.q.live > 0 {
		w := k.q.peek()
		if err := w.ctx.Err(); err != nil {
			k.q.pop()
			k.stats.canceled++
			k.grantLocked(w, grant[T]{err: err})
			continue
		}
		if !k.serveFrontLocked(now, w, fx) {
			return
		}
	}
}

// serveFrontLocked asks the pool for w, the front of its queue (of its
// class's, with classes), and carries out the answer: w leaves the queue
// with a loan, a dial made for it, or its error. It reports false when
// the pool has nothing for w now (Wait, or Later with the timer armed):
// serving stops there.
func (k *Keeper[T]) serveFrontLocked(now time.Time, w *waiter[T], fx *effects[T]) bool {
	var s decision[T]
	k.decideLocked(now, w.stack, false, w.class, &s)
	switch s.kind {
	case pool.Ready:
		k.q.unqueue(w)
		k.grantLocked(w, grant[T]{loan: s.loan, check: s.check})
	case pool.Make:
		k.q.unqueue(w)
		k.startDialLocked(w)
		fx.dials = append(fx.dials, dialJob[T]{w: w, ticket: w.ticket, ctx: w.ctx, gen: s.gen, class: w.class})
	case pool.Wait:
		k.waitLocked(now, s)
		return false
	case pool.Later:
		k.alarm.retry = true
		k.armLocked(now, now.Add(s.delay))
		return false
	default: // Shed, Closed
		k.q.unqueue(w)
		k.grantLocked(w, grant[T]{err: s.err})
	}
	return true
}

// waitLocked carries out a Wait answer's Delay, when it has one (a full
// backend, a hold after a failover): the timer asks for the waiters again
// then, whether or not a resource comes back first.
func (k *Keeper[T]) waitLocked(now time.Time, s decision[T]) {
	if s.delay > 0 {
		k.alarm.retry = true
		k.armLocked(now, now.Add(s.delay))
	}
}

// serveDialersLocked hands an idle resource, when the queue is empty, to
// a caller whose own dial is still in flight, oldest first: whatever frees
// first serves it, and its dial's resource joins the idle ones when it
// lands (runDial, owner gone). The pool is asked as for any caller, with
// idle resources only (no reservation is opened for a caller dialing
// already), and decides which resource, or that none may be lent.
//
// Not when every loan is checked first (Config.CheckIdle < 0): a caller
// handed a resource whose check fails asks again, and its own dial would
// still be in flight behind it; it waits for its dial instead.
func (k *Keeper[T]) serveDialersLocked(now time.Time) {
	if k.check != nil && k.checkIdle < 0 {
		k.dialers = nil // none is served so: none is kept
		return
	}
	for k.q.live == 0 && len(k.dialers) > 0 {
		d := k.dialers[0]
		if !d.w.attached || d.w.ticket != d.ticket || d.w.queued || d.w.ctx.Err() != nil {
			k.dialers = k.dialers[1:] // served by its dial, or gone
			continue
		}
		var s decision[T]
		k.decideLocked(now, d.w.stack, true, d.w.class, &s)
		if s.kind != pool.Ready {
			return
		}
		k.dialers = k.dialers[1:]
		k.grantLocked(d.w, grant[T]{loan: s.loan, check: s.check})
	}
	if len(k.dialers) == 0 {
		k.dialers = nil
	}
}

// attachLocked readies a recycled waiter for ctx, of class, under a new
// ticket.
func (k *Keeper[T]) attachLocked(ctx context.Context, start time.Time, st *stack, class int) *waiter[T] {
	w := k.spare.Get().(*waiter[T])
	w.ctx, w.start, w.class = ctx, start, class
	if st != nil {
		if w.stack == nil {
			w.stack = new(stack) // once per waiter, which is recycled
		}
		*w.stack = *st
	}
	w.ticket++
	w.attached = true
	if k.acqTimeout > 0 {
		k.armTimeoutLocked(w, start.Add(k.acqTimeout))
	}
	return w
}

// grantLocked detaches w and sends it g. w must be attached and not queued.
// The send never blocks (the channel has room for the one grant) and is
// made under the lock: measured against sending after unlocking, it keeps a
// saturated queue (every op a handoff) about a third faster here, as the
// woken waiter is readied before the releaser can come back for the lock.
func (k *Keeper[T]) grantLocked(w *waiter[T], g grant[T]) {
	w.attached = false
	w.ticket++
	w.ch <- g
}

// await waits for w's grant or ctx's end. again reports that the grant fell
// through (a failed check) and the caller should ask again at the front.
func (k *Keeper[T]) await(ctx context.Context, w *waiter[T]) (l Loan[T], again bool, err error) {
	var g grant[T]
	done := ctx.Done()
	if done == nil {
		// A context that never ends: a plain receive is cheaper than a select.
		g = <-w.ch
		goto granted
	}
	select {
	case g = <-w.ch:
	case <-done:
		k.mu.Lock()
		if w.attached {
			// Still waiting: leave, and nobody will send.
			err := k.giveUpLocked(ctx.Err(), w.start)
			if w.queued {
				k.q.remove(w)
			}
			w.attached = false
			w.ticket++
			k.stats.canceled++
			k.mu.Unlock()
			k.recycle(w)
			return Loan[T]{}, false, err
		}
		k.mu.Unlock()
		// A grant raced the cancellation and is in the channel: pass a
		// resource on rather than lose it.
		start := w.start
		g = <-w.ch
		k.recycle(w)
		if g.err != nil {
			return Loan[T]{}, false, g.err
		}
		k.countCanceled()
		g.loan.Release() // to the next waiter, or idle
		return Loan[T]{}, false, k.giveUp(ctx.Err(), start)
	}
granted:
	start := w.start
	k.recycle(w)
	if g.err != nil {
		return Loan[T]{}, false, g.err
	}
	if g.check {
		ok, err := k.checkLoan(ctx, g.loan)
		if !ok {
			if err != nil {
				return Loan[T]{}, false, k.giveUp(err, start)
			}
			return Loan[T]{}, true, nil
		}
	}
	k.counted(start, g.loan, true)
	return g.loan, false, nil
}

// giveUpLocked builds the error of an acquire that began at start and whose
// context ended with err: err, with what the pool was doing (AcquireError).
func (k *Keeper[T]) giveUpLocked(err error, start time.Time) error {
	now := k.now()
	e := &AcquireError{
		Pool:    k.name,
		Err:     err,
		Waited:  now.Sub(start),
		Size:    k.limits.Size,
		Busy:    k.p.Books().Busy,
		Waiting: k.q.live,
		Ceiling: k.ceiling,
	}
	k.budgetStoreLocked(e)
	if k.stats.lastDial != nil {
		e.LastDialError, e.LastDialAgo = k.stats.lastDial, now.Sub(k.stats.lastDialAt)
	}
	if until, ok := k.p.HeldUntil(); ok && until.After(now) {
		e.HeldBack = until.Sub(now)
	}
	if k.leakAfter > 0 {
		e.Leaked = k.leakedLocked(now)
	}
	return e
}

// giveUp is giveUpLocked, taking the lock.
func (k *Keeper[T]) giveUp(err error, start time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.giveUpLocked(err, start)
}

// recycle returns a detached waiter to the spare pool.
func (k *Keeper[T]) recycle(w *waiter[T]) {
	w.ctx = nil
	if w.timer != nil {
		w.timer.Stop()
		w.deadline = time.Time{}
	}
	if w.stack != nil {
		w.stack.n = 0
	}
	k.spare.Put(w)
}

// checkLoan runs Config.Check on a freshly lent l. ok false means the
// resource was bad and is gone: err is nil (ask again) or ctx.Err() (give
// up). A check that failed while ctx ended may have been cut short, and
// may have left the resource broken (a connection closed mid-ping): the
// caller gives up at once, and the check runs again in the background, on a
// context of its own, to decide whether the resource is kept.
func (k *Keeper[T]) checkLoan(ctx context.Context, l Loan[T]) (ok bool, err error) {
	cerr := k.safeCheck(ctx, l.item)
	k.tally.checks.Add(1) // an atomic: a check that passes takes no lock
	if cerr == nil {
		return true, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		k.mu.Lock()
		k.stats.canceled++
		k.bg++
		k.mu.Unlock()
		go k.recheck(l)
		return false, ctxErr
	}
	k.mu.Lock()
	k.stats.checkFailures++
	k.mu.Unlock()
	l.Destroy()
	return false, nil
}

// recheck checks again, in the background, the resource of a loan whose
// check its caller cut short, and gives it back if it passes or destroys it.
func (k *Keeper[T]) recheck(l Loan[T]) {
	ctx, cancel := context.WithTimeout(k.ctx, max(k.checkIdle, time.Second))
	err := k.safeCheck(ctx, l.item)
	cancel()
	k.tally.checks.Add(1)
	if err == nil {
		l.Release()
	} else {
		k.mu.Lock()
		k.stats.checkFailures++
		k.mu.Unlock()
		l.Destroy()
	}
	k.mu.Lock()
	k.bgDoneLocked()
	k.mu.Unlock()
}

func (k *Keeper[T]) safeCheck(ctx context.Context, v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("Check", r)
			err = fmt.Errorf("wardpool: Check panicked: %v", r)
		}
	}()
	return k.check(ctx, v)
}
