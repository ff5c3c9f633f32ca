package wardpool

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// The Keeper is spread over files by job:
//
//	keeper.go   the type, its effects (what a decision leaves to do), closing
//	config.go   Config and NewKeeper
//	errors.go   the errors it returns
//	acquire.go  Acquire, TryAcquire, AcquireFunc, AcquireAllIdle, and decide:
//	            the one place a Taken becomes an action
//	serve.go    handing resources to queued callers, Check
//	loan.go     Loan: Release, Destroy, Hijack
//	lane.go     the lock-free lane: executing the pool's Ready answers
//	dial.go     dials, for callers and for MinIdle
//	timer.go    the one timer: eviction, retries, the leak watch, the sweep
//	stats.go    Stats and Loans
//	close.go    Reset and Close
//
// The lock contract: every method whose name ends in Locked runs with k.mu
// held and returns with it held; nothing that ends in Locked releases the
// mutex. Every path that asks or changes the pool takes the mutex with lock
// and lets it go with unlock (lane.go), which shut and reopen the lane; the
// few that only count or queue may use k.mu directly.

// counters are the runtime's own figures, guarded by Keeper.mu.
type counters struct {
	acquired                      uint64 // acquires final under the lock
	canceled                      uint64
	checkFailures, leaks, doubles uint64
	panics, dialTimeouts          uint64
	closed                        uint64
	resets                        resetBook
}

// Keeper is a resource pool ready to use: it holds a Pool behind one mutex,
// dials and closes resources outside that mutex, queues callers in strict
// arrival order when every resource is out, hands a returned resource straight
// to the oldest waiter, and runs one timer for eviction, MinIdle and the leak
// watch. Every decision (which resource to lend, whether it is fresh, whether
// to dial, wait or refuse) is the Pool's. While nobody waits, a release and
// the acquire after it may pass through a lock-free lane that carries out the
// Pool's answer without the mutex (see lane.go).
//
// A Keeper is safe for concurrent use. Build one with NewKeeper and end it
// with Close.
type Keeper[T comparable] struct {
	dial        func(context.Context) (T, error)
	close       func(T) error
	closers     int
	dialTimeout time.Duration
	check       func(context.Context, T) error
	checkIdle   time.Duration
	reuse       func(context.Context, T) error
	classify    Classifier
	minIdle     int
	jitter      time.Duration
	leakAfter   time.Duration
	onLeak      func(Leak[T])
	log         *slog.Logger
	name        string // Config.Name, resolved
	clock       Clock
	cached      *cachedClock // the default clock, when in use
	rand        func() float64
	cpuRead     func() int
	base        time.Time     // the origin of the Keeper's nanoseconds (ns)
	baseMono    int64         // base on the cached clock's scale, with the default clock
	needRoll    bool          // the ward has a breaker or a backoff
	shedder     bool          // the ward has a shedder
	laneOn      bool          // the lane may be used (see lane.go)
	sweep       time.Duration // how often the timer folds the lane; 0: never needed
	sh          *sharedRun    // the shared guards, if any (keeper_shared.go)

	cpu    atomic.Int64       // latest CPU reading, thousandths
	ctx    context.Context    // ends at Close: dials watch it
	cancel context.CancelFunc // ends ctx
	spare  sync.Pool          // recycled *waiter[T]

	// Keep the mutex, written by every locked Acquire and Release, off the
	// cache line of the fields above, which every caller reads without it.
	_ [64]byte

	// The lane (see lane.go), on lines of its own; while it is shut, the
	// slot holds the head of the inbox of returns (inbox.go).
	slot    atomic.Uint64
	_       [56]byte
	laneGen atomic.Uint32 // the pool's generation, as the lane reads it
	// table is ents as the lane reads it, without the lock: replaced,
	// never changed in place, when a seat is added.
	table atomic.Pointer[[]*entry[T]]
	// limits is the pool's limits, as the lane reads them without the
	// lock: replaced, never changed in place, under mu (SetLimits).
	limits atomic.Pointer[pool.Limits]

	// Acquires and their total wait, counted once an acquire is final (its
	// caller has the loan, checked): atomics, so that a waiter handed a
	// resource counts itself without taking the lock again. The lane counts
	// its own (see lane.go).
	acquired atomic.Uint64
	empty    atomic.Uint64 // of them, those that had to wait or dial
	waitNs   atomic.Int64
	checks   atomic.Uint64 // Config.Check calls

	mu         sync.Mutex // guards every field below
	p          *pool.Pool[T]
	ents       []*entry[T] // by seat
	q          waiters[T]
	dialing    int // dials in flight
	warming    int // of which for MinIdle (no caller waiting)
	closed     bool
	bg         int           // timer callbacks, dials and closers still running
	drained    chan struct{} // closed once closed, nothing busy, no bg work
	timer      Timer         // the one timer: eviction, retries, leaks, MinIdle
	timerAt    time.Time     // when timer fires, if armed
	armed      bool
	retry      bool // waiters were held back by a Later: the timer serves them
	cpuTimer   Timer
	stats      counters
	epoch      uint32    // bumped by every unlock: the empty slot's epoch
	sweepArmed bool      // the timer will fold the lane: it may open
	laneTakes  uint64    // loans the lane made, as counted at the last fold
	relent     uint64    // of them, those reported to the pool (Relent)
	closing    []T       // resources waiting to be closed, oldest first
	gen        uint32    // Resets so far: the generation of what is made now
	ceiling    int       // the ceiling last set on the pool (SetCeiling); -1: none
	closerN    int       // closer goroutines running
	closingNow int       // closes running now
	lastDial   error     // the last dial error, for Stats and errors
	lastDialAt time.Time // when it came
}

