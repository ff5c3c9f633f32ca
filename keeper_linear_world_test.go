package wardpool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// The histories of the linearizability check (see keeper_linear_test.go):
// a Keeper under random stress, its dials and hooks faked, and every call
// recorded with the instants it began and ended.

// The recorder.

type linCtxKey struct{}

// linGateKey carries, in a TryAcquire's context, the gate its background
// dial waits at: opened by the driver (between, straddle, openGates), so
// that the dial lands while the calls of a later phase run, or as the
// clock moves.
type linGateKey struct{}

// linGate is where a held dial waits: open is closed to let it go; waiting
// says a dial is there (a TryAcquire that started none leaves its gate
// empty). Guarded by linWorld.mu.
type linGate struct {
	open    chan struct{}
	waiting bool
}

// linRecorder collects one history as it runs.
type linRecorder struct {
	clock atomic.Int64 // logical instants: begin and end of each call

	mu    sync.Mutex
	ops   []porcupine.Operation
	dials []linDial
	n     int

	resetFails map[int]bool // resources whose next Config.Reset fails
	checks     []linCheck   // the failed Config.Check calls of the round, in order
	samples    int          // the CPU sampler's runs, which are no operations
	straddles  int          // landings under way as the clock moved (linWorld.straddle)
	nudges     int          // the clock moved for a round stuck on it (linWorld.watch)
}

// linCheck is a failed Config.Check call: for which operation, on which
// resource, when it began and ended.
type linCheck struct {
	n, id     int
	call, ret int64
}

// linDial is a dial: for which operation, which resource (none when the
// backend refused it as full), when it returned.
type linDial struct {
	n, id   int
	ret     int64
	refused bool
	down    bool // failed, not refused as full
}

func (r *linRecorder) tick() int64 { return r.clock.Add(1) }

// next numbers an operation and returns a context that carries its number
// to the dial.
func (r *linRecorder) next() (int, context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return r.n, context.WithValue(context.Background(), linCtxKey{}, r.n)
}

func (r *linRecorder) add(client int, in linIn, call, ret int64, out linOut) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// dialed is the resource dialed for operation n, 0 if none, and how many
// of its dials the backend refused as full.
func (r *linRecorder) dialed(n int) (id, refused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dialedLocked(n)
}

func (r *linRecorder) dialedLocked(n int) (id, refused int) {
	for _, d := range r.dials {
		switch {
		case d.n != n:
		case d.refused:
			refused++
		default:
			id = d.id
		}
	}
	return id, refused
}

// linWorld is one run: the Keeper, its fakes, the recorder.
type linWorld struct {
	k      *Keeper[*res]
	clock  *linClock
	rec    *linRecorder
	nextID atomic.Int64
	closes sync.Map // *res -> closed
	twice  atomic.Int64

	// The round's barrier: workers that finished their round release their
	// loans while someone is blocked (in Acquire or Close), so that nobody
	// waits for a loan held across the barrier.
	mu      sync.Mutex
	cond    *sync.Cond
	workers int
	arrived int
	blocked int
	holders int // workers arrived that still hold loans

	checkFails *rand.Rand // guarded by rec.mu
	resetHook  bool       // Config.Reset is set
	// refuse draws which dials the backend refuses as full, in the full
	// class, or which fail (down), in the held class; nil in the others.
	// Guarded by rec.mu.
	refuse *rand.Rand
	down   bool
	// failover: the held class, whose workers call Loan.Reset.
	failover bool

	// The fresh class (issue 32): its calls, and the gates its
	// TryAcquires' background dials wait at, oldest first (guarded by mu).
	fresh bool
	gates []*linGate

	// What SetLimits may draw: Size up to maxSize (a limiter held at the
	// configured Size must stay the pool's own bound), ages only where the
	// configuration draws them.
	maxSize int
	ages    bool
}

func errKind(err error) linErr {
	switch {
	case err == nil:
		return linNone
	case errors.Is(err, ErrClosed):
		return linClosed
	case errors.Is(err, ErrWouldWait):
		return linWouldWait
	case errors.As(err, new(*ShedError)):
		return linShed
	}
	return linOther
}

// linConfig is what a history runs with, drawn from its seed.
type linConfig struct {
	limits pool.Limits
	ages   bool          // Keep and Life may be drawn (by SetLimits too)
	step   time.Duration // the clock's step between rounds
	// edges draws each round's step from 0, 3 s, Keep, Keep + 1 ns and
	// 25 s instead, and runs the timers due after it each on a goroutine
	// of its own: the class in which a resource idle past Keep was once
	// lent (a Give that reached the pool late).
	edges     bool
	workers   int
	rounds    int
	closeIn   int           // the round in which a worker closes the Keeper; -1: none
	resetHook bool          // Config.Reset set, failing when the releaser says so
	checkHook bool          // Config.Check set on every borrow, failing a quarter of the time
	leakWatch time.Duration // LeakAfter: 0, a second (leaks reported mid-history) or an hour
	// fresh is issue 32's class (drawLinFreshConfig): phases of
	// Acquire, TryAcquire, Release and Destroy, the clock moved between
	// them by edges' steps while background dials are still on their way.
	fresh bool
	// full is the full backend's class (drawLinFullConfig): the fresh
	// class, with a dial in three refused as full (Config.Classify
	// says Full), and the clock's steps drawn about the room's second.
	full bool
	// hold is the held class's Config.Hold (drawLinHoldConfig): the
	// fresh class, with Loan.Reset among the calls and a dial in four
	// failing.
	hold       pool.Hold
	checkFails *rand.Rand
	guards     linGuards
}

