// Package engine is the simulator: a pool.Pool driven in virtual time by a
// load of callers, as wardpool.Keeper would drive it, one second at a time
// recorded for the table, the chart and the comparisons.
//
// Time is a queue of events ordered by instant; nothing sleeps and nothing
// reads a clock, so an hour of traffic runs in a second and the same seed
// gives the same run on every machine. What the engine decides is only what
// a Keeper decides: callers arriving while others queue join the back of the
// queue; otherwise they ask the pool and act on its answer (Ready: lent;
// Stale: closed, ask again; Make: dial for this caller; Wait: queue; Later:
// sleep that long, ask again; Shed: fail at once). Every resource given back
// or made with nobody to take it serves the queue oldest first, then, nobody
// queued, the callers whose own dial is in flight, oldest first, while
// something is idle: whatever frees first serves a caller dialing. A Wait
// with a Delay (a pool holding its callers after a failover,
// Scenario.HoldFor; a full backend, Scenario.ServerMax) has the timer ask
// for the queue again then, and a caller whose dial fails while the pool
// holds, or is refused by a full backend while others are live, goes back
// to the front of the queue (Pool.Unmade answering true) instead of
// failing. One timer
// evicts what the pool names (Next); a rotation (Scenario.RotateAt) resets
// the pool, at once or over a window, and that timer paces it. A caller whose timeout passes leaves
// the queue; a dial it started goes on, and its resource, like that of a
// caller served meanwhile, is handed on as a return.
//
// With classes of callers (Scenario.Classes) the pool is given them
// (Pool.SetClasses) and the engine keeps one queue per class, as the
// Keeper does: every call carries the caller's class (TakeAs, MadeAs,
// UnmadeAs with the class the reservation was opened for), a caller
// arriving while any queue holds someone joins the back of its own, and
// the queues are served in the order Pool.Serve says, its front callers
// asked for one at a time (a Serve of -1 with a Delay has the timer ask
// again then). Which class waits is the pool's rule, not the engine's.
package engine

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// Options are the optional parts of a run.
type Options struct {
	// Load is where callers come from; nil means the scenario's synthetic
	// load (Synthetic).
	Load Load
	// Observe, when set, is called at the end of every second with the row
	// just recorded and the pool's books at that instant.
	Observe func(Second, pool.Books)
	// Wait, when set, is told each caller's acquire wait as it ends (the
	// caller's index in the load's order, from 0, and the wait), whether
	// it was served, gave up or was refused.
	Wait func(caller uint64, wait time.Duration)
	// Record, when set, receives every caller of the run as a row of the
	// CSV format ReadCSV reads (see CSVWriter).
	Record *CSVWriter
	// Recorder, when set, records every call the run makes into its pool
	// (see pool.Recorder), so that a replay of a Keeper's recording can be
	// held against it (Reproduced).
	Recorder *record.Recorder
	// Ward, when set, builds the run's ward in place of the scenario's
	// guards: a Keeper recording's own guards
	// (pool.Recording.Ward), their instants counted from the Unix epoch as
	// the run's are. A shedder it builds sheds only with CPU set.
	Ward func() ward.Ward
	// CPU, when set, is the CPU reading in thousandths that a Take at t
	// (since the run's start) passes to the ward's shedder: a Keeper
	// recording's own readings, say. Nil reads the scenario's CPU model
	// (Scenario.CPUIdle, CPUPerLoan).
	CPU func(t time.Duration) int
	// DialFails, when set, says whether a dial begun at t (since the run's
	// start) fails, on top of the scenario's outages: a Keeper recording's
	// own dial outcomes, say.
	DialFails func(t time.Duration) bool
	// DialFull, when set, says whether a dial begun at t is refused for
	// want of room, on top of Scenario.ServerMax: a Keeper recording's own
	// refusals (Unmade with ward.GuardFull), say. Such a dial fails as a
	// full backend's does (Scenario.Full says what its caller does).
	DialFull func(t time.Duration) bool
	// RotationRead, when positive, is how long from Scenario.RotateAt
	// the rotation's figures (Summary.Rotation) are read, so that runs
	// compared side by side are read over the same stretch; zero reads
	// RotateOver and RotationTail after it.
	RotationRead time.Duration
}

// ErrLoad is returned for a load that goes back in time.
var ErrLoad = errors.New("sim: load arrivals out of order")