// entry is the Keeper's record of one of the pool's seats, kept beside it.
// Entries are allocated once per seat and never move, so a loan and the
// lane can point at one.
//
// Its fields are ordered to pack: 64 bytes with a pointer-sized T, the
// 64-byte size class (a Keeper's memory per resource is mostly this and
// the Pool's seat). A Loan points at its entry, and the entry at its
// Keeper: a Loan is small, and it is copied at every call.
type entry[T comparable] struct {
	k    *Keeper[T]
	item T     // the resource in the seat; set under the lock when made
	seat int32 // its index

	gen  atomic.Uint32 // the pool's generation of the resource; set under the lock when made, read by the lane
	loan atomic.Uint32 // the generation of the seat's current (or next) loan

	// next is, in the inbox, the seat plus one of the return below it
	// (inbox.go); 0 for none. Only seats that fit the slot's seat bits go
	// to the inbox. It is written before the compare-and-swap that pushes
	// the entry, and read after the swap that drains it.
	next uint16

	// relends is how many loans the lane made of this resource that the
	// pool has not yet heard of (see Pool.Relent). Only the loan's holder
	// touches it: the lane when it lends, the lock when the holder comes
	// back through it.
	relends int16

	born atomic.Int64 // when it is born for Life, in ns (jitter included); set when made
	at   atomic.Int64 // when the current loan began, in ns
	// back is when its last loan ended, in ns: when it was parked in the
	// slot, or pushed on the inbox. It is written before the compare-and-
	// swap that parks or pushes it, and read after a load that saw it.
	back atomic.Int64

	lw *leakRec[T] // with LeakAfter only (leak.go); nil otherwise
}

// Limits returns the pool's limits.
func (k *Keeper[T]) Limits() pool.Limits { return *k.limits.Load() }

// now reads the Keeper's clock; the default clock is called directly, which
// lets the compiler inline it on the hot paths.
func (k *Keeper[T]) now() time.Time {
	if k.cached != nil {
		return k.cached.Now()
	}
	return k.clock.Now()
}

// ns is now on the Keeper's scale: nanoseconds since base.
func (k *Keeper[T]) ns(now time.Time) int64 { return int64(now.Sub(k.base)) }

// at is the instant of t nanoseconds on the Keeper's scale.
func (k *Keeper[T]) at(t int64) time.Time { return k.base.Add(time.Duration(t)) }

// nanos reads the Keeper's clock on its own scale; with the default clock
// that is one load, no time.Time to build and subtract.
func (k *Keeper[T]) nanos() int64 {
	if k.cached != nil {
		return k.cached.mono.Load() - k.baseMono
	}
	return k.ns(k.clock.Now())
}

