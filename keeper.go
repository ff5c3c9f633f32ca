package wardpool

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
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
//	dial.go     dials, for callers and for MinIdle
//	timer.go    the one timer: eviction, retries, the leak watch
//	stats.go    Stats and Loans
//	close.go    Reset and Close
//
// One path: every loan, return, dial landing and timer run is one call into
// the Pool under k.mu, and the Keeper carries out what the Pool answered.
// The lock contract: every method whose name ends in Locked runs with k.mu
// held and returns with it held.

// counters are the runtime's own figures, guarded by Keeper.mu.
type counters struct {
	acquired             uint64 // acquires final under the lock
	canceled             uint64
	late                 uint64 // acquires refused by admission (LateError)
	checkFailures, leaks uint64
	panics, dialTimeouts uint64
	stalls               uint64 // stalls reported (stall.go)
	acquireTimeouts      uint64 // acquires Config.AcquireTimeout ended (in canceled too)
	closed               uint64
	resets               resetBook
	dialing, warming     int       // dials in flight; of them, for MinIdle (no caller waiting)
	lastDial             error     // the last dial error, for Stats and errors
	lastDialAt           time.Time // when it came
}

// settings are the Keeper's Config, resolved once by NewKeeper and read
// without the lock ever after.
type settings[T comparable] struct {
	dial        func(context.Context) (T, error)
	close       func(T) error
	closers     int
	dialTimeout time.Duration
	acqTimeout  time.Duration // Config.AcquireTimeout; 0: none
	check       func(context.Context, T) error
	checkIdle   time.Duration
	admission   bool
	reuse       func(context.Context, T) error
	classify    Classifier
	minIdle     int       // Config.MinIdle
	minLive     int       // Config.MinLive
	hold        pool.Hold // Config.Hold
	jitter      time.Duration
	leakAfter   time.Duration
	stallAfter  time.Duration // Config.StallAfter, resolved; 0: off
	stallSites  bool          // Config.StallSites, with the stall watch on and the leak watch off
	onLeak      func(Leak[T])
	log         *slog.Logger
	name        string // Config.Name, resolved
	clock       Clock
	sys         *systemClock // clock, when it is the default one (see now)
	epoch       time.Time    // the clock's first reading: Loan.at counts from it
	rand        func() float64
	cpuRead     func() int
	needRoll    bool // the ward has a breaker or a backoff
	shedder     bool // the ward has a shedder

	// Config.Classes (classq.go): the classes, each name's index, the
	// names with "" for the default class last, and the default class's
	// index (len(classes)); nil, nil, nil and 0 without classes.
	classes    []pool.Class
	classIx    map[string]int
	classNames []string
	defClass   int
	// classTallies are each class's acquires and wait (classq.go).
	classTallies []classTally
}

// tally is what callers count without the lock once an acquire is final
// (its caller has the loan, checked), so that a waiter handed a resource
// counts itself without taking the lock again.
type tally struct {
	acquired atomic.Uint64
	empty    atomic.Uint64 // of them, those that had to wait or dial
	waitNs   atomic.Int64
	checks   atomic.Uint64 // Config.Check calls
	doubles  atomic.Uint64 // Release, Destroy or Hijack of an ended loan
	cpu      atomic.Int64  // latest CPU reading, thousandths
}

// Keeper is a resource pool ready to use: it holds a Pool behind one mutex,
// dials and closes resources outside that mutex, queues callers in strict
// arrival order when every resource is out, hands a returned resource to
// the oldest waiter, and runs one timer for eviction, MinIdle and the leak
// watch. Every decision (which resource to lend, whether it is fresh,
// whether to dial, wait or refuse) is the Pool's: every Acquire and every
// Release is one call into it under the mutex.
//
// A Keeper is safe for concurrent use. Build one with NewKeeper and end it
// with Close.
type Keeper[T comparable] struct {
	settings[T]
	sh     *sharedRun         // the shared guards, if any (keeper_shared.go)
	ctx    context.Context    // ends at Close: dials watch it
	cancel context.CancelFunc // ends ctx
	spare  sync.Pool          // recycled *waiter[T]
	tally  tally

	mu       sync.Mutex      // guards every field below
	p        machine[T]      // the Pool, or its recorder in front of it
	pool     *pool.Pool[T]   // the Pool when nothing records: Take and Give go to it (machine.go)
	rec      *record.Pool[T] // the recorder, when Config.Recorder is set
	limits   pool.Limits     // the pool's, as last set
	ents     []*entry[T]     // by seat
	q        waiters[T]
	dialers  []slot[T] // callers whose own dial is in flight, oldest first (serveDialersLocked)
	closed   bool
	bg       int           // timer callbacks, dials and closers still running
	quiet    chan struct{} // closed once closed, nothing lent, no bg work
	drained  chan struct{} // closed once quiet and the fleet left (Close waits for it)
	alarm    alarm         // the one timer: eviction, retries, leaks, MinIdle
	cpuTimer Timer         // the CPU sampler, while the pool is in use (cpu.go)
	stats    counters
	closing  closeq[T]
	ceiling  int          // the ceiling last set on the pool (SetCeiling); -1: none
	stall    stallWatch   // the stall watch (stall.go)
	fronts   []pool.Front // serveClassesLocked's, kept between calls
}

