package wardpool

import "time"

// Config.AcquireTimeout: a waiter that is still waiting at its deadline is
// taken out of the queue (or let go by the dial it waited on) and granted
// ErrAcquireTimeout, as Close grants ErrClosed. Each waiter has its own
// timer on the Keeper's clock, made at its first timed wait and reset at
// each after, so a timed wait allocates nothing in steady state. What it
// costs is a Reset and a Stop of that timer a wait: on a saturated Size 1
// (two goroutines, nearly every acquire a wait) 100 to 300 ns an op on
// 700 to 1,500 here, measured on a busy machine. One timer for the queue's
// front (deadlines follow arrival order) would cost less, at the price of
// a second mechanism for callers waiting on a dial.

// armTimeoutLocked sets w's timer for its deadline at.
func (k *Keeper[T]) armTimeoutLocked(w *waiter[T], at time.Time) {
	w.deadline = at
	d := max(at.Sub(k.now()), time.Nanosecond)
	if w.timer == nil {
		w.timer = k.clock.AfterFunc(d, func() { k.timedOut(w) })
		return
	}
	w.timer.Reset(d)
}

// timedOut is a waiter's timer: it ends w's wait with ErrAcquireTimeout if
// w is still waiting and its deadline has come. A timer that fired for an
// earlier wait of the recycled waiter finds it served, or waiting with a
// later deadline, and does nothing.
func (k *Keeper[T]) timedOut(w *waiter[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if !w.attached || w.deadline.IsZero() || now.Before(w.deadline) {
		return
	}
	if w.queued {
		k.q.remove(w)
	}
	k.grantLocked(w, grant[T]{err: k.timeoutLocked(w.start)})
}

// timeoutLocked counts an acquire that began at start and that
// Config.AcquireTimeout ended, and returns its error.
func (k *Keeper[T]) timeoutLocked(start time.Time) error {
	k.stats.canceled++
	k.stats.acquireTimeouts++
	return k.giveUpLocked(ErrAcquireTimeout, start)
}