// linGuards is the ward of a history: none, a limiter, or a limiter and a
// shedder asked with a CPU reading that stays the same all along (cold, so
// that it never refuses; or hot, so that it weighs every loan).
type linGuards struct {
	limit *ward.Aimd
	shed  bool
	cpu   int
}

// ward builds the guards afresh, the shedder's window opening at start.
func (g linGuards) ward(start time.Time) ward.Ward {
	var w ward.Ward
	if g.limit != nil {
		w.Limiter = ward.NewLimiter(*g.limit)
	}
	if g.shed {
		p := ward.DefaultShed
		p.Size, p.Window, p.Latency = 4, 4*time.Second, 500*time.Millisecond
		// No floor: hot (the CPU at 1000), the shedder's capacity is 0,
		// and it refuses exactly when a call is in flight and its moving
		// average is above 0. With a floor, its answers hang on the
		// average's exact value, which moves at every ask: and the Keeper
		// asks the pool more often than one step of the specification per
		// operation says (a queued caller each time the queue is served;
		// a Take the limiter answers Wait has asked the shedder first).
		// About one history in 150,000 failed so.
		p.Floor = 0
		w.Shedder = ward.NewShedder(p, start)
	}
	return w
}

func (g linGuards) String() string {
	s := ""
	if g.limit != nil {
		s += fmt.Sprintf(" limiter=%d/%d..%d/slow=%v", g.limit.Initial, g.limit.Min, g.limit.Max, g.limit.Slow)
	}
	if g.shed {
		s += fmt.Sprintf(" shedder/cpu=%d", g.cpu)
	}
	return s
}

func (c linConfig) String() string {
	return fmt.Sprintf("size=%d idle=%d keep=%v life=%v step=%v workers=%d resethook=%v checkhook=%v leakwatch=%v%v",
		c.limits.Size, c.limits.Idle, c.limits.Keep, c.limits.Life, c.step, c.workers, c.resetHook, c.checkHook, c.leakWatch, c.guards) + map[bool]string{true: " edges", false: ""}[c.edges] + map[bool]string{true: " fresh", false: ""}[c.fresh] + map[bool]string{true: " full", false: ""}[c.full] + map[bool]string{true: fmt.Sprintf(" hold=%v/%v", c.hold.For, c.hold.Every), false: ""}[c.hold.For > 0]
}

// drawLinHoldConfig draws a configuration of the held class: the fresh
// class's (drawLinFreshConfig), with Config.Hold (For 3 s or 10 s, Every
// 500 ms or 1 s), Loan.Reset among the workers' calls, a dial in four
// failing, and the clock's steps drawn about Every and For.
func drawLinHoldConfig(r *rand.Rand) linConfig {
	c := drawLinFreshConfig(r)
	c.hold = pool.Hold{
		For:   []time.Duration{3 * time.Second, 10 * time.Second}[r.IntN(2)],
		Every: []time.Duration{500 * time.Millisecond, time.Second}[r.IntN(2)],
	}
	return c
}

// drawLinFullConfig draws a configuration of the full backend's class:
// the fresh class's (drawLinFreshConfig), a third of the dials refused as
// full, the clock's steps drawn from 0, 999 ms, 1 s, 3 s, Keep and Keep +
// 1 ns (the room grows a second after a refusal).
func drawLinFullConfig(r *rand.Rand) linConfig {
	c := drawLinFreshConfig(r)
	c.full = true
	return c
}

// errLinFull is the error of a dial the backend refused for want of room;
// linClassify calls it Full.
var errLinFull = errors.New("too many clients")

// errLinDown is the error of a dial that failed, and of a resource whose
// generation is condemned (Loan.Reset), in the held class.
var errLinDown = errors.New("node down")

func linClassify(err error) (Verdict, string) {
	if errors.Is(err, errLinFull) {
		return Full, "full"
	}
	return Reuse, ""
}

