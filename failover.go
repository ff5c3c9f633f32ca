package wardpool

import (
	"maps"
	"strconv"
)

// Verdict is what an error a resource failed with says about it: reuse
// it, destroy it alone, or retire every resource made with it (Reset). The
// drivers' classifiers give one for each error (see Classifier).
type Verdict uint8

const (
	// Reuse: the error is the caller's or the query's (a syntax error, a
	// constraint, a missing key); the resource is fine and goes back to
	// the pool to be lent again. The driver's own rules still apply: a
	// connection its client has closed is destroyed.
	Reuse Verdict = iota
	// Destroy: this resource is broken; the others may be fine.
	Destroy
	// Reset: every resource made so far is wrong now (the backend it was
	// opened to failed over and turned read-only, or is shutting down):
	// the Keeper's generation is retired, idle resources at once and lent
	// ones as they come back, and new ones are dialled (see Loan.Reset).
	Reset
	// Full: the backend refused a new resource for want of room
	// (PostgreSQL's 53300 too_many_connections; Redis's "max number of
	// clients reached"). It is about a dial's error: the Keeper tells its
	// Pool (ward.GuardFull), which decides that the caller the dial was
	// for waits for a resource to come back while others are lent,
	// instead of failing (see pool.Pool.Unmade). Keeper.Classify, which
	// judges the errors of operations on a lent resource, reads it as
	// Destroy.
	Full
)

// String returns "reuse", "destroy", "reset" or "full".
func (v Verdict) String() string {
	switch v {
	case Reuse:
		return "reuse"
	case Destroy:
		return "destroy"
	case Reset:
		return "reset"
	case Full:
		return "full"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Classifier says what err, returned by an operation on a resource or by
// Config.Dial, means: a Verdict and a short cause that names the reason
// in Stats.ResetCauses, the metrics and the log ("25006", "READONLY");
// the cause matters only for Reset. Of a dial's error only Full is acted
// on. It must be safe for concurrent use and quick: it runs on the
// goroutine of the caller that got the error. It is never called with a
// nil error. See Keeper.Classify for what happens when it panics or
// answers a Verdict it should not.
type Classifier func(err error) (Verdict, string)

// Reset causes the Keeper names itself.
const (
	// CauseManual is the cause Keeper.Reset is counted under.
	CauseManual = "manual"
	// CauseRotate is the cause Keeper.Rotate is counted under.
	CauseRotate = "rotate"
	// CauseOther is the cause resets are counted under once MaxCauses
	// distinct causes have been counted, and the cause of a Reset verdict
	// that names none.
	CauseOther = "other"
	// CausePanic is the cause Keeper.Classify answers when the classifier
	// panicked.
	CausePanic = "panic"
	// MaxCauses bounds how many distinct causes Stats.ResetCauses holds,
	// CauseOther included, so
	// that a classifier that names each reset after its error's text cannot
	// grow the books and the metrics' series without bound.
	MaxCauses = 16
)

// resetBook counts resets by cause. Guarded by Keeper.mu.
type resetBook struct {
	n  uint64
	by map[string]uint64 // nil until the first reset
}

// add counts one reset under cause, or under CauseOther once MaxCauses
// causes are known, and returns the cause it was counted under.
func (b *resetBook) add(cause string) string {
	if cause == "" {
		cause = CauseOther
	}
	if b.by == nil {
		b.by = make(map[string]uint64)
	}
	if _, ok := b.by[cause]; !ok && len(b.by) >= MaxCauses-1 { // room for CauseOther
		cause = CauseOther
	}
	b.n++
	b.by[cause]++
	return cause
}

// read returns the count and a copy of the causes; nil when none.
func (b *resetBook) read() (uint64, map[string]uint64) {
	if b.by == nil {
		return 0, nil
	}
	return b.n, maps.Clone(b.by)
}

// Classify runs Config.Classify on err and returns its verdict and cause;
// Reuse and "" for a nil error or without a classifier. It is what drivers
// call on the errors of the operations they run on a lent resource, and
// it is safe for concurrent use.
//
// Bad answers do not take the pool down. A classifier that panics is
// recovered: the panic is counted in Stats.Panics and logged at error
// level, and the answer is Reuse with cause CausePanic, so the resource is
// kept unless the driver's own rules find it broken (a connection its
// client closed is destroyed all the same). Full, a verdict about dials,
// is read as Destroy here; a verdict other than Reuse, Destroy, Reset and
// Full is read as Reuse. A classifier that answers Reset for
// every error still leaves the pool serving: a Reset retires a generation
// once (see Loan.Reset), and what is dialled after it serves until it
// fails in turn.
func (k *Keeper[T]) Classify(err error) (v Verdict, cause string) {
	if v, cause = k.verdict(err); v == Full {
		return Destroy, cause
	}
	return v, cause
}

// verdict is Classify without reading Full as Destroy: the dials ask it.
func (k *Keeper[T]) verdict(err error) (v Verdict, cause string) {
	if err == nil || k.classify == nil {
		return Reuse, ""
	}
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("Classify", r)
			v, cause = Reuse, CausePanic
		}
	}()
	v, cause = k.classify(err)
	if v > Full {
		return Reuse, cause
	}
	return v, cause
}

// Reset ends the loan on the word of its resource, which failed with err
// in a way that condemns every resource made with it (a Reset verdict): if
// the resource is of the Keeper's current generation, the Keeper is reset
// as Keeper.Reset does (idle resources closed now, lent ones as they come
// back, new ones dialled for the callers waiting), the reset is counted
// under cause in Stats.ResetCauses and logged once at warning level with
// err; the resource itself is closed either way. It reports whether it
// reset.
//
// With Config.Hold set, the Pool then holds the callers that come while it
// looks for the backend's new node (see pool.Hold): they wait, within
// their contexts and the hold, while one dial at a time tries, instead of
// each dialing a node that is down or read-only and failing.
//
// The generation is the resource's, not the moment's: when every
// connection of a pool fails with the same error after a failover, the
// first one to come back resets, and the others, retired by that reset
// already, reset nothing, so the connections dialled since (to the new
// primary) are kept. The decision is the Pool's (Pool.ResetFor). On a
// loan that has ended already it does nothing and reports false (a double
// release).
func (l Loan[T]) Reset(cause string, err error) bool {
	if l.e == nil {
		return false
	}
	k := l.e.k
	if !l.end() {
		return false
	}
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	k.endedLocked(l.e, l.item, now, &fx)
	retired, ok := k.p.ResetFor(l.item, now, k.hold)
	if ok {
		cause = k.retireLocked(retired, cause)
	}
	if !k.p.Give(l.item, now) { // of an old generation now: retired
		k.closeLocked(l.item)
	}
	k.settledLocked(now, &fx)
	k.unlockDo(&fx)
	if ok {
		k.log.Warn("wardpool: reset: every resource made before is retired",
			"pool", k.name, "cause", cause, "idle_closed", len(retired), "err", err)
	}
	return ok
}

// retireLocked carries out a reset the Pool made, whose idle resources
// are retired: they are closed, what is made from now on is of the next
// generation, and the reset is counted under cause, whose name as counted
// it returns.
func (k *Keeper[T]) retireLocked(retired []T, cause string) string {
	k.closeAllLocked(retired)
	return k.stats.resets.add(cause)
}

// ReuseAll is a Classifier that reuses the resource whatever the error:
// it turns a driver's default classifier off.
func ReuseAll(error) (Verdict, string) { return Reuse, "" }