// roll draws for the ward, only when it has a guard that reads the draw.
func (k *Keeper[T]) roll() float64 {
	if k.needRoll {
		return k.rand()
	}
	return 0
}

// cpuNow is the latest CPU reading, only when the ward has a shedder.
func (k *Keeper[T]) cpuNow() int {
	if k.shedder {
		return int(k.cpu.Load())
	}
	return 0
}

// effects is what a decision under the lock leaves to do after it: dials to
// start and leaks to report. The zero value is empty and costs nothing; its
// slices are allocated only when something is to be done. Resources to
// close go straight to the closers' queue (closeLocked). Grants to waiters
// are sent under the lock (see grantLocked).
type effects[T comparable] struct {
	dials []dialJob[T]
	leaks []leakNote[T]
}

// pending reports whether fx has anything to do.
func (fx *effects[T]) pending() bool { return fx.dials != nil || fx.leaks != nil }

// do carries out fx, outside the lock.
func (k *Keeper[T]) do(fx *effects[T]) {
	for _, j := range fx.dials {
		go k.runDial(j)
	}
	for _, l := range fx.leaks {
		k.report(l)
	}
}

// unlockDo unlocks and carries out fx.
func (k *Keeper[T]) unlockDo(fx *effects[T]) {
	k.unlock()
	if fx.pending() {
		k.do(fx)
	}
}

// closeLocked queues v to be closed by a closer, starting one if fewer than
// Closers run. A caller never closes: a Close that hangs must not hold it.
func (k *Keeper[T]) closeLocked(v T) {
	if k.sh != nil {
		k.slotGoneLocked()
	}
	k.closing = append(k.closing, v)
	if k.closerN < k.closers && k.closerN < len(k.closing) {
		k.closerN++
		k.bg++
		go k.closer()
	}
}

// closeAllLocked queues every resource of vs to be closed.
func (k *Keeper[T]) closeAllLocked(vs []T) {
	for _, v := range vs {
		k.closeLocked(v)
	}
}

// closer closes queued resources, oldest first, until none is left.
func (k *Keeper[T]) closer() {
	k.mu.Lock()
	for len(k.closing) > 0 {
		v := k.closing[0]
		var zero T
		k.closing[0] = zero
		k.closing = k.closing[1:]
		if len(k.closing) == 0 {
			k.closing = nil // let the backing array go
		}
		k.closingNow++
		k.unlockMu()
		k.closeOne(v)
		k.mu.Lock()
		k.closingNow--
		k.stats.closed++
	}
	k.closerN--
	k.bg--
	k.drainedLocked()
	k.unlockMu()
}

// closeOne closes v, recovering from a panic in Config.Close.
func (k *Keeper[T]) closeOne(v T) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("Close", r)
		}
	}()
	if err := k.close(v); err != nil {
		k.log.Debug("wardpool: closing a resource failed", "err", err)
	}
}

func (k *Keeper[T]) countPanic(what string, r any) {
	k.mu.Lock()
	k.stats.panics++
	k.unlockMu()
	k.log.Error("wardpool: "+what+" panicked", "panic", r)
}

// drainedLocked closes drained once the Keeper is closed and nothing is out.
func (k *Keeper[T]) drainedLocked() {
	if !k.closed || k.p.Busy() > 0 || k.bg > 0 {
		return
	}
	select {
	case <-k.drained:
	default:
		close(k.drained)
	}
}

// settledLocked follows a resource's coming back to the pool (or its room
// freed): waiters are served, MinIdle topped up, the timer set for the next
// expiry, and a closed Keeper told when the last loan is home.
func (k *Keeper[T]) settledLocked(now time.Time, fx *effects[T]) {
	if k.q.live > 0 {
		k.serveLocked(now, fx)
	}
	if k.limits.Load().Life > 0 || (!k.armed && k.limits.Load().Keep > 0) {
		k.armIdleLocked(now)
	}
	if k.closed {
		k.drainedLocked()
	}
}

// Name returns the pool's name (Config.Name, or the default given it).
func (k *Keeper[T]) Name() string { return k.name }