// drawLinConfig draws a configuration of the general class from r.
func drawLinConfig(r *rand.Rand) linConfig {
	size := 1 + r.IntN(4)
	c := linConfig{
		limits: pool.Limits{
			Size: size,
			Keep: []time.Duration{0, time.Second, 2 * time.Second}[r.IntN(3)],
			Life: []time.Duration{0, 2 * time.Second, 3 * time.Second}[r.IntN(3)],
		},
		step:      []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}[r.IntN(3)],
		workers:   2 + r.IntN(7),
		rounds:    2 + r.IntN(4),
		closeIn:   -1,
		resetHook: r.IntN(2) == 0,
		checkHook: r.IntN(3) == 0,
	}
	if r.IntN(4) == 0 {
		c.closeIn = r.IntN(c.rounds)
	}
	if r.IntN(3) == 0 {
		c.edges = true
		c.limits.Keep = 10 * time.Second
		c.limits.Life = []time.Duration{0, 30 * time.Second}[r.IntN(2)]
		c.rounds += 2
	}
	c.limits.Idle = r.IntN(size + 1)
	c.leakWatch = []time.Duration{0, time.Second, time.Hour}[r.IntN(3)]
	c.checkFails = rand.New(rand.NewPCG(r.Uint64(), 0))
	// Drawn last, so that the draws above are those of the histories
	// checked before there were guards.
	ages := true
	switch r.IntN(6) {
	case 1:
		// A limiter that binds, with ages: an Acquire that meets a stale
		// resource retires it and may then queue behind the limiter; the
		// specification's queue holds it there.
		c.guards.limit = &ward.Aimd{Initial: 1 + r.IntN(size), Min: 1, Max: size,
			Slow: []time.Duration{0, time.Second, 3 * time.Second}[r.IntN(3)], Backoff: 0.5}
	case 2:
		c.guards.limit = &ward.Aimd{Initial: 1 + r.IntN(size), Min: 1, Max: size, Slow: time.Second, Backoff: 0.5}
		c.guards.shed = true
		c.guards.cpu = []int{0, 0, 1000}[r.IntN(3)]
		ages = false
	case 3:
		// A cold shedder alone: it never refuses, so ages may be drawn
		// (see below).
		c.guards.shed = true
	case 4:
		// A limiter held at Size, with or without a cold shedder: it
		// never answers Wait where the pool itself would not (while a
		// resource is idle, fewer than Size are out), so ages may be
		// drawn.
		c.guards.limit = &ward.Aimd{Initial: size, Min: size, Max: size,
			Slow: []time.Duration{0, time.Second, 3 * time.Second}[r.IntN(3)], Backoff: 0.5}
		c.guards.shed = r.IntN(2) == 0
	}
	if !ages {
		// No ages with a hot shedder beside the limiter: its answers hang
		// on a moving average every ask moves, and the Keeper asks for a
		// queued caller at points one step of the specification cannot
		// place exactly.
		c.limits.Keep, c.limits.Life = 0, 0
	}
	c.ages = ages
	return c
}

// drawLinFreshConfig draws a configuration of issue 32's class, where the
// lane once lent a resource that had sat idle 25 s with Keep 10 s: Size 2
// to 4; Keep 10 s, and Life none, 25 s or 30 s; Idle 0 (no ceiling) half
// the time, else below Size or at it; two to four workers calling
// Acquire, TryAcquire, Release and Destroy at once, in four to eight
// phases, the clock moved between phases by 0, 3 s, Keep, Keep + 1 ns or
// 25 s. A TryAcquire's background dial is held until a later phase, or
// the end: it lands after the clock moved, while other calls run.
func drawLinFreshConfig(r *rand.Rand) linConfig {
	size := 2 + r.IntN(3)
	c := linConfig{
		limits: pool.Limits{
			Size: size,
			Keep: 10 * time.Second,
			Life: []time.Duration{0, 0, 25 * time.Second, 30 * time.Second}[r.IntN(4)],
		},
		edges:     true,
		fresh:     true,
		workers:   2 + r.IntN(3),
		rounds:    4 + r.IntN(5),
		closeIn:   -1,
		resetHook: r.IntN(4) == 0,
	}
	if r.IntN(2) == 1 {
		c.limits.Idle = 1 + r.IntN(size)
	}
	c.checkFails = rand.New(rand.NewPCG(r.Uint64(), 0))
	return c
}

