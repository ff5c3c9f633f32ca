package wardpool

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/wardpool/wardpool/internal/poolname"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// Config is what a Keeper runs with. Dial and Close are required; every other
// field has a working zero value. NewKeeper validates it once.
type Config[T comparable] struct {
	// Limits are the pool's bounds (see Limits); the zero Limits has none.
	Limits pool.Limits
	// Ward holds the guards in front of the backend; the zero Ward has none.
	// The Keeper takes the guards as its own. A pool spaces its dials by
	// the Backoff's delays but does not read its Attempts: it goes on
	// dialing for as long as callers ask, each bounded by its own ctx, and
	// one that gives up gets an AcquireError naming the last dial error
	// (the breaker is what stops dials to a backend that stays down).
	Ward ward.Ward

	// Dial opens a resource. It runs outside the Keeper's lock, on its own
	// goroutine, with a context that carries the caller's values but not its
	// cancellation: a caller who gives up does not waste a dial nearly done,
	// the resource goes to the next waiter or to idle. The context ends
	// after DialTimeout, or when the Keeper is closed. Every resource Dial
	// returns must be distinct (==) and not the zero T: a zero T with a nil
	// error counts as a failed dial. A panic in Dial is recovered and
	// counted as a failed dial.
	Dial func(ctx context.Context) (T, error)
	// DialTimeout bounds every dial: a caller's, TryAcquire's and the ones
	// that keep MinIdle warm. Zero means 30 seconds; negative, no bound
	// (only Close ends a dial then). A dial that runs out fails like any
	// other: the ward's backoff spaces the next attempts, and MinIdle is
	// retried by the timer.
	DialTimeout time.Duration
	// AcquireTimeout, when positive, bounds how long an Acquire waits for a
	// resource, apart from its context: queued behind other callers, for
	// the dial made for it, held back by the ward (a Later). The wait ends
	// at the earlier of the acquire's start plus AcquireTimeout, on Clock,
	// and ctx's end; when the timeout comes first, Acquire returns an
	// *AcquireError whose Err is ErrAcquireTimeout (errors.Is(err,
	// ErrAcquireTimeout) and errors.Is(err, context.DeadlineExceeded)
	// hold, and ctx.Err() is still nil), counted in Stats.AcquireTimeouts
	// and Stats.Canceled. A dial the caller leaves goes on, and its
	// resource goes to the next caller or to idle. Check, run on a resource
	// about to be lent, is bounded by ctx alone. TryAcquire never waits.
	// Zero means no timeout (ctx alone bounds the wait, as in pgxpool and
	// database/sql).
	AcquireTimeout time.Duration
	// Close closes a resource the pool let go of. It never runs on a
	// caller's goroutine: every resource to close (one past the Idle
	// ceiling, a stale one an Acquire met, one that failed Check, a
	// Destroy, the eviction timer's, Close's) joins a queue that at most
	// Closers goroutines work through in order, so a Close that hangs holds
	// up other closes, never a caller. Stats.Closing and Stats.Closed count
	// them; Keeper.Close waits for the queue within its ctx. Its error is
	// logged at debug level; a panic is recovered and counted.
	Close func(v T) error
	// Closers is how many closes may run at once; zero means 4.
	Closers int
	// Check, when set, tests a resource about to be lent that sat idle
	// longer than CheckIdle, with the caller's context. An error drops and
	// closes the resource, and the Acquire goes on as if it had not been
	// there: the caller never sees it. When the caller's context ends during
	// the check, the Acquire returns at once and the check is run again in
	// the background on a context of its own (bounded by CheckIdle, at
	// least a second): the resource is kept only if that one passes, so a
	// check cut short never puts back a resource it may have broken.
	Check func(ctx context.Context, v T) error
	// CheckIdle is how long a resource may sit idle before Check runs on
	// borrow. Zero means one second (pgxpool's choice); negative, every
	// borrow.
	CheckIdle time.Duration
	// BeforeReuse, when set, runs on every Release, outside the lock,
	// before the resource is given back for reuse (a session reset, say);
	// an error destroys it instead. It never runs on a Destroy or Hijack.
	BeforeReuse func(ctx context.Context, v T) error
	// Classify says what an error a resource failed with means for it
	// and for the resources made with it (see Classifier, Keeper.Classify
	// and Loan.Reset): the drivers set it from their own Classify, which
	// is on by default. Nil answers Reuse for every error.
	Classify Classifier
	// MinIdle is how many idle resources the Keeper keeps warm, dialing in
	// the background (within Size, and within the ward's backoff and
	// breaker), at most warmDials at once. It must not exceed Limits.Size or
	// Limits.Idle when those are set.
	MinIdle int
	// MinLive is how many resources the Keeper keeps open, idle or lent,
	// dialing in the background when fewer are (pgxpool's MinConns): a
	// loan does not start a dial while the pool holds MinLive, and a
	// resource closed on return is replaced. With MinIdle both hold. The
	// same bounds apply: at most Limits.Size and Limits.Idle when set.
	MinLive int
	// Hold, when its For is positive, holds callers through a failover:
	// after a reset on the word of a resource (a Reset verdict, see
	// Loan.Reset), the Pool dials one resource at a time, at most one every
	// Hold.Every (DefaultHoldEvery: 100 ms), until one is made (the new
	// node) or Hold.For has passed, and the callers that come meanwhile
	// wait, within their contexts and AcquireTimeout, instead of each
	// dialing a node that is down or read-only and failing. A dial that
	// fails meanwhile does not fail its caller either: it waits for the
	// next. After For, callers dial and fail as without a hold. Zero holds
	// nothing, as pgxpool and go-redis do; Keeper.Reset and Rotate never
	// hold. Stats.Holding says a hold is on.
	Hold pool.Hold
	// LifeJitter lengthens each resource's Life by a draw in [0,
	// LifeJitter), so that resources made together do not retire together.
	LifeJitter time.Duration
	// LeakAfter, when positive, turns the leak watch on: each Acquire's call
	// stack is recorded, and a loan held longer is reported once to OnLeak,
	// and again when it comes back. Zero turns it off, and then it costs
	// nothing. The stack is recorded with runtime.Callers, which costs in
	// proportion to its depth, and symbolised only when a loan is reported.
	// A loan is reported within LeakAfter of becoming one, give or take the
	// timer's lateness.
	LeakAfter time.Duration
	// StallAfter is the stall watch's threshold: when callers have waited
	// longer than it and no loan has come back for as long (while loans are
	// out), the Keeper logs one warning on Logger (StallMessage) saying how
	// many callers wait, how many loans are held and where each holder
	// acquired, and counts it in Stats.Stalls; Stats.Stalled stays true
	// until a loan comes back, which ends the stall and re-arms the watch.
	// It reports a handler that acquires a second resource while it holds
	// one, with Size of them at once, as soon as the threshold has passed,
	// not when their contexts end. Its timer is set on Clock only while
	// callers wait. Zero means DefaultStallAfter (10 s); negative turns the
	// watch off.
	StallAfter time.Duration
	// StallSites, with the stall watch on, records each Acquire's call
	// site (its first frames, with runtime.Callers: about 300 ns an
	// Acquire, more than an uncontended loan costs without it) so that a
	// stall report says where each holder acquired.
	// With LeakAfter on, the leak watch's stacks say it, and StallSites
	// adds nothing. Off, the report says how many are held and how long.
	StallSites bool
	// OnLeak receives the leak reports; nil logs them at warning level on
	// Logger. It is called outside the lock, from the timer's goroutine or
	// the returning caller's, and a loan's return is never reported before
	// its leak.
	OnLeak func(Leak[T])
	// Logger is where the Keeper logs; nil means slog.Default().
	Logger *slog.Logger
	// Name names the pool in its errors (AcquireError, ShedError) and, by
	// default, in its metrics' pool label. Empty means "wardpool-N", N
	// counting the pools of the process from 1, as HikariCP names its
	// pools HikariPool-1.
	Name string
	// Clock is where the Keeper reads the time and sets its timers; nil
	// means the system's (time.Now, time.AfterFunc). The Keeper reads it
	// once per call and runs no goroutine of its own for it.
	Clock Clock
	// Rand draws numbers in [0, 1) for the breaker, the backoff's jitter and
	// LifeJitter; nil means math/rand/v2. It is called under the lock.
	Rand func() float64
	// CPU returns the host's CPU use in thousandths (0 to 1000). It is read
	// when the Keeper is built and every 250 ms after while the pool is in
	// use (a loan out or a caller waiting; an idle pool does not read it),
	// and only when Ward.Shedder is set; nil means a reader of the cgroup v2, cgroup v1 or
	// /proc/stat figures, which reads 0 (not hot) wherever they are missing
	// or make no sense.
	CPU func() int
	// Admission, when set, refuses at once an Acquire the pool predicts
	// is more likely than not to miss its context's deadline (its chance
	// of being served in time under 1/2, see Pool.Admit), instead of letting
	// it wait the deadline out (a *LateError, which errors.Is reads as
	// context.DeadlineExceeded): the pool predicts a queued caller's wait
	// from its place in the queue and the holds it has measured (see
	// Pool.Admit). Under overload, callers that would time out fail in
	// microseconds and the ones behind them are served sooner; a caller
	// with no deadline is never refused. Off by default.
	Admission bool
	// Recorder, when set, records every call the Keeper makes into its
	// Pool, for a replay to check (see package pool/record);
	// Keeper.Recording writes it out. Every loan is a Take and every
	// return a Give, so the recording holds each at its instant. NewKeeper
	// fails, with ErrConfig, for a ward the recorder cannot rebuild, or a
	// Recorder another pool holds (see record.Wrap). Nil records nothing,
	// at no cost.
	Recorder *record.Recorder
	// Shared holds the guards shared with other replicas through a store:
	// a fleet-wide connection budget, a shared breaker and a shared rate on
	// dials (see Shared).
	Shared Shared
	// Classes are classes of callers with room reserved and a ceiling
	// each (see pool.Class for the rule): a caller's class is the name
	// its context carries (WithClass), and one without belongs to the
	// default class, with no reserve and no ceiling of its own. Each
	// class has its queue, first come first served within it; when a
	// resource frees the Pool says which class's oldest waiter gets it
	// (pool.Pool.Serve). An unknown name is a *ClassError at once.
	// Stats.Classes has each class's books. NewKeeper fails, with
	// ErrConfig, for classes pool.ValidateClasses refuses against
	// Limits.Size. Nil: no classes, one queue, as without this field.
	Classes []pool.Class
}