type run struct {
	s      *Scenario
	load   Load
	opt    Options
	p      machine   // the Pool, or its recorder in front of it
	w      ward.Ward // the pool's guards, read for the rows
	origin time.Time
	end    int64

	q       events
	seq     uint64
	prng    *rand.Rand // the pool's draws: breaker rolls, backoff jitter
	drng    *rand.Rand // the backend's draws: which dials fail
	nextRes int32
	nextID  uint64
	free    []*caller

	queues  []fifo       // one; with classes, one per class, the default last (queue.go)
	qlive   int          // callers queued, in every queue
	classes []pool.Class // the pool's classes (Scenario.poolClasses), or nil
	fronts  []pool.Front // serveClasses's, kept between calls
	groups  []classGroup // by class of the load (Scenario.Classes): its figures

	dialers []dialer // callers whose own dial is in flight, oldest first (serveDialers)
	dhead   int

	pending  Arrival // the next arrival, scheduled
	havePend bool
	arrival  event // pending's event, kept out of the heap
	evictAt  int64
	evictOn  bool
	retryAt  int64
	retryOn  bool

	cur   Second
	waits []time.Duration // ended this second
	all   []time.Duration // every nonzero wait of the run
	zeros int
	satAt int64 // when the queue last became non-empty, or was last cut
	ep    Episode
	res   Result
	peak  int

	// The failover's books (failover.go): by resource, whether it is live
	// and on the old node, and how many are.
	old     []bool
	oldLive int
	// The switchover's failed dials by second from the failover, and
	// when the last dial began while the pool held.
	downDials  []int
	holdDialAt int64

	// The connections the backend holds from the pool (Scenario.ServerMax):
	// made and not yet closed, or accepted and still being made.
	conns int

	// The rotation's books (rotation.go): dials begun in each second of
	// its stretch, and the waits that ended there.
	rotDials []int
	rotWaits []time.Duration
	rotZeros int
}

// Run runs scenario s and returns what happened. It fails for a scenario
// that does not validate or a load whose arrivals go back in time.
func Run(s Scenario, opt Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	origin := time.Unix(0, 0).UTC()
	w := s.ward(origin)
	if opt.Ward != nil {
		w = opt.Ward()
	}
	p, err := pool.New[int32](s.Limits, w)
	if err != nil {
		return nil, err
	}
	cls := s.poolClasses()
	if err := p.SetClasses(cls); err != nil {
		return nil, err
	}
	var m machine = p
	var rec *record.Pool[int32]
	if opt.Recorder != nil {
		if rec, err = record.Wrap(p, opt.Recorder, origin); err != nil {
			return nil, err
		}
		m = rec
	}
	r := &run{
		s: &s, opt: opt, p: m, w: w, origin: origin,
		end:  int64(s.Seconds) * int64(time.Second),
		prng: rand.New(rand.NewPCG(s.Seed^0x5bd1e995, 0xc2b2ae3d27d4eb4f)),
		drng: rand.New(rand.NewPCG(s.Seed^0x27d4eb2f, 0x165667b19e3779f9)),
	}
	r.classes = cls
	r.queues = make([]fifo, len(cls)+1)
	r.groups = make([]classGroup, len(s.Classes))
	r.load = opt.Load
	if r.load == nil {
		r.load = Synthetic(&s)
		// The classes' populations ask at the start, in order.
		for g, c := range s.Classes {
			for range c.Callers {
				r.schedule(0, evAgain, nil, int32(g+1))
			}
		}
	}
	r.res.Replayed = opt.Load != nil
	r.res.Scenario = s
	r.cur.Sec = 1
	r.schedule(int64(time.Second), evTick, nil, 0)
	r.failoverStart()
	r.rotateStart()
	if err := r.nextArrival(); err != nil {
		return nil, err
	}
	for len(r.q) > 0 || r.havePend {
		var e event
		if r.havePend && (len(r.q) == 0 || r.arrival.before(&r.q[0]) && !(r.pending.Last && r.arrival.at == r.q[0].at)) {
			e, r.havePend = r.arrival, false
		} else {
			e = r.q.pop()
		}
		if e.at > r.end {
			break
		}
		if e.at == r.end && e.kind != evTick {
			continue // the run ends with its last tick
		}
		if err := r.handle(&e); err != nil {
			return nil, err
		}
		r.peak = max(r.peak, r.p.Books().Live)
		switch e.kind {
		case evRelease, evDialed, evEvict, evRotate:
			// Only a resource coming (back) to idle, or a rotation
			// beginning, can bring the next expiry forward; the other
			// events only take from idle.
			r.arm(e.at)
		}
	}
	r.finish()
	if rec != nil {
		r.res.Recording = rec.Recording(nil)
	}
	return &r.res, nil
}