// newLinWorld builds a Keeper for c on the fakes, recording into a new
// history.
func newLinWorld(t testing.TB, c linConfig, seed uint64) (*linWorld, *linHistory) {
	rec := &linRecorder{resetFails: map[int]bool{}}
	w := &linWorld{clock: newLinClock(rec), rec: rec, workers: c.workers, checkFails: c.checkFails,
		maxSize: 4, ages: c.ages && !c.edges, fresh: c.fresh}
	if c.guards.limit != nil {
		w.maxSize = c.limits.Size
	}
	w.cond = sync.NewCond(&w.mu)
	h := &linHistory{seed: seed, limits: c.limits, start: w.clock.Now(), cfg: c.String(), guards: c.guards, checks: c.checkHook, full: c.full, hold: c.hold}
	cfg := Config[*res]{
		Limits: c.limits,
		Dial:   w.dial,
		Close:  w.close,
		Clock:  w.clock,
		Rand:   func() float64 { return 0.5 },
		OnLeak: func(Leak[*res]) {},
		Logger: quietLogger(),
		// The stall watch decides nothing of the pool's, and the harness
		// would read each of its timer runs as the eviction timer's.
		StallAfter: -1,
	}
	cfg.LeakAfter = c.leakWatch
	cfg.Ward = c.guards.ward(h.start)
	w.clock.sampler = c.guards.shed
	if c.guards.shed {
		cfg.CPU = func() int { return c.guards.cpu }
	}
	if c.resetHook {
		cfg.BeforeReuse, w.resetHook = w.resetFails, true
	}
	if c.checkHook {
		cfg.Check, cfg.CheckIdle = w.checkHook, -1
	}
	if c.full {
		cfg.Classify = linClassify
		w.refuse = rand.New(rand.NewPCG(seed, 0xf011))
	}
	if c.hold.For > 0 {
		cfg.Hold = c.hold
		w.refuse, w.down, w.failover = rand.New(rand.NewPCG(seed, 0xd0e1)), true, true
	}
	k, err := NewKeeper(cfg)
	if err != nil {
		t.Fatalf("NewKeeper(%s): %v", h.cfg, err)
	}
	w.k = k
	return w, h
}

// recordLinear runs one random history of the configuration draw draws
// from its seed (drawLinConfig, drawLinFreshConfig).
func recordLinear(t *testing.T, seed uint64, draw func(*rand.Rand) linConfig) *linHistory {
	r := rand.New(rand.NewPCG(seed, 0x11ea))
	c := draw(r)
	w, h := newLinWorld(t, c, seed)
	loans := make([][]Loan[*res], c.workers)
	closed := false
	for round := range c.rounds {
		last := round == c.rounds-1 || round == c.closeIn
		w.arrived, w.holders = 0, 0
		var wg sync.WaitGroup
		stop := w.watch(c.full || c.hold.For > 0)
		for g := range c.workers {
			wg.Add(1)
			rg := rand.New(rand.NewPCG(seed, uint64(round*16+g)))
			closer := round == c.closeIn && g == 0
			go func() {
				defer wg.Done()
				w.work(g, rg, &loans[g], 1+rg.IntN(3), closer, last)
			}()
		}
		wg.Wait()
		stop()
		// The fresh class waits for its dials only now and then: until
		// it does, they may land at any point of the phases to come,
		// before or after the clock moves (see linWorld.between).
		if !c.fresh || last || r.IntN(3) == 0 {
			w.openGates()
			w.endRound(t)
		}
		if round == c.closeIn {
			closed = true
		}
		if last {
			break
		}
		d := c.step
		switch {
		case c.full:
			d = []time.Duration{0, time.Second - 1, time.Second, 3 * time.Second, c.limits.Keep, c.limits.Keep + 1}[r.IntN(6)]
		case c.hold.For > 0:
			d = []time.Duration{0, c.hold.Every - 1, c.hold.Every, c.hold.For, 3 * time.Second, c.limits.Keep + 1}[r.IntN(6)]
		case c.edges:
			d = []time.Duration{0, 3 * time.Second, c.limits.Keep, c.limits.Keep + 1, 25 * time.Second}[r.IntN(5)]
		}
		if !c.fresh || r.IntN(2) == 0 || !w.straddle(t, r, loans, d) {
			w.advance(d)
		}
		if c.fresh {
			w.between(r)
		} else if c.edges {
			w.clock.fireEach(c.workers + 1)
		} else if r.IntN(3) == 0 {
			// On time; otherwise the timers run late, during the next
			// round, when a worker runs them.
			w.clock.fire(c.workers)
		}
	}
	w.finish(t, h, closed)
	return h
}

// advance moves the clock d on, an operation of its own.
func (w *linWorld) advance(d time.Duration) {
	call := w.rec.tick()
	w.clock.step(d)
	w.rec.add(w.workers, linIn{kind: linAdvance, d: d}, call, w.rec.tick(), linOut{})
}

