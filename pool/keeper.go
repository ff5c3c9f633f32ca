package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// ErrClosed is returned by Acquire, TryAcquire and AcquireFunc once Close
// has been called, and to callers waiting when it is.
var ErrClosed = errors.New("wardpool: pool closed")

// ErrShed is what a *ShedError unwraps to: the ward refused the acquire.
var ErrShed = errors.New("wardpool: shed")

// ErrWouldWait is returned by TryAcquire when no resource can be lent
// without waiting.
var ErrWouldWait = errors.New("wardpool: no resource available now")

// ErrConfig is wrapped by the error NewKeeper returns for a Config it cannot
// run with.
var ErrConfig = errors.New("wardpool: invalid config")

// ShedError is the error of an acquire the ward refused at once. It unwraps
// to ErrShed.
type ShedError struct {
	// Guard is the guard that refused: ward.GuardBreaker (the backend has
	// been failing; no new connection) or ward.GuardShedder (the host is hot
	// and the pool full).
	Guard ward.Guard
	// Ratio is the share of new connections the breaker refused at the
	// time, in [0, 1]; zero for other guards.
	Ratio float64
}

// Error says which guard refused and why.
func (e *ShedError) Error() string {
	switch e.Guard {
	case ward.GuardBreaker:
		return fmt.Sprintf("wardpool: shed by the breaker: the backend has been failing and %.0f%% of new connections are refused", 100*e.Ratio)
	case ward.GuardShedder:
		return "wardpool: shed by the shedder: the host's CPU is hot and every resource is busy"
	}
	return "wardpool: shed by the " + e.Guard.String()
}

// Unwrap returns ErrShed.
func (e *ShedError) Unwrap() error { return ErrShed }

// Config is what a Keeper runs with. Dial and Close are required; every other
// field has a working zero value. NewKeeper validates it once.
type Config[T comparable] struct {
	// Limits are the pool's bounds (see Limits); the zero Limits has none.
	Limits Limits
	// Ward holds the guards in front of the backend; the zero Ward has none.
	// The Keeper takes the guards as its own.
	Ward ward.Ward

	// Dial opens a resource. It runs outside the Keeper's lock, on its own
	// goroutine, with a context that carries the caller's values but not its
	// cancellation: a caller who gives up does not waste a dial nearly done,
	// the resource goes to the next waiter or to idle. The context ends when
	// the Keeper is closed; Dial should bound its own time otherwise (a
	// connect timeout). Every resource Dial returns must be distinct (==).
	// A panic in Dial is recovered and counted as a failed dial.
	Dial func(ctx context.Context) (T, error)
	// Close closes a resource the pool let go of. It is called outside the
	// lock, by whichever goroutine let go of it (a Release past the Idle
	// ceiling, an Acquire that met a stale one, the eviction timer, Close).
	// Its error is logged at debug level; a panic is recovered and counted.
	Close func(v T) error
	// Check, when set, tests a resource about to be lent that sat idle
	// longer than CheckIdle, with the caller's context. An error drops and
	// closes the resource, and the Acquire goes on as if it had not been
	// there: the caller never sees it.
	Check func(ctx context.Context, v T) error
	// CheckIdle is how long a resource may sit idle before Check runs on
	// borrow. Zero means one second (pgxpool's choice); negative, every
	// borrow.
	CheckIdle time.Duration
	// Reset, when set, runs on every Release, outside the lock, before the
	// resource is given back; an error destroys it instead.
	Reset func(ctx context.Context, v T) error
	// MinIdle is how many idle resources the Keeper keeps warm, dialing in
	// the background (within Size, and within the ward's backoff and
	// breaker). It must not exceed Limits.Size or Limits.Idle when those are
	// set.
	MinIdle int
	// LifeJitter lengthens each resource's Life by a draw in [0,
	// LifeJitter), so that resources made together do not retire together.
	LifeJitter time.Duration
	// LeakAfter, when positive, turns the leak watch on: each Acquire's call
	// stack is recorded, and a loan held longer is reported once to OnLeak,
	// and again when it comes back. Zero turns it off, and then it costs
	// nothing.
	LeakAfter time.Duration
	// OnLeak receives the leak reports; nil logs them at warning level on
	// Logger. It is called outside the lock, from the timer's goroutine or
	// the returning caller's.
	OnLeak func(Leak[T])
	// Logger is where the Keeper logs; nil means slog.Default().
	Logger *slog.Logger
	// Clock is where the Keeper reads the time and sets its timer; nil means
	// a cached monotonic clock, accurate to about a millisecond (see
	// cachedClock in the source).
	Clock Clock
	// Rand draws numbers in [0, 1) for the breaker, the backoff's jitter and
	// LifeJitter; nil means math/rand/v2. It is called under the lock.
	Rand func() float64
	// CPU returns the host's CPU use in thousandths (0 to 1000). It is read
	// every 250 ms, and only when Ward.Shedder is set; nil means a reader of
	// the cgroup v2, cgroup v1 or /proc/stat figures, which reads 0 (not hot)
	// wherever they are missing or make no sense.
	CPU func() int
}