// machine is what the simulator calls on its Pool: a *pool.Pool, or a
// *record.Pool in front of one.
type machine interface {
	Take(now time.Time, roll float64, cpu int) pool.Taken[int32]
	TakeAs(now time.Time, roll float64, cpu int, class int) pool.Taken[int32]
	MadeAs(item int32, gen uint32, class int, now time.Time, extra time.Duration) bool
	UnmadeAs(now time.Time, roll float64, by ward.Guard, class int) bool
	Serve(now time.Time, fronts []pool.Front) (int, time.Duration)
	Give(item int32, now time.Time) bool
	Drop(item int32, now time.Time) bool
	Evict(now time.Time) []int32
	ResetFor(item int32, now time.Time, h pool.Hold) ([]int32, bool)
	Reset(now time.Time, over time.Duration) []int32
	Refusal(now time.Time) float64
	Loans(now time.Time) []pool.Lent[int32]
	Books() pool.Books
	Next() (time.Time, bool)
	HeldUntil() (time.Time, bool)
}

func (r *run) now(t int64) time.Time { return r.origin.Add(time.Duration(t)) }

func (r *run) schedule(at int64, kind uint8, c *caller, res int32) {
	r.seq++
	e := event{at: at, seq: r.seq, kind: kind, c: c, res: res}
	if c != nil {
		e.gen = c.gen
	}
	r.q.push(e)
}

func (r *run) nextArrival() error {
	a, ok := r.load.Next()
	if !ok {
		r.havePend = false
		return nil
	}
	if a.At < r.pending.At || a.At < 0 {
		return ErrLoad
	}
	// The next arrival waits beside the heap rather than in it (half the
	// heap's traffic otherwise), in the heap's order: (at, seq).
	r.seq++
	r.pending, r.havePend = a, true
	r.arrival = event{at: int64(a.At), seq: r.seq, kind: evArrive}
	return nil
}

func (r *run) handle(e *event) error {
	t := e.at
	switch e.kind {
	case evArrive:
		a := r.pending
		c := r.arrive(t, a.Hold, a.Class)
		c.recorded = a.Recorded
		r.acquire(c, t)
		return r.nextArrival()
	case evAgain:
		g := int(e.res)
		c := r.arrive(t, r.s.Classes[g-1].Hold, g)
		c.loop = true
		r.acquire(c, t)
	case evRelease:
		c := e.c
		if r.releaseFailover(e.res, t) {
			// a failed write, ended as the scenario's classifier says
		} else if f := r.s.breakAt(time.Duration(t)); f >= 1 || f > 0 && r.drng.Float64() < f {
			r.p.Drop(e.res, r.now(t)) // broken: the caller drops it
			r.cur.Dropped++
			r.gone(e.res)
		} else if !r.p.Give(e.res, r.now(t)) {
			r.cur.Retired++
			r.gone(e.res)
		}
		r.done(c, t)
		r.serve(t)
	case evDialed:
		r.dialed(e, t)
	case evEvict:
		if !r.evictOn || e.at != r.evictAt {
			return nil
		}
		r.evictOn = false
		ev := r.p.Evict(r.now(t))
		r.cur.Retired += len(ev)
		r.goneAll(ev)
	case evRetry:
		if !r.retryOn || e.at != r.retryAt {
			return nil
		}
		r.retryOn = false
		r.serve(t)
	case evWake:
		if c := e.c; c.gen == e.gen && c.state == stSleeping {
			r.acquire(c, t)
		}
	case evTimeout:
		c := e.c
		if c.gen != e.gen {
			return nil
		}
		c.timer = false
		switch c.state {
		case stQueued:
			r.unqueue(c, t)
			fallthrough
		case stSleeping, stDialing:
			r.cur.TimedOut++
			r.classFailed(c, true)
			if r.inRotation(t) {
				r.res.Sum.Rotation.TimedOut++
			}
			r.ended(c, t)
			r.done(c, t)
		}
	case evTick:
		r.tick(t)
	case evMark:
		r.res.Sum.Failover.OldOpen = r.oldLive
	case evRotate:
		r.rotate(t)
	}
	return nil
}

// arrive is a caller of class group (1 + index in Scenario.Classes; 0:
// none) asking at t, to hold for hold.
func (r *run) arrive(t int64, hold time.Duration, group int) *caller {
	c := r.newCaller()
	c.id, c.asked, c.hold = r.nextID, t, hold
	c.got = -1
	if group > 0 && group <= len(r.groups) {
		c.group = group
		r.groups[group-1].Arrived++
		if r.classes != nil {
			c.class = group - 1
		}
	} else if r.classes != nil {
		c.class = len(r.classes) // the default class
	}
	r.nextID++
	r.cur.Arrived++
	if r.opt.Record != nil {
		r.opt.Record.open(c)
	}
	return c
}

// arm keeps the one eviction timer at the instant the pool names.
func (r *run) arm(t int64) {
	next, ok := r.p.Next()
	if !ok {
		return
	}
	at := int64(next.Sub(r.origin))
	if r.evictOn && at >= r.evictAt {
		return
	}
	r.evictOn, r.evictAt = true, max(at, t)
	r.schedule(r.evictAt, evEvict, nil, 0)
}
