package engine

import (
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
	// Full counts the dials of Failed that the backend refused for want of
	// room (Scenario.ServerMax).
	Full int
	// Served counts callers who got a resource, Waited those of them who
	// had to wait for it, TimedOut those who gave up, Refused those shed,
	// DialErrors those whose own dial failed.
	Served, Waited, TimedOut, Refused, DialErrors int
	// Orphans counts dials that succeeded after their caller had given up
	// or had been served by a resource given back meanwhile: the pool
	// counts a loan (Books.Loans) and the resource is given back at once,
	// as Keeper does.
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
	// Guards counts the answers each guard gave instead of the pool's own
	// (a Shed, a Later, a Wait), indexed by ward.Guard.
	Guards [ward.GuardShared + 1]int
	// CPU is the CPU model's reading at the end of the second, in
	// thousandths (the scenario's model, or Options.CPU).
	CPU int
	// Limit is the limiter's limit at the end of the second; zero without
	// a limiter.
	Limit int
	// Tokens is the bucket's tokens at the end of the second; zero
	// without a bucket.
	Tokens float64
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
	// Guards counts the answers each guard gave over the run, indexed by
	// ward.Guard (see Second.Guards).
	Guards [ward.GuardShared + 1]int
	// CPUMax is the highest CPU reading of the run; LimitMin and
	// LimitMax the limiter's lowest and highest limit there (zero without
	// a limiter).
	CPUMax, LimitMin, LimitMax int
	// Held is the total time served callers held their resources (as
	// drawn or recorded, a slowdown's stretch included, cut at the end of
	// the run), and Holds how many holds it adds up: Held/Holds is the
	// mean hold of the run, the other half of Little's law.
	Held  time.Duration
	Holds int
	// Failover is what the scenario's failover did; zero without one.
	Failover FailoverSum
	// Rotation is what the scenario's rotation did; zero without one.
	Rotation RotationSum
	// Full is what the backend's connection limit did; zero without one.
	Full FullSum
}

// ClassSum is what one class of callers (Scenario.Classes) got.
type ClassSum struct {
	// Name is the class's; Reserve and Ceiling as the pool was given them
	// (zero with NoClasses).
	Name             string
	Reserve, Ceiling int
	// Arrived, Served, TimedOut count its callers as Summary does, Failed
	// those shed or whose own dial failed.
	Arrived, Served, TimedOut, Failed int
	// P50, P99 and Max are percentiles of its callers' acquire waits.
	P50, P99, Max time.Duration
	// Peak is the most resources its callers held at once from the
	// second second on: the first, where the load begins and the pool
	// fills before every class has asked, is left out.
	Peak int
}

// PerSecond is how many of the class's callers were served a second, over
// the run of seconds.
func (c ClassSum) PerSecond(seconds int) float64 { return float64(c.Served) / float64(max(seconds, 1)) }

// classGroup is a class's books during a run.
type classGroup struct {
	ClassSum
	lent  int             // held now
	waits []time.Duration // nonzero waits
	zeros int
}

// FullSum is what a backend with a connection limit (Scenario.ServerMax)
// did to the run.
type FullSum struct {
	// Refused counts the dials it refused for want of room, and Peak the
	// most of them in one second. Conns is the most connections it held
	// from the pool at once (made and not closed, or accepted and still
	// being made): at most ServerMax.
	Refused, Peak, Conns int
	// Waits counts the pool's Wait answers for the full backend
	// (ward.GuardFull); PutBack the callers whose refused dial had them
	// put back at the front of the queue (Pool.Unmade answering true)
	// rather than fail.
	Waits, PutBack int
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
	// Classes are the figures of each class of the load, in the order of
	// Scenario.Classes (with classes on or off: NoClasses); nil without.
	Classes []ClassSum
	// Recording is the recording of the run's pool, written out at its
	// end, when Options.Recorder was set (see pool.Pool.Recording).
	Recording []byte
}

// MaxEpisodes bounds Result.Episodes; later episodes still count in the
// summary.
const MaxEpisodes = 1 << 20

// tick closes the second ending at t.
func (r *run) tick(t int64) {
	now := r.now(t)
	b := r.p.Books()
	row := &r.cur
	row.Making = b.Busy - len(r.p.Loans(now)) // reservations: busy, not lent
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
	row.CPU = r.cpu(t)
	if r.w.Limiter != nil {
		row.Limit = r.w.Limiter.Limit()
	}
	if r.w.Bucket != nil {
		row.Tokens = r.w.Bucket.Tokens(now)
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
	for i, row := range r.res.Rows {
		for g, n := range row.Guards {
			s.Guards[g] += n
		}
		s.CPUMax = max(s.CPUMax, row.CPU)
		if r.w.Limiter != nil {
			if i == 0 {
				s.LimitMin = row.Limit
			}
			s.LimitMin, s.LimitMax = min(s.LimitMin, row.Limit), max(s.LimitMax, row.Limit)
		}
		s.Arrived += row.Arrived
		s.Served += row.Served
		s.TimedOut += row.TimedOut
		s.Refused += row.Refused
		s.DialErrors += row.DialErrors
		s.Opened += row.Opened
		s.Full.Peak = max(s.Full.Peak, row.Full)
	}
	slices.Sort(r.all)
	s.P50, s.P99 = rank(r.all, r.zeros, 50), rank(r.all, r.zeros, 99)
	if n := len(r.all); n > 0 {
		s.Max = r.all[n-1]
	}
	s.Peak = r.peak
	for i := range r.groups {
		g := &r.groups[i]
		c := r.s.Classes[i]
		g.Name = c.Name
		if r.classes != nil {
			g.Reserve, g.Ceiling = c.Reserve, c.Ceiling
		}
		slices.Sort(g.waits)
		g.P50, g.P99 = rank(g.waits, g.zeros, 50), rank(g.waits, g.zeros, 99)
		if n := len(g.waits); n > 0 {
			g.Max = g.waits[n-1]
		}
		r.res.Classes = append(r.res.Classes, g.ClassSum)
	}
	r.rotateFinish()
	if r.opt.Record != nil {
		r.opt.Record.flush(true)
	}
}