// Defaults of the Config fields whose zero means "the usual".
const (
	defaultDialTimeout = 30 * time.Second
	defaultCheckIdle   = time.Second
	defaultClosers     = 4
	// warmDials is how many dials for MinIdle may run at once: enough to
	// warm a pool quickly, few enough not to storm a backend coming back.
	warmDials = 4
)

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
	case cfg.MinLive < 0:
		return bad("MinLive is %d, want 0 or more", cfg.MinLive)
	case l.Size > 0 && cfg.MinLive > l.Size:
		return bad("MinLive is %d, more than Limits.Size %d", cfg.MinLive, l.Size)
	case l.Idle > 0 && cfg.MinLive > l.Idle:
		return bad("MinLive is %d, more than Limits.Idle %d: the pool would close what it warmed", cfg.MinLive, l.Idle)
	case cfg.Hold.For < 0 || cfg.Hold.Every < 0:
		return bad("Hold is %+v, want no negative durations", cfg.Hold)
	case cfg.LifeJitter < 0:
		return bad("LifeJitter is %v, want 0 or more", cfg.LifeJitter)
	case cfg.AcquireTimeout < 0:
		return bad("AcquireTimeout is %v, want 0 (none) or more", cfg.AcquireTimeout)
	case cfg.LeakAfter < 0:
		return bad("LeakAfter is %v, want 0 (off) or more", cfg.LeakAfter)
	case cfg.Closers < 0:
		return bad("Closers is %d, want 0 (the default) or more", cfg.Closers)
	}
	p, err := pool.New[T](l, cfg.Ward)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := p.SetClasses(cfg.Classes); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	set := settings[T]{
		dial:        cfg.Dial,
		close:       cfg.Close,
		closers:     cfg.Closers,
		dialTimeout: cfg.DialTimeout,
		acqTimeout:  cfg.AcquireTimeout,
		check:       cfg.Check,
		checkIdle:   cfg.CheckIdle,
		admission:   cfg.Admission,
		reuse:       cfg.BeforeReuse,
		classify:    cfg.Classify,
		minIdle:     cfg.MinIdle,
		minLive:     cfg.MinLive,
		hold:        cfg.Hold,
		jitter:      cfg.LifeJitter,
		leakAfter:   cfg.LeakAfter,
		stallAfter:  cfg.StallAfter,
		onLeak:      cfg.OnLeak,
		log:         cfg.Logger,
		name:        cfg.Name,
		clock:       cfg.Clock,
		rand:        cfg.Rand,
		cpuRead:     cfg.CPU,
		needRoll:    cfg.Ward.Breaker != nil || cfg.Ward.Backoff != nil,
		shedder:     cfg.Ward.Shedder != nil,
	}
	if set.checkIdle == 0 {
		set.checkIdle = defaultCheckIdle
	}
	if set.dialTimeout == 0 {
		set.dialTimeout = defaultDialTimeout
	}
	switch {
	case set.stallAfter == 0:
		set.stallAfter = DefaultStallAfter
	case set.stallAfter < 0:
		set.stallAfter = 0 // off
	}
	set.stallSites = cfg.StallSites && set.stallAfter > 0 && set.leakAfter == 0
	if set.closers == 0 {
		set.closers = defaultClosers
	}
	if set.log == nil {
		set.log = slog.Default()
	}
	if set.name == "" {
		set.name = poolname.Default("wardpool", "")
	}
	if set.clock == nil {
		set.sys = newSystemClock()
		set.clock = set.sys
	}
	set.epoch = set.clock.Now()
	if set.rand == nil {
		set.rand = rand.Float64
	}
	if set.shedder && set.cpuRead == nil {
		set.cpuRead = newCPUReader().read
	}
	var m machine[T] = p
	var rec *record.Pool[T]
	direct := p
	if cfg.Recorder != nil {
		if rec, err = record.Wrap(p, cfg.Recorder, set.clock.Now()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		m, direct = rec, nil
	}
	k := &Keeper[T]{
		settings: set,
		p:        m,
		rec:      rec,
		pool:     direct,
		limits:   l,
		ceiling:  -1,
		quiet:    make(chan struct{}),
		drained:  make(chan struct{}),
	}
	k.setClasses(cfg.Classes) // classq.go
	k.spare.New = func() any { return &waiter[T]{ch: make(chan grant[T], 1)} }
	k.ctx, k.cancel = context.WithCancel(context.Background())
	k.startShared(cfg.Shared)
	if k.shedder {
		// A first reading now: the shedder sees the CPU from the start
		// (the built-in reader's first reading is its baseline, 0).
		k.setCPU(k.safeCPU())
	}
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	k.topUpLocked(now, &fx)
	k.unlockDo(&fx)
	return k, nil
}