// straddle moves the clock d on while a dial's landing is under way, in
// the fresh class: it lets one held dial go, holds the next reading of
// the clock (between rounds, with the timers run, only a landing reads it:
// this one, once it holds the runtime's lock, in the runtime as it is),
// has a worker give back a loan meanwhile (a return that finds the lock
// held), moves the clock, and lets the landing read it. The landing spans the move; so does the Release, unless it returned
// first, without waiting for the lock (it is given some scheduling rounds
// to). This is issue 32's schedule: a resource given back at t = 0
// reached the Pool from the lane's inbox after the landing had shown the
// Pool t = 25 s, and was lent as if given back then. It reports false,
// doing nothing, when no dial is held or no loan is out.
func (w *linWorld) straddle(t testing.TB, r *rand.Rand, loans [][]Loan[*res], d time.Duration) bool {
	var holders []int
	for g := range loans {
		if len(loans[g]) > 0 {
			holders = append(holders, g)
		}
	}
	w.mu.Lock()
	i := slices.IndexFunc(w.gates, func(g *linGate) bool { return g.waiting })
	if i < 0 || len(holders) == 0 {
		w.mu.Unlock()
		return false
	}
	gate := w.gates[i]
	w.gates = slices.Delete(w.gates, i, i+1)
	hold := w.clock.holdNext()
	close(gate.open)
	w.mu.Unlock()
	clocktest.Eventually(t, "a landing to read the clock", func() bool {
		select {
		case <-hold.held:
			return true
		default:
			return false
		}
	})
	g := holders[r.IntN(len(holders))]
	rg := rand.New(rand.NewPCG(r.Uint64(), 0))
	var done atomic.Bool
	go func() {
		w.releaseOp(g, rg, &loans[g])
		done.Store(true)
	}()
	for i := 0; i < 1000 && !done.Load(); i++ {
		runtime.Gosched()
	}
	w.advance(d)
	close(hold.release)
	clocktest.Eventually(t, "the Release to return", done.Load)
	w.rec.mu.Lock()
	w.rec.straddles++
	w.rec.mu.Unlock()
	return true
}

// between is what the fresh class does once the clock has moved, before
// the next phase: it lets each held dial go with even odds (it lands
// while the timers run, or the next phase's calls do), and runs the
// timers due on time (a third of the time on a goroutine each, a sixth
// on one), or leaves them for a worker to run late.
func (w *linWorld) between(r *rand.Rand) {
	w.mu.Lock()
	kept := w.gates[:0]
	for _, g := range w.gates {
		if r.IntN(2) == 0 {
			close(g.open)
		} else {
			kept = append(kept, g)
		}
	}
	w.gates = kept
	w.mu.Unlock()
	switch r.IntN(6) {
	case 0, 1:
		w.clock.fireEach(w.workers + 1)
	case 2:
		w.clock.fire(w.workers)
	}
}

// openGates lets every held dial go.
func (w *linWorld) openGates() {
	w.mu.Lock()
	w.openGatesLocked()
	w.mu.Unlock()
}

func (w *linWorld) openGatesLocked() {
	for _, g := range w.gates {
		close(g.open)
	}
	w.gates = nil
}

// endRound waits for the background dials to land, and adds their
// landings and the failed checks to the history.
func (w *linWorld) endRound(t testing.TB) {
	clocktest.Eventually(t, "dials to land", func() bool { return settled(w.k) })
	end := w.rec.tick()
	w.rec.mu.Lock()
	w.splitChecks()
	w.landings(end)
	w.rec.mu.Unlock()
}

