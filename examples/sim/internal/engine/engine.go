// Package engine is the simulator: a pool.Pool driven in virtual time by a
// load of callers, as pool.Keeper would drive it, one second at a time
// recorded for the table, the chart and the comparisons.
//
// Time is a queue of events ordered by instant; nothing sleeps and nothing
// reads a clock, so an hour of traffic runs in a second and the same seed
// gives the same run on every machine. What the engine decides is only what
// a Keeper decides: callers arriving while others queue join the back of the
// queue; otherwise they ask the pool and act on its answer (Ready: lent;
// Stale: closed, ask again; Make: dial for this caller; Wait: queue; Later:
// sleep that long, ask again; Shed: fail at once). Every resource given back
// or made with nobody to take it serves the queue oldest first; one timer
// evicts what the pool names (Next). A caller whose timeout passes leaves
// the queue; a dial it started goes on, and its resource is handed on as a
// return.
package engine

import (
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Second is what happened in one second of virtual time: the gauges as they
// stood at its end and what was counted during it.
type Second struct {
	// Sec is the second that ended, the first being 1.
	Sec int
	// Arrived is how many callers asked.
	Arrived int
	// Lent, Idle and Making are the pool's gauges at the end of the second:
	// resources out on loan, sitting idle, and being made. Queued is how
	// many callers were waiting in the queue then.
	Lent, Idle, Making, Queued int
	// QueueMax is the most callers queued at once during the second.
	QueueMax int
	// Answers counts the pool's answers to Take, indexed by pool.Kind
	// (Ready … Shed; Closed never comes).
	Answers [pool.Closed + 1]int
	// Opened counts resources made, Failed dials that failed, Retired
	// resources the pool let go of (stale, evicted, or over the Idle
	// ceiling on their way back), Dropped loans that came home broken.
	Opened, Failed, Retired, Dropped int
	// Served counts callers who got a resource, Waited those of them who
	// had to wait for it, TimedOut those who gave up, Refused those shed,
	// DialErrors those whose own dial failed.
	Served, Waited, TimedOut, Refused, DialErrors int
	// Orphans counts dials that succeeded after their caller had given up:
	// the pool counts a loan (Books.Loans) and the resource is given back
	// at once, as Keeper does.
	Orphans int
	// P50, P99 and Max are percentiles of the acquire waits that ended in
	// this second (served or not); zero when none ended.
	P50, P99, Max time.Duration
	// Saturated is how long, within the second, callers were queued.
	Saturated time.Duration
	// Refusal is the breaker's refusal ratio at the end of the second, in
	// [0, 1]; zero without a breaker.
	Refusal float64
	// Backoff is how much longer makes are held back by backoff at the end
	// of the second (Pool.HeldUntil); zero when they are not.
	Backoff time.Duration
}

// Episode is one stretch of time during which callers were queued.
type Episode struct {
	From, To time.Duration
	// Depth is the longest the queue grew.
	Depth int
}

// Len is how long the episode lasted.
func (e Episode) Len() time.Duration { return e.To - e.From }

// Summary is what a planner reads first.
type Summary struct {
	// Arrived, Served, TimedOut, Refused and DialErrors count callers as
	// Second does, over the run.
	Arrived, Served, TimedOut, Refused, DialErrors int
	// P50, P99 and Max are percentiles (nearest rank) of every acquire
	// wait of the run: the time from asking to having a resource, or to
	// giving up or being refused.
	P50, P99, Max time.Duration
	// Saturated is the total time callers were queued.
	Saturated time.Duration
	// Longest is the longest queue episode.
	Longest Episode
	// Opened counts resources made, Dials dials started, DeadDials dials
	// that failed (during an outage: dials to a dead backend).
	Opened, Dials, DeadDials int
	// Peak is the most resources live (idle, lent, being made) at once.
	Peak int
}

// Result is one run.
type Result struct {
	Scenario Scenario
	// Replayed is true when the load came from a recording, not from the
	// scenario's rate and hold.
	Replayed bool
	Rows     []Second
	Sum      Summary
	// Episodes are the queue episodes, in order (at most MaxEpisodes).
	Episodes []Episode
	// Recording is the recording of the run's pool, written out at its
	// end, when Options.Recorder was set (see pool.Pool.Recording).
	Recording []byte
}

// MaxEpisodes bounds Result.Episodes; later episodes still count in the
// summary.
const MaxEpisodes = 1 << 20

// Options are the optional parts of a run.
type Options struct {
	// Load is where callers come from; nil means the scenario's synthetic
	// load (Synthetic).
	Load Load
	// Observe, when set, is called at the end of every second with the row
	// just recorded and the pool's books at that instant.
	Observe func(Second, pool.Books)
	// Record, when set, receives every caller of the run as a row of the
	// CSV format ReadCSV reads (see CSVWriter).
	Record *CSVWriter
	// Recorder, when set, records every call the run makes into its pool
	// (see pool.Recorder), so that a replay of a Keeper's recording can be
	// held against it (Reproduced). A scenario with a breaker cannot be
	// recorded: Run fails.
	Recorder *pool.Recorder
}

// ErrLoad is returned for a load that goes back in time.
var ErrLoad = errors.New("sim: load arrivals out of order")

// caller states
const (
	stAsking = iota
	stQueued
	stSleeping
	stDialing
	stLent
	stDone
)

// caller is one caller of the load, from arrival to release.
type caller struct {
	id       uint64 // arrival index
	asked    int64
	hold     time.Duration
	recorded bool
	gen      uint32
	state    uint8
	timer    bool // a timeout event is pending
	// for the recording
	got     int64
	answers [maxAnswers]pool.Kind
	nans    uint8
	queued0 bool // joined the queue without asking
}

const maxAnswers = 6

type run struct {
	s      *Scenario
	load   Load
	opt    Options
	p      *pool.Pool[int32]
	origin time.Time
	end    int64

	q       events
	seq     uint64
	prng    *rand.Rand // the pool's draws: breaker rolls, backoff jitter
	drng    *rand.Rand // the backend's draws: which dials fail
	nextRes int32
	nextID  uint64
	free    []*caller

	queue []*caller // FIFO; done callers are skipped
	qhead int
	qlive int

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
}

// Run runs scenario s and returns what happened. It fails for a scenario
// that does not validate or a load whose arrivals go back in time.
func Run(s Scenario, opt Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var w ward.Ward
	origin := time.Unix(0, 0).UTC()
	if s.Breaker {
		w.Breaker = ward.NewBreaker(ward.DefaultSre, origin)
	}
	if s.Backoff {
		b := ward.DefaultBackoff
		w.Backoff = &b
	}
	p, err := pool.New[int32](s.Limits, w)
	if err != nil {
		return nil, err
	}
	if opt.Recorder != nil {
		if err := p.Record(opt.Recorder); err != nil {
			return nil, err
		}
	}
	r := &run{
		s: &s, opt: opt, p: p, origin: origin,
		end:  int64(s.Seconds) * int64(time.Second),
		prng: rand.New(rand.NewPCG(s.Seed^0x5bd1e995, 0xc2b2ae3d27d4eb4f)),
		drng: rand.New(rand.NewPCG(s.Seed^0x27d4eb2f, 0x165667b19e3779f9)),
	}
	r.load = opt.Load
	if r.load == nil {
		r.load = Synthetic(&s)
	}
	r.res.Replayed = opt.Load != nil
	r.res.Scenario = s
	r.cur.Sec = 1
	r.schedule(int64(time.Second), evTick, nil, 0)
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
		r.peak = max(r.peak, r.p.Live())
		switch e.kind {
		case evRelease, evDialed, evEvict:
			// Only a resource coming (back) to idle can bring the next
			// expiry forward; the other events only take from idle.
			r.arm(e.at)
		}
	}
	r.finish()
	if opt.Recorder != nil {
		r.res.Recording = p.Recording(nil)
	}
	return &r.res, nil
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

func (r *run) newCaller() *caller {
	var c *caller
	if n := len(r.free); n > 0 {
		c = r.free[n-1]
		r.free = r.free[:n-1]
		gen := c.gen + 1
		*c = caller{gen: gen}
	} else {
		c = new(caller)
	}
	return c
}

func (r *run) handle(e *event) error {
	t := e.at
	switch e.kind {
	case evArrive:
		a := r.pending
		c := r.newCaller()
		c.id, c.asked, c.hold, c.recorded = r.nextID, t, a.Hold, a.Recorded
		c.got = -1
		r.nextID++
		r.cur.Arrived++
		if r.opt.Record != nil {
			r.opt.Record.open(c)
		}
		r.acquire(c, t)
		return r.nextArrival()
	case evRelease:
		c := e.c
		if f := r.s.breakAt(time.Duration(t)); f >= 1 || f > 0 && r.drng.Float64() < f {
			r.p.Drop(e.res, r.now(t)) // broken: the caller drops it
			r.cur.Dropped++
		} else if !r.p.Give(e.res, r.now(t)) {
			r.cur.Retired++
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
		r.cur.Retired += len(r.p.Evict(r.now(t)))
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
			r.ended(c, t)
			r.done(c, t)
		}
	case evTick:
		r.tick(t)
	}
	return nil
}

// acquire is a caller asking, as Keeper.Acquire does.
func (r *run) acquire(c *caller, t int64) {
	if r.qlive > 0 {
		if c.nans == 0 {
			c.queued0 = true
		}
		r.enqueue(c, t)
		return
	}
	now := r.now(t)
	for {
		tk := r.p.Take(now, r.prng.Float64(), 0)
		r.answer(c, tk, t)
		switch tk.Kind {
		case pool.Ready:
			r.lend(c, tk.Item, t)
		case pool.Stale:
			r.cur.Retired++
			continue
		case pool.Make:
			r.dial(c, t)
		case pool.Wait:
			r.enqueue(c, t)
		case pool.Later:
			c.state = stSleeping
			r.deadline(c)
			r.schedule(t+int64(tk.Delay), evWake, c, 0)
		case pool.Shed:
			r.cur.Refused++
			r.ended(c, t)
			r.done(c, t)
		}
		return
	}
}

// answer counts one answer of the pool, given on c's behalf.
func (r *run) answer(c *caller, tk pool.Taken[int32], t int64) {
	r.cur.Answers[tk.Kind]++
	if int(c.nans) < maxAnswers {
		c.answers[c.nans] = tk.Kind
	}
	if c.nans < 255 {
		c.nans++
	}
}

// serve asks the pool on behalf of the queue, oldest first, while it has
// something for them, as Keeper.serveLocked does.
func (r *run) serve(t int64) {
	now := r.now(t)
	for r.qlive > 0 {
		c := r.peek()
		tk := r.p.Take(now, r.prng.Float64(), 0)
		r.answer(c, tk, t)
		switch tk.Kind {
		case pool.Ready:
			r.unqueue(c, t)
			r.lend(c, tk.Item, t)
		case pool.Stale:
			r.cur.Retired++
		case pool.Make:
			r.unqueue(c, t)
			r.dial(c, t)
		case pool.Wait:
			return
		case pool.Later:
			if !r.retryOn || t+int64(tk.Delay) < r.retryAt {
				r.retryOn, r.retryAt = true, t+int64(tk.Delay)
				r.schedule(r.retryAt, evRetry, nil, 0)
			}
			return
		case pool.Shed:
			r.unqueue(c, t)
			r.cur.Refused++
			r.ended(c, t)
			r.done(c, t)
		}
	}
}

func (r *run) lend(c *caller, item int32, t int64) {
	c.state, c.got = stLent, t
	r.cur.Served++
	if t > c.asked {
		r.cur.Waited++
	}
	r.ended(c, t)
	hold := c.hold
	if hold < 0 {
		return // held past the end of the run
	}
	if !c.recorded {
		if _, f := r.s.slowAt(time.Duration(t)); f != 1 {
			hold = time.Duration(float64(hold) * f)
		}
	}
	r.schedule(t+int64(hold), evRelease, c, item)
}

func (r *run) dial(c *caller, t int64) {
	c.state = stDialing
	r.deadline(c)
	r.res.Sum.Dials++
	d := r.s.Dial
	f, _ := r.s.slowAt(time.Duration(t))
	if f != 1 {
		d = time.Duration(float64(d) * f)
	}
	ok := true
	if fail := r.s.failAt(time.Duration(t)); fail >= 1 || fail > 0 && r.drng.Float64() < fail {
		ok = false
	}
	r.seq++
	r.q.push(event{at: t + int64(d), seq: r.seq, kind: evDialed, c: c, gen: c.gen, ok: ok})
}

func (r *run) dialed(e *event, t int64) {
	c := e.c
	owner := c.gen == e.gen && c.state == stDialing
	now := r.now(t)
	if !e.ok {
		r.p.Unmade(now, r.prng.Float64())
		r.cur.Failed++
		r.res.Sum.DeadDials++
		if owner {
			r.cur.DialErrors++
			r.ended(c, t)
			r.done(c, t)
		}
		r.serve(t)
		return
	}
	id := r.nextRes
	r.nextRes++
	if !r.p.Made(id, now) {
		r.cur.Retired++ // closed: never, the simulator does not close
		return
	}
	r.cur.Opened++
	if owner {
		r.lend(c, id, t)
		return
	}
	r.cur.Orphans++ // a loan to nobody: the pool counts it, then takes it back
	if !r.p.Give(id, now) {
		r.cur.Retired++
	}
	r.serve(t)
}

// deadline arms c's timeout, once.
func (r *run) deadline(c *caller) {
	if r.s.Timeout <= 0 || c.timer {
		return
	}
	c.timer = true
	r.schedule(c.asked+int64(r.s.Timeout), evTimeout, c, 0)
}

// ended records the end of c's acquire wait at t.
func (r *run) ended(c *caller, t int64) {
	w := time.Duration(t - c.asked)
	r.waits = append(r.waits, w)
	if w == 0 {
		r.zeros++
	} else {
		r.all = append(r.all, w)
	}
}

// done retires c: its loan is home, or it gave up, or was refused.
func (r *run) done(c *caller, t int64) {
	if c.state == stLent {
		if r.opt.Record != nil {
			r.opt.Record.close(c, t)
		}
	} else if r.opt.Record != nil {
		r.opt.Record.close(c, -1)
	}
	c.state = stDone
	if !c.timer {
		r.free = append(r.free, c)
	}
	// A caller with a timeout pending is left for the collector: the
	// event still points at it.
}

func (r *run) enqueue(c *caller, t int64) {
	c.state = stQueued
	r.deadline(c)
	if r.qlive == 0 {
		r.satAt = t
		r.ep = Episode{From: time.Duration(t)}
	}
	r.queue = append(r.queue, c)
	r.qlive++
	r.ep.Depth = max(r.ep.Depth, r.qlive)
	r.cur.QueueMax = max(r.cur.QueueMax, r.qlive)
}

func (r *run) peek() *caller {
	for r.queue[r.qhead].state != stQueued {
		r.queue[r.qhead] = nil
		r.qhead++
	}
	return r.queue[r.qhead]
}

// unqueue takes c out of the queue (lazily: the slot is skipped later).
func (r *run) unqueue(c *caller, t int64) {
	c.state = stAsking
	r.qlive--
	if r.qlive == 0 {
		r.cur.Saturated += time.Duration(t - r.satAt)
		r.ep.To = time.Duration(t)
		r.episode(r.ep)
		clear(r.queue[r.qhead:])
		r.queue, r.qhead = r.queue[:0], 0
	} else if r.qhead > 1024 && r.qhead > len(r.queue)/2 {
		n := copy(r.queue, r.queue[r.qhead:])
		clear(r.queue[n:])
		r.queue, r.qhead = r.queue[:n], 0
	}
}

func (r *run) episode(e Episode) {
	s := &r.res.Sum
	s.Saturated += e.Len()
	if e.Len() > s.Longest.Len() {
		s.Longest = e
	}
	if len(r.res.Episodes) < MaxEpisodes {
		r.res.Episodes = append(r.res.Episodes, e)
	}
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

// tick closes the second ending at t.
func (r *run) tick(t int64) {
	now := r.now(t)
	b := r.p.Books()
	row := &r.cur
	row.Making = r.p.Making()
	row.Lent, row.Idle, row.Queued = b.Busy-row.Making, b.Idle, r.qlive
	if r.qlive > 0 {
		row.Saturated += time.Duration(t - r.satAt)
		r.satAt = t
	}
	if r.s.Breaker {
		row.Refusal = r.p.Refusal(now)
	}
	if until, ok := r.p.HeldUntil(); ok && until.After(now) {
		row.Backoff = until.Sub(now)
	}
	if len(r.waits) > 0 {
		slices.Sort(r.waits)
		row.P50, row.P99, row.Max = rank(r.waits, 0, 50), rank(r.waits, 0, 99), r.waits[len(r.waits)-1]
		r.waits = r.waits[:0]
	}
	r.res.Rows = append(r.res.Rows, *row)
	if r.opt.Observe != nil {
		r.opt.Observe(*row, b)
	}
	sec := row.Sec + 1
	*row = Second{Sec: sec, QueueMax: r.qlive}
	if int64(sec)*int64(time.Second) <= r.end {
		r.schedule(int64(sec)*int64(time.Second), evTick, nil, 0)
	}
}

// rank is the nearest-rank p-th percentile of zeros zero waits followed by
// the sorted nonzero waits of w.
func rank(w []time.Duration, zeros int, p int) time.Duration {
	n := len(w) + zeros
	if n == 0 {
		return 0
	}
	k := (n*p + 99) / 100 // ceil(n·p/100), at least 1 for p > 0
	k = max(k, 1)
	if k <= zeros {
		return 0
	}
	return w[k-zeros-1]
}

func (r *run) finish() {
	if r.qlive > 0 {
		r.ep.To = time.Duration(r.end)
		r.episode(r.ep)
	}
	s := &r.res.Sum
	for _, row := range r.res.Rows {
		s.Arrived += row.Arrived
		s.Served += row.Served
		s.TimedOut += row.TimedOut
		s.Refused += row.Refused
		s.DialErrors += row.DialErrors
		s.Opened += row.Opened
	}
	slices.Sort(r.all)
	s.P50, s.P99 = rank(r.all, r.zeros, 50), rank(r.all, r.zeros, 99)
	if n := len(r.all); n > 0 {
		s.Max = r.all[n-1]
	}
	s.Peak = r.peak
	if r.opt.Record != nil {
		r.opt.Record.flush(true)
	}
}