// counters are the runtime's own figures, guarded by Keeper.mu.
type counters struct {
	emptyAcquires, canceled       uint64
	checkFailures, leaks, doubles uint64
	panics                        uint64
}

// Keeper is a resource pool ready to use: it holds a Pool behind one mutex,
// dials and closes resources outside that mutex, queues callers in strict
// arrival order when every resource is out, hands a returned resource straight
// to the oldest waiter, and runs one timer for eviction, MinIdle and the leak
// watch. While nobody waits, a release parks its resource in a few lock-free
// hot slots and an acquire takes it from there, without the mutex; the
// slots are idle resources on the books, within every limit (see hot.go).
//
// A Keeper is safe for concurrent use. Build one with NewKeeper and end it
// with Close.
type Keeper[T comparable] struct {
	dial      func(context.Context) (T, error)
	close     func(T) error
	check     func(context.Context, T) error
	checkIdle time.Duration
	reset     func(context.Context, T) error
	minIdle   int
	jitter    time.Duration
	leakAfter time.Duration
	onLeak    func(Leak[T])
	log       *slog.Logger
	clock     Clock
	cached    *cachedClock // the default clock, when in use
	rand      func() float64
	cpuRead   func() int
	base      time.Time // origin of entry.at and Loan.at
	baseMono  int64     // base on the cached clock's scale, with the default clock
	limits    Limits
	needRoll  bool          // the ward has a breaker or a backoff
	shedder   bool          // the ward has a shedder
	hotable   bool          // the hot slots may be used (see hot.go)
	sweep     time.Duration // how often the timer cools the hot slots; 0: never needed

	cpu    atomic.Int64       // latest CPU reading, thousandths
	ctx    context.Context    // ends at Close: dials watch it
	cancel context.CancelFunc // ends ctx
	spare  sync.Pool          // recycled *waiter[T]

	// Keep the mutex, written by every Acquire and Release, off the cache
	// line of the fields above, which every caller reads without it.
	_ [64]byte

	// The hot slots and their gate (see hot.go), on lines of their own:
	// read by every acquire and release, written by those that park.
	gate atomic.Uint32
	_    [60]byte
	hot  [hotSlots]atomic.Uint64
	_    [64 - 8*hotSlots%64]byte
	// table is ents as the hot path reads it, without the lock: replaced,
	// never changed in place, when a seat is added.
	table atomic.Pointer[[]*entry[T]]

	// Successful acquires and their total wait, counted once an acquire is
	// final (its caller has the loan, checked): atomics, so that a waiter
	// handed a resource counts itself without taking the lock again. What
	// the hot slots lend is counted by the slots (see hot.go); hotStale are
	// the resources taken from them past their age (not lent), hotUnlent
	// the loans from them that failed their check (not acquires).
	acquired  atomic.Uint64
	waitNs    atomic.Int64
	hotStale  atomic.Uint64
	hotUnlent atomic.Uint64
	checks    atomic.Uint64 // Config.Check calls
	epoch     atomic.Uint32 // bumped by Reset, under mu

	mu       sync.Mutex // guards every field below
	p        *Pool[T]
	ents     []*entry[T] // by seat index
	q        waiters[T]
	dialing  int // dials in flight
	warming  int // of which for MinIdle (no caller waiting)
	closed   bool
	bg       int           // timer callbacks and dial goroutines still running
	drained  chan struct{} // closed once closed, nothing busy, no bg work
	timer    Timer         // the one timer: eviction, retries, leaks, MinIdle
	timerAt  time.Time     // when timer fires, if armed
	armed    bool
	retry    bool // waiters were held back by a Later: the timer serves them
	cpuTimer Timer
	stats    counters
	hotSeen  [hotSlots]uint64 // each slot's take count at the last fold
	hotTaken uint64           // resources taken from the hot slots, folded
	hotShown uint64           // the hot loans the last Stats reported
	acqShown uint64           // the Acquires the last Stats reported
}