// finish closes the Keeper (recording the Close unless closed already),
// checks that every resource dialed was closed once, and hands the
// history to h.
func (w *linWorld) finish(t testing.TB, h *linHistory, closed bool) {
	if !closed {
		n, _ := w.rec.next()
		call := w.rec.tick()
		err := w.k.Close(context.Background())
		w.rec.add(w.workers, linIn{kind: linClose, n: n}, call, w.rec.tick(), linOut{err: errKind(err)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.k.Close(ctx); err != nil {
		t.Fatalf("%s: Close: %v", h.cfg, err)
	}
	// Every resource dialed was closed, once.
	var dialed, shut []int
	for id := 1; id <= int(w.nextID.Load()); id++ {
		dialed = append(dialed, id)
	}
	w.closes.Range(func(v, _ any) bool { shut = append(shut, v.(*res).id); return true })
	slices.Sort(shut)
	if diff := cmp.Diff(dialed, shut); diff != "" || w.twice.Load() != 0 {
		t.Fatalf("%s: resources dialed and closed differ (-dialed +closed):\n%s%d closed twice", h.cfg, diff, w.twice.Load())
	}
	h.ops = w.rec.ops
	h.samples, h.straddles, h.nudges = w.rec.samples, w.rec.straddles, w.rec.nudges
}

// splitChecks turns each Acquire or TryAcquire whose Config.Check failed
// into a chain: an attempt that took the resource (from the call's
// beginning to the check's), the drop that follows the check (from the
// check's beginning to the call's end), and the call's last attempt with
// its output (from the check's end to the call's).
// Called with rec.mu held.
func (w *linWorld) splitChecks() {
	rec := w.rec
	if len(rec.checks) == 0 {
		return
	}
	var ops []porcupine.Operation
	for _, o := range rec.ops {
		in := o.Input.(linIn)
		from := o.Call
		for _, c := range rec.checks {
			if c.n != in.n || (in.kind != linAcquire && in.kind != linTry) {
				continue
			}
			ops = append(ops,
				porcupine.Operation{ClientId: o.ClientId, Input: linIn{kind: linAttempt, n: in.n}, Call: from, Output: linOut{id: c.id}, Return: c.call},
				// The Keeper drops the resource after the check returned:
				// by the end of the call, which comes later.
				porcupine.Operation{ClientId: o.ClientId, Input: linIn{kind: linCheckFail, n: in.n, id: c.id}, Call: c.call, Output: linOut{}, Return: o.Return})
			from = c.ret
		}
		o.Call = from
		ops = append(ops, o)
	}
	rec.ops, rec.checks = ops, rec.checks[:0]
}

// landings adds a landing operation for every dial, from its return to the
// end of the Acquire it was for (which got the resource, or ErrClosed) or to
// end, the end of the round, for a background dial. Called with rec.mu held.
func (w *linWorld) landings(end int64) {
	rec := w.rec
	byN := map[int]int{}
	for i, o := range rec.ops {
		byN[o.Input.(linIn).n] = i
	}
	seen := map[int]int{} // refusals of each operation so far
	for _, d := range rec.dials {
		i, known := byN[d.n]
		if d.refused {
			seen[d.n]++
			// Its call's output learns how many were refused (a
			// TryAcquire's only now); the refusal may have come as late
			// as the round's end, for a caller a return served.
			ret := end
			if known {
				o := rec.ops[i]
				out := o.Output.(linOut)
				_, out.refused = rec.dialedLocked(d.n)
				rec.ops[i].Output = out
				// An Acquire dialed again after any refusal but its last,
				// and had its last before it returned unless a return
				// served it while that dial was on its way.
				byReturn := out.err == linNone && out.dialed == 0
				if o.Input.(linIn).kind == linAcquire && (seen[d.n] < out.refused || !byReturn) {
					ret = o.Return
				}
			}
			rec.ops = append(rec.ops, porcupine.Operation{
				ClientId: 1<<20 + len(rec.ops), // a client of its own
				Input:    linIn{kind: linRefuse, n: d.n, down: d.down},
				Call:     d.ret,
				Return:   ret,
				Output:   linOut{},
			})
			continue
		}
		var o porcupine.Operation
		if known {
			// A TryAcquire's dial may start after the call returned: its
			// output learns of it here.
			o = rec.ops[i]
			out := o.Output.(linOut)
			out.dialed = d.id
			rec.ops[i].Output = out
		}
		// Its Acquire's own dial, unless the Acquire was served by a
		// return while the dial was in flight: then it lands for nobody,
		// as a background one.
		own := known && o.Input.(linIn).kind == linAcquire
		if out := o.Output.(linOut); own && out.err == linNone && out.id != d.id {
			own = false
		}
		ret := end
		if own {
			ret = o.Return
		}
		rec.ops = append(rec.ops, porcupine.Operation{
			ClientId: 1000 + d.id,
			Input:    linIn{kind: linLand, n: d.n, id: d.id, own: own},
			Call:     d.ret,
			Return:   ret,
			Output:   linOut{},
		})
	}
	rec.dials = rec.dials[:0]
}

// work is worker g's part of a round: ops calls, then the barrier; in the
// last round it releases everything it holds.
func (w *linWorld) work(g int, r *rand.Rand, loans *[]Loan[*res], ops int, closer, last bool) {
	rec := w.rec
	closeAt := -1
	if closer {
		closeAt = r.IntN(ops)
	}
	for i := range ops {
		if w.fresh {
			w.freshOp(g, r, loans)
			continue
		}
		held := len(*loans)
		x := r.IntN(100)
		switch {
		case i == closeAt:
			for len(*loans) > 0 { // Close waits for every loan, this one's too
				w.releaseOp(g, r, loans)
			}
			w.closeOp(g)
		case held == 0 && x < 60:
			w.acquireOp(g, loans)
		case held > 0 && x < 45:
			w.releaseOp(g, r, loans)
		case held > 0 && x < 55:
			w.destroyOp(g, r, loans)
		case x < 88:
			if held < 3 {
				w.tryOp(g, loans)
			}
		case x < 91:
			w.clock.fire(g)
		case x < 95:
			w.statsOp(g)
		case x < 98:
			n, _ := rec.next()
			call := rec.tick()
			w.k.Reset()
			rec.add(g, linIn{kind: linReset, n: n}, call, rec.tick(), linOut{})
		default:
			w.setLimitsOp(g, r)
		}
	}
	w.mu.Lock()
	w.arrived++
	if len(*loans) > 0 {
		w.holders++
	}
	w.cond.Broadcast()
	for {
		if last && len(*loans) > 0 || w.blocked > 0 && len(*loans) > 0 {
			w.mu.Unlock()
			w.releaseOp(g, r, loans)
			w.mu.Lock()
			if len(*loans) == 0 {
				w.holders--
			}
			continue
		}
		if w.arrived == w.workers {
			break
		}
		w.unstickLocked()
		w.cond.Wait()
	}
	w.mu.Unlock()
}

// freshOp is one call of worker g in the fresh class: Acquire when it
// holds nothing, TryAcquire (for a first or a second loan), Release or
// Destroy; or it runs the timers due, late.
func (w *linWorld) freshOp(g int, r *rand.Rand, loans *[]Loan[*res]) {
	held := len(*loans)
	x := r.IntN(100)
	switch {
	case held == 0 && x < 45:
		w.acquireOp(g, loans)
	case held > 0 && x < 60:
		w.releaseOp(g, r, loans)
	case held > 0 && x < 72:
		if w.failover && x >= 64 {
			w.failoverOp(g, r, loans)
			break
		}
		w.destroyOp(g, r, loans)
	case x < 94:
		if held < 2 {
			w.tryOp(g, loans)
		}
	default:
		w.clock.fire(g)
	}
}

// tryOp is a TryAcquire; in the fresh class its background dial, if it
// starts one, waits at a gate of its own.
func (w *linWorld) tryOp(g int, loans *[]Loan[*res]) {
	rec := w.rec
	n, ctx := rec.next()
	if w.fresh {
		gate := &linGate{open: make(chan struct{})}
		w.mu.Lock()
		w.gates = append(w.gates, gate)
		w.mu.Unlock()
		ctx = context.WithValue(ctx, linGateKey{}, gate)
	}
	call := rec.tick()
	l, err := w.k.TryAcquire(ctx)
	ret := rec.tick()
	out := linOut{err: errKind(err)}
	out.dialed, out.refused = rec.dialed(n)
	if err == nil {
		out.id = l.Value().id
		*loans = append(*loans, l)
	}
	rec.add(g, linIn{kind: linTry, n: n}, call, ret, out)
}

// statsOp reads the Keeper's books.
func (w *linWorld) statsOp(g int) {
	rec := w.rec
	n, _ := rec.next()
	call := rec.tick()
	s := w.k.Stats()
	rec.add(g, linIn{kind: linStats, n: n}, call, rec.tick(), linOut{books: linBooks(s.Books)})
}

// setLimitsOp applies limits drawn from r to the running Keeper.
func (w *linWorld) setLimitsOp(g int, r *rand.Rand) {
	rec := w.rec
	l := pool.Limits{Size: 1 + r.IntN(w.maxSize)}
	l.Idle = r.IntN(l.Size + 1)
	if w.ages {
		l.Keep = []time.Duration{0, time.Second, 2 * time.Second}[r.IntN(3)]
		l.Life = []time.Duration{0, 2 * time.Second, 3 * time.Second}[r.IntN(3)]
	}
	n, _ := rec.next()
	call := rec.tick()
	err := w.k.SetLimits(l)
	rec.add(g, linIn{kind: linSetLimits, n: n, lim: l}, call, rec.tick(), linOut{err: errKind(err)})
}

func (w *linWorld) block(d int) {
	w.mu.Lock()
	w.blocked += d
	w.unstickLocked()
	w.cond.Broadcast()
	w.mu.Unlock()
}

// unstickLocked lets every held dial go when some worker is blocked and
// the others have all arrived at the barrier with nothing left to give
// back: what the blocked wait for may be a held dial. (When it is not, the
// dials land a little earlier than drawn.) An Acquire is made only by a
// worker that holds nothing, so a blocked worker has nothing to give
// either.
func (w *linWorld) unstickLocked() {
	if w.blocked > 0 && w.arrived+w.blocked == w.workers && w.holders == 0 {
		w.openGatesLocked()
	}
}

func (w *linWorld) acquireOp(g int, loans *[]Loan[*res]) {
	rec := w.rec
	n, ctx := rec.next()
	w.block(1)
	call := rec.tick()
	l, err := w.k.Acquire(ctx)
	ret := rec.tick()
	w.block(-1)
	out := linOut{err: errKind(err)}
	out.dialed, out.refused = rec.dialed(n)
	if err == nil {
		out.id = l.Value().id
		*loans = append(*loans, l)
	}
	rec.add(g, linIn{kind: linAcquire, n: n}, call, ret, out)
}

func (w *linWorld) closeOp(g int) {
	rec := w.rec
	n, _ := rec.next()
	w.block(1)
	call := rec.tick()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := w.k.Close(ctx)
	cancel()
	ret := rec.tick()
	w.block(-1)
	rec.add(g, linIn{kind: linClose, n: n}, call, ret, linOut{err: errKind(err)})
}

func (w *linWorld) releaseOp(g int, r *rand.Rand, loans *[]Loan[*res]) {
	rec := w.rec
	i := r.IntN(len(*loans))
	l := (*loans)[i]
	*loans = slices.Delete(*loans, i, i+1)
	id := l.Value().id
	fail := w.resetHook && r.IntN(4) == 0
	if fail {
		rec.mu.Lock()
		rec.resetFails[id] = true
		rec.mu.Unlock()
	}
	n, _ := rec.next()
	call := rec.tick()
	l.Release()
	rec.add(g, linIn{kind: linRelease, n: n, id: id, fail: fail}, call, rec.tick(), linOut{})
}

// failoverOp ends a loan with Loan.Reset: its resource's word that the
// generation it was made in is condemned.
func (w *linWorld) failoverOp(g int, r *rand.Rand, loans *[]Loan[*res]) {
	rec := w.rec
	i := r.IntN(len(*loans))
	l := (*loans)[i]
	*loans = slices.Delete(*loans, i, i+1)
	n, _ := rec.next()
	call := rec.tick()
	l.Reset("failover", errLinDown)
	rec.add(g, linIn{kind: linFailover, n: n, id: l.Value().id}, call, rec.tick(), linOut{})
}

func (w *linWorld) destroyOp(g int, r *rand.Rand, loans *[]Loan[*res]) {
	rec := w.rec
	i := r.IntN(len(*loans))
	l := (*loans)[i]
	*loans = slices.Delete(*loans, i, i+1)
	n, _ := rec.next()
	call := rec.tick()
	if r.IntN(3) == 0 {
		v := l.Hijack()
		rec.add(g, linIn{kind: linHijack, n: n, id: v.id}, call, rec.tick(), linOut{})
		w.close(v) // the caller's to close now
		return
	}
	l.Destroy()
	rec.add(g, linIn{kind: linDestroy, n: n, id: l.Value().id}, call, rec.tick(), linOut{})
}

// dial numbers resources and notes which operation each was dialed for.
func (w *linWorld) dial(ctx context.Context) (*res, error) {
	n, ok := ctx.Value(linCtxKey{}).(int)
	if !ok {
		n = -1
	}
	if gate, ok := ctx.Value(linGateKey{}).(*linGate); ok {
		w.mu.Lock()
		gate.waiting = true
		w.mu.Unlock()
		<-gate.open // every gate opens before the Keeper closes
	}
	if w.refuse != nil {
		w.rec.mu.Lock()
		refused := w.refuse.IntN(map[bool]int{false: 3, true: 4}[w.down]) == 0
		if refused {
			w.rec.dials = append(w.rec.dials, linDial{n: n, ret: w.rec.tick(), refused: true, down: w.down})
		}
		w.rec.mu.Unlock()
		switch {
		case refused && w.down:
			return nil, errLinDown
		case refused:
			return nil, errLinFull
		}
	}
	v := &res{id: int(w.nextID.Add(1))}
	w.rec.mu.Lock()
	w.rec.dials = append(w.rec.dials, linDial{n: n, id: v.id, ret: w.rec.tick()})
	w.rec.mu.Unlock()
	return v, nil
}

func (w *linWorld) close(v *res) error {
	if _, again := w.closes.LoadOrStore(v, true); again {
		w.twice.Add(1)
	}
	return nil
}

var (
	errLinReset = errors.New("reset refused")
	errLinCheck = errors.New("check failed")
)

// checkHook fails a quarter of the checks, and records those.
func (w *linWorld) checkHook(ctx context.Context, v *res) error {
	n, _ := ctx.Value(linCtxKey{}).(int)
	call := w.rec.tick()
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	if w.checkFails.IntN(4) != 0 {
		return nil
	}
	w.rec.checks = append(w.rec.checks, linCheck{n: n, id: v.id, call: call, ret: w.rec.tick()})
	return errLinCheck
}

// resetFails is Config.BeforeReuse: it fails for the resources the releasing
// worker chose.
func (w *linWorld) resetFails(_ context.Context, v *res) error {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	if w.rec.resetFails[v.id] {
		delete(w.rec.resetFails, v.id)
		return errLinReset
	}
	return nil
}

// watch, in the full class, moves the clock a second on (and runs the
// timers due) whenever the round is stuck on it: a worker blocked, every
// other one arrived with nothing left to give back, no dial under way. A
// caller a full backend left waiting, with nothing live made, waits so
// for the room to grow. The move is an operation of its own, concurrent
// with the blocked call. It returns the function that stops it, and waits
// for it to stop.
func (w *linWorld) watch(on bool) (stop func()) {
	if !on {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		calm, moved := 0, 0
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			w.mu.Lock()
			stuck := w.blocked > 0 && w.arrived+w.blocked == w.workers && w.holders == 0 &&
				!slices.ContainsFunc(w.gates, func(g *linGate) bool { return g.waiting })
			w.mu.Unlock()
			if !stuck || !settled(w.k) {
				calm = 0
				continue
			}
			if calm++; calm < 4 {
				continue
			}
			calm = 0
			if moved++; moved > 100 {
				// A caller the Keeper left behind: no clock frees it.
				panic(fmt.Sprintf("linear check: a round stuck after %d moves of the clock", moved))
			}
			w.rec.mu.Lock()
			w.rec.nudges++
			w.rec.mu.Unlock()
			w.advance(time.Second)
			w.clock.fire(w.workers)
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}