// entry is the Keeper's record of one of the pool's seats, kept beside it.
// Entries are allocated once per seat and never move, so a loan can point
// at one. A Loan points at its entry, and the entry at its Keeper: a Loan
// is small, and it is copied at every call.
type entry[T comparable] struct {
	k    *Keeper[T]
	item T     // the resource in the seat; set under the lock when made
	seat int32 // its index
	// loan is the generation of the seat's current (or next) loan: a Loan
	// ends by moving it on, so a second end of the same Loan finds it moved.
	loan atomic.Uint32
	lw   *leakRec[T] // with LeakAfter only (leak.go); nil otherwise
	site *stack      // the current loan's call site, with StallSites only (stall.go)
}

// Limits returns the pool's limits.
func (k *Keeper[T]) Limits() pool.Limits {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limits
}

// now reads the Keeper's clock: once per call, and that instant is handed
// through to everything the call asks.
//
// The default clock is called as itself, a direct call, not through the
// Clock interface; an Acquire+Release reads the clock twice. On BenchmarkUncontended that
// moved wardpool's ratio to puddle from 2.12 to 2.00 (median of 10 rounds,
// about 14 ns of ~226 per op). It is the same clock either way: tests
// without Config.Clock run the direct call, those with a fake one
// (keeper_fake_test.go, keeper_timeout_test.go, ...) the interface.
func (k *Keeper[T]) now() time.Time {
	if k.sys != nil {
		return k.sys.Now()
	}
	return k.clock.Now()
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
		return int(k.tally.cpu.Load())
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
	if k.sh != nil {
		k.sharedLocked()
	}
	k.mu.Unlock()
	if fx.dials != nil || fx.leaks != nil {
		k.do(fx)
	}
}

// closeq is the queue of resources waiting to be closed, oldest first, and
// the closers working through it.
type closeq[T comparable] struct {
	queue   []T
	workers int // closer goroutines running
	running int // closes running now
}

// closeLocked queues v to be closed by a closer, starting one if fewer than
// Closers run. A caller never closes: a Close that hangs must not hold it.
func (k *Keeper[T]) closeLocked(v T) {
	if k.sh != nil {
		k.slotGoneLocked()
	}
	c := &k.closing
	c.queue = append(c.queue, v)
	if c.workers < k.closers && c.workers < len(c.queue) {
		c.workers++
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
	c := &k.closing
	k.mu.Lock()
	for len(c.queue) > 0 {
		v := c.queue[0]
		var zero T
		c.queue[0] = zero
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = nil // let the backing array go
		}
		c.running++
		k.mu.Unlock()
		k.closeOne(v)
		k.mu.Lock()
		c.running--
		k.stats.closed++
	}
	c.workers--
	k.bgDoneLocked()
	k.mu.Unlock()
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
	k.mu.Unlock()
	k.log.Error("wardpool: "+what+" panicked", "panic", r)
}

// bgDoneLocked ends one piece of background work (k.bg) and tells a closed
// Keeper when the last is done.
func (k *Keeper[T]) bgDoneLocked() {
	k.bg--
	k.drainedLocked()
}

// drainedLocked closes quiet once the Keeper is closed and nothing is out;
// without a fleet budget to leave, drained with it.
func (k *Keeper[T]) drainedLocked() {
	if !k.closed || k.p.Books().Busy > 0 || k.bg > 0 {
		return
	}
	select {
	case <-k.quiet:
		return
	default:
		close(k.quiet)
	}
	if k.sh == nil || k.sh.Budget == nil {
		close(k.drained)
	}
}

// settledLocked follows a resource's coming back to the pool (or its room
// freed) at now: waiters are served, MinIdle topped up, the timer set for
// the next expiry, and a closed Keeper told when the last loan is home.
func (k *Keeper[T]) settledLocked(now time.Time, fx *effects[T]) {
	if k.q.live > 0 || len(k.dialers) > 0 {
		k.serveLocked(now, fx)
	}
	if k.warms() {
		k.topUpLocked(now, fx)
	}
	if k.limits.Life > 0 || (!k.alarm.armed && k.limits.Keep > 0) {
		k.armIdleLocked(now)
	}
	if k.closed {
		k.drainedLocked()
	}
}

// Name returns the pool's name (Config.Name, or the default given it).
func (k *Keeper[T]) Name() string { return k.name }