// NewKeeper returns a Keeper running with cfg. It fails, with an error
// wrapping ErrConfig, when Dial or Close is missing or a field is out of
// range. It starts dialing MinIdle resources in the background at once.
func NewKeeper[T comparable](cfg Config[T]) (*Keeper[T], error) {
	bad := func(format string, args ...any) (*Keeper[T], error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	l := cfg.Limits
	switch err := l.Validate(); {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	case cfg.Dial == nil:
		return bad("Dial is nil")
	case cfg.Close == nil:
		return bad("Close is nil")
	case cfg.MinIdle < 0:
		return bad("MinIdle is %d, want 0 or more", cfg.MinIdle)
	case l.Size > 0 && cfg.MinIdle > l.Size:
		return bad("MinIdle is %d, more than Limits.Size %d", cfg.MinIdle, l.Size)
	case l.Idle > 0 && cfg.MinIdle > l.Idle:
		return bad("MinIdle is %d, more than Limits.Idle %d: the pool would close what it warmed", cfg.MinIdle, l.Idle)
	case cfg.LifeJitter < 0:
		return bad("LifeJitter is %v, want 0 or more", cfg.LifeJitter)
	case cfg.LeakAfter < 0:
		return bad("LeakAfter is %v, want 0 (off) or more", cfg.LeakAfter)
	}
	p, err := New[T](l, cfg.Ward)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	k := &Keeper[T]{
		dial:      cfg.Dial,
		close:     cfg.Close,
		check:     cfg.Check,
		checkIdle: cfg.CheckIdle,
		reset:     cfg.Reset,
		minIdle:   cfg.MinIdle,
		jitter:    cfg.LifeJitter,
		leakAfter: cfg.LeakAfter,
		onLeak:    cfg.OnLeak,
		log:       cfg.Logger,
		clock:     cfg.Clock,
		rand:      cfg.Rand,
		cpuRead:   cfg.CPU,
		limits:    l,
		needRoll:  cfg.Ward.Breaker != nil || cfg.Ward.Backoff != nil,
		shedder:   cfg.Ward.Shedder != nil,
		p:         p,
		drained:   make(chan struct{}),
	}
	if k.checkIdle == 0 {
		k.checkIdle = time.Second
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	if k.clock == nil {
		k.cached = defaultClock
		k.cached.acquire()
		k.clock = k.cached
	}
	if k.rand == nil {
		k.rand = rand.Float64
	}
	if k.shedder && k.cpuRead == nil {
		k.cpuRead = newCPUReader().read
	}
	k.q.gate = &k.gate
	if hotOff(cfg) {
		k.gate.Store(gateOff)
	} else {
		k.hotable = true
		for _, d := range []time.Duration{l.Keep, l.Life} {
			if d > 0 && (k.sweep == 0 || d < k.sweep) {
				k.sweep = d
			}
		}
		// The sweep bounds how long a resource stays hot, and folds the
		// slots' take counts: it runs even without Keep or Life.
		k.sweep = min(cmp.Or(k.sweep, sweepEvery), sweepEvery)
		k.gate.Store(gateSweep)
	}
	k.spare.New = func() any { return &waiter[T]{ch: make(chan grant[T], 1)} }
	k.ctx, k.cancel = context.WithCancel(context.Background())
	k.base = k.clock.Now()
	if k.cached != nil {
		k.baseMono = int64(k.base.Sub(clockOrigin))
	}

	var fx effects[T]
	k.mu.Lock()
	if k.shedder {
		k.bg++ // the sampler; ended by Close
		k.cpuTimer = k.clock.AfterFunc(cpuEvery, k.sampleCPU)
	}
	k.topUpLocked(k.base, &fx)
	k.mu.Unlock()
	k.do(&fx)
	return k, nil
}

// Limits returns the pool's limits.
func (k *Keeper[T]) Limits() Limits { return k.limits }

// now reads the Keeper's clock; the default clock is called directly, which
// lets the compiler inline it on the hot paths.
func (k *Keeper[T]) now() time.Time {
	if k.cached != nil {
		return k.cached.Now()
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
		return int(k.cpu.Load())
	}
	return 0
}

// effects is what a decision under the lock leaves to do after it: resources
// to close, dials to start, leaks to report. The zero value is empty and
// costs nothing; its slices are allocated only when something is to be done.
//
// Grants to waiters are not among them: they are sent under the lock (see
// grantLocked).
type effects[T comparable] struct {
	close []T
	dials []dialJob[T]
	leaks []leakNote[T]
}

// pending reports whether fx has anything to do.
func (fx *effects[T]) pending() bool {
	return fx.close != nil || fx.dials != nil || fx.leaks != nil
}

// dialJob is a dial to start: for waiter w under ticket, or for MinIdle
// when w is nil.
type dialJob[T comparable] struct {
	w      *waiter[T]
	ticket uint64
	ctx    context.Context
}

// do carries out fx, outside the lock.
func (k *Keeper[T]) do(fx *effects[T]) {
	for _, j := range fx.dials {
		go k.runDial(j)
	}
	for _, v := range fx.close {
		k.closeOne(v)
	}
	for _, l := range fx.leaks {
		k.report(l)
	}
}

// closeOne closes v, recovering from a panic in Config.Close.
func (k *Keeper[T]) closeOne(v T) {
	defer func() {
		if r := recover(); r != nil {
			k.mu.Lock()
			k.stats.panics++
			k.mu.Unlock()
			k.log.Error("wardpool: Close panicked", "panic", r)
		}
	}()
	if err := k.close(v); err != nil {
		k.log.Debug("wardpool: closing a resource failed", "err", err)
	}
}

// Acquire lends a resource, waiting for one if every resource is out: in
// strict arrival order, until one is handed to it or ctx ends. It returns
// ctx.Err() when ctx ends first, ErrClosed after Close, a *ShedError when the
// ward refuses, and Dial's error when the dial made for this caller fails.
//
// A resource found past its age is closed and another taken; one that fails
// Config.Check is dropped and replaced; the caller sees neither.
//
// In steady state (a resource idle and fresh) Acquire allocates nothing.
func (k *Keeper[T]) Acquire(ctx context.Context) (Loan[T], error) {
	if k.gate.Load() == 0 && ctx.Err() == nil {
		if l, ok, err := k.acquireHot(ctx); ok || err != nil {
			return l, err
		}
	}
	return k.acquire(ctx)
}

// acquire is Acquire through the lock.
func (k *Keeper[T]) acquire(ctx context.Context) (Loan[T], error) {
	st, err := k.enter(ctx)
	if err != nil {
		return Loan[T]{}, err
	}
	if k.hotable && k.hotCount() > 0 {
		k.coolAll()
	}
	start := k.now()
	now := start
	front := false // re-queue at the front: this caller was already served once
	for {
		k.mu.Lock()
		if k.q.live > 0 && !front {
			// Others are waiting: queue behind them, whatever Take would say.
			w := k.attachLocked(ctx, start, st)
			k.q.push(w)
			k.countEmptyLocked(front)
			k.queuedLocked(now)
			l, again, err := k.await(ctx, w)
			if !again {
				return l, err
			}
			front, now = true, k.clock.Now()
			continue
		}
		t, seat := k.p.takeSeat(now, k.roll(), k.cpuNow())
		switch t.Kind {
		case Ready:
			l, ok, err := k.lendReadyLocked(ctx, seat, t, now, st)
			if !ok {
				if err != nil {
					return Loan[T]{}, err
				}
				now = k.clock.Now()
				continue
			}
			k.counted(start, l)
			return l, nil

		case Stale:
			k.mu.Unlock()
			k.closeOne(t.Item)
			now = k.clock.Now()
			continue

		case Make:
			w := k.attachLocked(ctx, start, st)
			k.startDialLocked(w)
			k.countEmptyLocked(front)
			var fx effects[T]
			fx.dials = append(fx.dials, dialJob[T]{w: w, ticket: w.ticket, ctx: ctx})
			k.mu.Unlock()
			k.do(&fx)
			l, again, err := k.await(ctx, w)
			if !again {
				return l, err
			}
			front, now = true, k.clock.Now()
			continue

		case Wait:
			if hookWait != nil {
				hookWait()
			}
			w := k.attachLocked(ctx, start, st)
			if front {
				k.q.pushFront(w)
			} else {
				k.q.push(w)
			}
			k.countEmptyLocked(front)
			front = false
			k.queuedLocked(now)
			l, again, err := k.await(ctx, w)
			if !again {
				return l, err
			}
			front, now = true, k.clock.Now()
			continue

		case Later:
			k.mu.Unlock()
			if err := k.sleep(ctx, t.Delay); err != nil {
				k.countCanceled()
				return Loan[T]{}, err
			}
			now = k.clock.Now()
			continue

		case Shed:
			err := k.shedErrorLocked(t.Guard, now)
			k.mu.Unlock()
			return Loan[T]{}, err

		default: // Closed
			k.mu.Unlock()
			return Loan[T]{}, ErrClosed
		}
	}
}

// lendReadyLocked lends the Ready resource t from seat at now to the caller
// itself (Acquire, TryAcquire), tops up MinIdle, unlocks k.mu (held on entry),
// and runs Check when the resource sat idle long enough. ok false means the
// resource failed its check and is gone: err is then ctx's error (give up) or
// nil (ask again).
func (k *Keeper[T]) lendReadyLocked(ctx context.Context, seat int32, t Taken[T], now time.Time, st *stack) (l Loan[T], ok bool, err error) {
	l = k.lendLocked(seat, t.Item, now, st)
	var fx effects[T]
	if k.minIdle > 0 {
		k.topUpLocked(now, &fx)
	}
	k.mu.Unlock()
	if fx.dials != nil {
		k.do(&fx)
	}
	if k.check != nil && k.due(t.Idle) {
		if ok, err := k.checkLoan(ctx, l); !ok {
			return Loan[T]{}, false, err
		}
	}
	return l, true, nil
}

// hookWait, set by tests only, runs when Acquire is answered Wait, under
// the lock, before the caller queues: a test plays a lock-free release into
// that moment.
var hookWait func()

// queuedLocked follows a caller's joining the queue, and unlocks k.mu (held
// on entry). A release may have parked a resource in a hot slot just before
// the gate closed: it is cooled and served to the queue, oldest first.
func (k *Keeper[T]) queuedLocked(now time.Time) {
	if !k.hotable {
		k.mu.Unlock()
		return
	}
	var fx effects[T]
	if k.coolAllLocked(now, &fx) {
		k.serveLocked(now, &fx)
	}
	k.mu.Unlock()
	if fx.pending() {
		k.do(&fx)
	}
}

// coolAll gives every resource in the hot slots to the Pool, under the lock.
func (k *Keeper[T]) coolAll() {
	var fx effects[T]
	k.mu.Lock()
	now := k.clock.Now()
	if k.coolAllLocked(now, &fx) {
		k.settledLocked(now, &fx)
	}
	k.mu.Unlock()
	k.do(&fx)
}

// enter begins an acquire: ctx's error (counted as canceled) when it has
// ended already, and the caller's stack when the leak watch is on.
func (k *Keeper[T]) enter(ctx context.Context) (*stack, error) {
	if err := ctx.Err(); err != nil {
		k.countCanceled()
		return nil, err
	}
	if k.leakAfter > 0 {
		return captureStack(), nil
	}
	return nil, nil
}

func (k *Keeper[T]) countCanceled() {
	k.mu.Lock()
	k.stats.canceled++
	k.mu.Unlock()
}

// countEmptyLocked counts an acquire that has to wait or dial, once: not
// again when it comes back to the front after a failed check.
func (k *Keeper[T]) countEmptyLocked(again bool) {
	if !again {
		k.stats.emptyAcquires++
	}
}

// due reports whether a resource idle for idle is checked before lending.
func (k *Keeper[T]) due(idle time.Duration) bool {
	return k.checkIdle < 0 || idle > k.checkIdle
}

// shedErrorLocked builds the error of a Shed answer.
func (k *Keeper[T]) shedErrorLocked(g ward.Guard, now time.Time) error {
	e := &ShedError{Guard: g}
	if g == ward.GuardBreaker {
		e.Ratio = k.p.Refusal(now)
	}
	return e
}

// attachLocked readies a recycled waiter for ctx under a new ticket.
func (k *Keeper[T]) attachLocked(ctx context.Context, start time.Time, st *stack) *waiter[T] {
	w := k.spare.Get().(*waiter[T])
	w.ctx, w.start, w.stack = ctx, start, st
	w.ticket++
	w.attached = true
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
			if w.queued {
				k.q.remove(w)
			}
			w.attached = false
			w.ticket++
			k.stats.canceled++
			k.mu.Unlock()
			k.recycle(w)
			return Loan[T]{}, false, ctx.Err()
		}
		k.mu.Unlock()
		// A grant raced the cancellation and is in the channel: pass a
		// resource on rather than lose it.
		g = <-w.ch
		k.recycle(w)
		if g.err != nil {
			return Loan[T]{}, false, g.err
		}
		k.mu.Lock()
		k.stats.canceled++
		k.mu.Unlock()
		g.loan.Release() // to the next waiter, or idle
		return Loan[T]{}, false, ctx.Err()
	}
granted:
	check, start := w.checked, w.start
	k.recycle(w)
	if g.err != nil {
		return Loan[T]{}, false, g.err
	}
	if check && k.check != nil && k.due(g.idle) {
		ok, err := k.checkLoan(ctx, g.loan)
		if !ok {
			if err != nil {
				return Loan[T]{}, false, err
			}
			return Loan[T]{}, true, nil
		}
	}
	k.counted(start, g.loan)
	return g.loan, false, nil
}

// counted records a successful acquire that began at start and ended with
// the loan l: once, when it is final.
func (k *Keeper[T]) counted(start time.Time, l Loan[T]) {
	k.acquired.Add(1)
	if w := l.at - k.ns(start); w > 0 {
		k.waitNs.Add(w)
	}
}

// recycle returns a detached waiter to the spare pool.
func (k *Keeper[T]) recycle(w *waiter[T]) {
	w.ctx, w.stack, w.checked = nil, nil, false
	k.spare.Put(w)
}

// sleep waits d, or until ctx ends (its error then).
func (k *Keeper[T]) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	t := k.clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// checkLoan runs Config.Check on a freshly lent l. ok false means the
// resource was bad and is gone: err is nil (ask again) or ctx.Err() (give
// up). A check that fails because ctx ended gives the resource back instead
// of destroying it.
func (k *Keeper[T]) checkLoan(ctx context.Context, l Loan[T]) (ok bool, err error) {
	cerr := k.safeCheck(ctx, l.item)
	k.checks.Add(1) // an atomic: a check that passes takes no lock
	if cerr == nil {
		return true, nil
	}
	k.mu.Lock()
	if ctxErr := ctx.Err(); ctxErr != nil {
		k.stats.canceled++
		k.mu.Unlock()
		l.Release()
		return false, ctxErr
	}
	k.stats.checkFailures++
	k.mu.Unlock()
	l.Destroy()
	return false, nil
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

func (k *Keeper[T]) countPanic(what string, r any) {
	k.mu.Lock()
	k.stats.panics++
	k.mu.Unlock()
	k.log.Error("wardpool: "+what+" panicked", "panic", r)
}

// lendLocked records a new loan of the resource at seat, lent at now.
func (k *Keeper[T]) lendLocked(seat int32, item T, now time.Time, st *stack) Loan[T] {
	e := k.ents[seat]
	at := k.ns(now)
	e.at.Store(at)
	e.reported = false
	if k.leakAfter > 0 {
		e.stack = st
		k.armLocked(now, now.Add(k.leakAfter))
	}
	return Loan[T]{e: e, item: item, gen: e.gen.Load(), at: at}
}

// growLocked makes room in ents for every seat the pool has.
func (k *Keeper[T]) growLocked() {
	if len(k.ents) == k.p.seatCount() {
		return
	}
	for i := len(k.ents); i < k.p.seatCount(); i++ {
		k.ents = append(k.ents, &entry[T]{k: k, seat: int32(i)})
	}
	table := k.ents
	k.table.Store(&table)
}

// startDialLocked counts a dial about to start, for a caller or for MinIdle.
func (k *Keeper[T]) startDialLocked(w *waiter[T]) {
	k.dialing++
	k.bg++
	if w == nil {
		k.warming++
	}
}

// runDial dials for j and settles the reservation with what came of it.
func (k *Keeper[T]) runDial(j dialJob[T]) {
	parent := k.ctx
	if j.ctx != nil {
		parent = context.WithoutCancel(j.ctx)
	}
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(k.ctx, cancel)
	v, err := k.safeDial(ctx)
	stop()
	cancel()

	var fx effects[T]
	var unseen error
	k.mu.Lock()
	now := k.clock.Now()
	k.dialing--
	if j.w == nil {
		k.warming--
	}
	owner := j.w != nil && j.w.attached && j.w.ticket == j.ticket
	switch {
	case err == nil && k.p.Holds(v):
		// Dial handed back a resource the pool already holds: a bug in
		// Dial. Lending it again would lend one handle twice.
		err = fmt.Errorf("wardpool: Dial returned a resource already in the pool")
		fallthrough
	case err != nil:
		k.p.Unmade(now, k.roll())
		if k.closed {
			err = ErrClosed // the dial was cancelled by Close
		}
		if owner {
			k.grantLocked(j.w, grant[T]{err: err})
		} else {
			unseen = err // nobody will see it: log it, after unlocking
		}
		k.serveLocked(now, &fx)
		k.armRetryLocked(now)
	case !k.p.MadeJitter(v, now, k.drawJitter()):
		// Closed while dialing.
		fx.close = append(fx.close, v)
		if owner {
			k.grantLocked(j.w, grant[T]{err: ErrClosed})
		}
	default:
		seat := k.p.seatOf(v)
		k.growLocked()
		e := k.ents[seat]
		e.item, e.epoch, e.dies = v, k.epoch.Load(), 0
		if dies, ok := k.p.diesAt(seat); ok {
			e.dies = k.ns(dies)
		}
		if owner {
			w := j.w
			l := k.lendLocked(seat, v, now, w.stack)
			k.grantLocked(w, grant[T]{loan: l})
		} else {
			// Nobody is waiting for this one now: hand it on like a return.
			if !k.p.Give(v, now) {
				fx.close = append(fx.close, v)
			}
			k.serveLocked(now, &fx)
			k.armIdleLocked(now)
		}
	}
	k.mu.Unlock()
	if unseen != nil {
		k.log.Debug("wardpool: dial failed", "err", unseen)
	}
	k.do(&fx)
	k.mu.Lock()
	k.bg--
	k.drainedLocked()
	k.mu.Unlock()
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

// serveLocked asks the pool on behalf of the waiters, oldest first, for as
// long as it has something for them: it is called whenever something came
// back or room was freed. Waiters whose context has ended are skipped and
// told so (nothing is handed to a caller who cannot use it).
func (k *Keeper[T]) serveLocked(now time.Time, fx *effects[T]) {
	for k.q.live > 0 {
		w := k.q.peek()
		if err := w.ctx.Err(); err != nil {
			k.q.pop()
			k.stats.canceled++
			k.grantLocked(w, grant[T]{err: err})
			continue
		}
		t, seat := k.p.takeSeat(now, k.roll(), k.cpuNow())
		switch t.Kind {
		case Ready:
			k.q.pop()
			l := k.lendLocked(seat, t.Item, now, w.stack)
			w.checked = true
			k.grantLocked(w, grant[T]{loan: l, idle: t.Idle})
		case Stale:
			fx.close = append(fx.close, t.Item)
		case Make:
			k.q.pop()
			k.startDialLocked(w)
			fx.dials = append(fx.dials, dialJob[T]{w: w, ticket: w.ticket, ctx: w.ctx})
		case Wait:
			return
		case Later:
			k.retry = true
			k.armLocked(now, now.Add(t.Delay))
			return
		case Shed:
			k.q.pop()
			k.grantLocked(w, grant[T]{err: k.shedErrorLocked(t.Guard, now)})
		default: // Closed
			k.q.pop()
			k.grantLocked(w, grant[T]{err: ErrClosed})
		}
	}
}

// topUpLocked starts background dials until idle and warming resources
// reach MinIdle, as far as the pool lets it.
func (k *Keeper[T]) topUpLocked(now time.Time, fx *effects[T]) {
	for k.p.Idle()+k.hotCount()+k.warming < k.minIdle && !k.closed {
		if !k.p.reserve(now, k.roll(), k.cpuNow()) {
			k.armRetryLocked(now)
			return
		}
		k.startDialLocked(nil)
		fx.dials = append(fx.dials, dialJob[T]{})
	}
}

// armRetryLocked sets the timer for when MinIdle can be topped up again,
// if it is short.
func (k *Keeper[T]) armRetryLocked(now time.Time) {
	if k.p.Idle()+k.hotCount()+k.warming >= k.minIdle || k.closed {
		return
	}
	at := now.Add(time.Second)
	if until, ok := k.p.heldUntil(); ok && until.Before(at) {
		at = until
	}
	k.armLocked(now, at)
}

// armIdleLocked sets the timer for the next idle expiry, if that is before
// it would fire anyway.
func (k *Keeper[T]) armIdleLocked(now time.Time) {
	if at, ok := k.p.Next(); ok {
		k.armLocked(now, at)
	}
}

// armLocked makes the one timer fire at or before at.
func (k *Keeper[T]) armLocked(now, at time.Time) {
	if k.closed || (k.armed && !at.Before(k.timerAt)) {
		return
	}
	d := max(at.Sub(now), time.Nanosecond)
	k.timerAt, k.armed = at, true
	if k.timer == nil {
		k.timer = k.clock.AfterFunc(d, k.tick)
		return
	}
	k.timer.Reset(d)
}

// tick is the one timer's work: evict what expired, serve waiters held back
// by a Later, report leaks, top up MinIdle, and set the timer again.
func (k *Keeper[T]) tick() {
	var fx effects[T]
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	k.bg++
	k.armed = false
	now := k.clock.Now()
	if k.sweep > 0 {
		// Close the gate on the hot slots until a release arms the next
		// sweep, then cool them: nothing stays hot past a sweep.
		k.gate.Or(gateSweep)
	}
	if k.hotable {
		k.coolAllLocked(now, &fx)
	}
	fx.close = append(fx.close, k.p.Evict(now)...)
	if k.retry || len(fx.close) > 0 {
		// Only ask for the waiters when something changed for them: a Later
		// ran out, or eviction made room. Asking for nothing would count a
		// Wait answer in the books each time.
		k.retry = false
		k.serveLocked(now, &fx)
	}
	if k.leakAfter > 0 {
		k.watchLocked(now, &fx)
	}
	k.topUpLocked(now, &fx)
	k.armIdleLocked(now)
	k.mu.Unlock()
	k.do(&fx)
	k.mu.Lock()
	k.bg--
	k.drainedLocked()
	k.mu.Unlock()
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

// TryAcquire lends a resource only if one is ready now, with the same checks
// as Acquire, and never waits for a return. Otherwise it returns
// ErrWouldWait, and, if there is room, starts a dial in the background whose
// resource joins the pool (or goes to a waiter) when it is ready: a later
// TryAcquire may find it. It returns ErrClosed after Close and a *ShedError
// when the ward refuses.
func (k *Keeper[T]) TryAcquire(ctx context.Context) (Loan[T], error) {
	st, err := k.enter(ctx)
	if err != nil {
		return Loan[T]{}, err
	}
	if k.gate.Load() == 0 {
		if l, ok, err := k.acquireHot(ctx); ok || err != nil {
			return l, err
		}
	}
	if k.hotable && k.hotCount() > 0 {
		k.coolAll()
	}
	for {
		now := k.clock.Now()
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return Loan[T]{}, ErrClosed
		}
		if k.q.live > 0 {
			k.mu.Unlock()
			return Loan[T]{}, ErrWouldWait
		}
		t, seat := k.p.takeSeat(now, k.roll(), k.cpuNow())
		switch t.Kind {
		case Ready:
			l, ok, err := k.lendReadyLocked(ctx, seat, t, now, st)
			if !ok {
				if err != nil {
					return Loan[T]{}, err
				}
				continue
			}
			k.counted(now, l)
			return l, nil
		case Stale:
			k.mu.Unlock()
			k.closeOne(t.Item)
			continue
		case Make:
			k.startDialLocked(nil)
			k.mu.Unlock()
			go k.runDial(dialJob[T]{ctx: ctx})
			return Loan[T]{}, ErrWouldWait
		case Shed:
			err := k.shedErrorLocked(t.Guard, now)
			k.mu.Unlock()
			return Loan[T]{}, err
		default: // Wait, Later
			k.mu.Unlock()
			return Loan[T]{}, ErrWouldWait
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
func (k *Keeper[T]) AcquireAllIdle(ctx context.Context) []Loan[T] {
	if ctx.Err() != nil {
		return nil
	}
	var loans []Loan[T]
	var fx effects[T]
	k.mu.Lock()
	now := k.clock.Now()
	k.coolAllLocked(now, &fx)
	for k.p.Idle() > 0 && k.q.live == 0 {
		t, seat := k.p.takeSeat(now, k.roll(), k.cpuNow())
		if t.Kind == Stale {
			fx.close = append(fx.close, t.Item)
			continue
		}
		if t.Kind != Ready {
			break
		}
		loans = append(loans, k.lendLocked(seat, t.Item, now, nil))
		k.acquired.Add(1)
	}
	k.mu.Unlock()
	k.do(&fx)
	return loans
}

// Stats is one reading of a Keeper: the pool's books and the runtime's own
// figures. Counters only rise.
type Stats struct {
	Books
	// Waiting is how many callers are queued now.
	Waiting int
	// Dialing is how many dials are in flight now.
	Dialing int
	// Acquires counts successful Acquire, TryAcquire, AcquireFunc and
	// AcquireAllIdle loans.
	Acquires uint64
	// AcquireWait is the total time successful acquires spent waiting
	// (queued, dialing, held back by a Later), on the Keeper's clock.
	AcquireWait time.Duration
	// EmptyAcquires counts acquires that found nothing ready and had to
	// wait or dial.
	EmptyAcquires uint64
	// Canceled counts acquires that ended with their context before they
	// got a resource.
	Canceled uint64
	// Checks counts Config.Check calls; CheckFailures those that failed and
	// dropped the resource.
	Checks, CheckFailures uint64
	// Leaks counts loans reported as held past Config.LeakAfter.
	Leaks uint64
	// DoubleReleases counts Release, Destroy and Hijack calls on a loan that
	// had already ended: no-ops.
	DoubleReleases uint64
	// Panics counts recovered panics in Dial, Close, Check and Reset.
	Panics uint64
}

// Stats returns a reading of the pool's figures.
func (k *Keeper[T]) Stats() Stats {
	var fx effects[T]
	k.mu.Lock()
	defer k.do(&fx)
	defer k.mu.Unlock()
	if now := k.clock.Now(); k.coolAllLocked(now, &fx) {
		k.settledLocked(now, &fx)
	}
	s := k.stats
	b := k.p.Books()
	// A resource taken from the hot slots is counted as it is taken; one
	// found past its age, or failing its check, is taken off the count a
	// moment later. A reading in that moment would count it, and the next
	// one not: the readings are held from going down, so counters only rise.
	hot := max(k.hotLoansLocked(), k.hotShown)
	acquires := max(k.acquired.Load()+hot-k.hotUnlent.Load(), k.acqShown)
	k.hotShown, k.acqShown = hot, acquires
	b.Loans += hot
	b.Reused += hot
	return Stats{
		Books:          b,
		Waiting:        k.q.live,
		Dialing:        k.dialing,
		Acquires:       acquires,
		AcquireWait:    time.Duration(k.waitNs.Load()),
		EmptyAcquires:  s.emptyAcquires,
		Canceled:       s.canceled,
		Checks:         k.checks.Load(),
		CheckFailures:  s.checkFailures,
		Leaks:          s.leaks,
		DoubleReleases: s.doubles,
		Panics:         s.panics,
	}
}

// Loans returns every resource out on loan and how long it has been out,
// the longest first. A resource lent again from the hot slots within a
// millisecond of its previous loan's start may read up to that millisecond
// long (see atSlack); Loan.Held is exact.
func (k *Keeper[T]) Loans() []Lent[T] {
	var fx effects[T]
	k.mu.Lock()
	now := k.clock.Now()
	if k.coolAllLocked(now, &fx) {
		k.settledLocked(now, &fx)
	}
	// The pool knows which seats are lent; the Keeper knows when each loan
	// began (a loan from the hot slots began without the pool).
	t := k.ns(now)
	var out []Lent[T]
	for i, e := range k.ents {
		if k.p.lentAt(int32(i)) {
			out = append(out, Lent[T]{Item: k.p.itemAt(int32(i)), Held: time.Duration(t - e.at.Load())})
		}
	}
	k.mu.Unlock()
	k.do(&fx)
	slices.SortStableFunc(out, func(a, b Lent[T]) int { return cmp.Compare(b.Held, a.Held) })
	return out
}

// Reset closes every idle resource now, and retires every resource lent
// now when it comes back (it is closed then instead of kept): for after a
// backend failover, when every connection made before is suspect. Dials in
// flight are kept.
func (k *Keeper[T]) Reset() {
	var fx effects[T]
	k.mu.Lock()
	now := k.clock.Now()
	k.epoch.Add(1)
	k.coolAllLocked(now, &fx) // made before: retired
	fx.close = append(fx.close, k.p.retireIdle(now)...)
	k.serveLocked(now, &fx)
	k.topUpLocked(now, &fx)
	k.mu.Unlock()
	k.do(&fx)
}

// Close shuts the pool: from now on acquires fail with ErrClosed, and so do
// the callers waiting; idle resources are closed; dials in flight are
// cancelled. Then it waits for every loan to come home (each is closed as it
// does) and for the Keeper's goroutines to end, until ctx ends; it returns
// ctx.Err() if ctx ended first. Calling it again waits again.
func (k *Keeper[T]) Close(ctx context.Context) error {
	var fx effects[T]
	k.mu.Lock()
	first := !k.closed
	if first {
		k.gate.Or(gateClosed)
		k.coolAllLocked(k.clock.Now(), &fx)
		fx.close = append(fx.close, k.p.Close()...)
		k.closed = true
		now := k.clock.Now()
		k.serveLocked(now, &fx) // every waiter gets ErrClosed
		if k.timer != nil && k.timer.Stop() {
			k.armed = false
		}
		if k.cpuTimer != nil && k.cpuTimer.Stop() {
			k.bg-- // the sampler will not run again
		}
		k.cancel()
	}
	k.drainedLocked()
	k.mu.Unlock()
	k.do(&fx)
	if first && k.cached != nil {
		defer k.cached.release()
	}
	select {
	case <-k.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
