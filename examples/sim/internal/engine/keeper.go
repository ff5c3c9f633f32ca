package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// A load from a Keeper's own recording (pool.Recorder, written out by
// Keeper.Recording): the calls the Keeper made into its Pool, each with its
// instant and answer, turned back into callers, each with when it asked,
// when it got a resource and when it gave it back. A recording names
// resources by seat, not callers, so the callers are rebuilt from the
// Keeper's rules:
//
//   - A Take that answers Ready begins a loan in the seat it names; the next
//     Give, GiveSeat or Drop of that seat ends it. A caller that asked
//     through the lock and got Ready at once asked, got and gave back at
//     recorded instants: exact (to the Keeper's clock, whose default ticks
//     every millisecond).
//   - A Take that answers Wait queues its caller. The Keeper serves its queue
//     oldest first, by Takes made at the instant something came back (a
//     Give, a Drop, a failed or finished dial), so the next Ready or Make of
//     such a Take goes to the oldest caller queued: its arrival is the Wait's
//     instant. This is exact unless an older waiter gave up (that is not
//     recorded: its arrival is then given to the next one).
//   - A caller that arrives while others queue joins the queue without
//     asking the pool, so nothing of it is recorded until the Keeper asks
//     for it, at the head of its queue: a Take at a return that answers
//     Wait (it is there by then) or lends. Its arrival is taken as that
//     instant, which is late, and it asks after what came back then
//     (Arrival.Last), as it did. Such callers are counted as AtReturn, with
//     the new callers who came at the very instant of a return while a
//     queue may have been there, which the recording cannot tell apart.
//   - A Take that answers Make starts a dial; the next Made begins the loan of
//     the oldest caller dialing (in order: exact when dials end in the order
//     they began), unless the Keeper hands the new resource on at once, which
//     means its caller had given up (or the dial was a background one). An
//     Unmade ends the oldest caller's dial with an error.
//   - A Made names no seat; the loan's seat is learnt when a seat no known
//     loan holds comes back (the oldest such loan, when several are out).
//   - The lane's loans reach the pool only as Relent counts, the last of them
//     with its start (to the lane's millisecond: Keeper keeps a start within
//     a millisecond of the one before): the n loans a Relent reports, and
//     the loan before them, are spread evenly from that loan's start to the
//     last start, each held until the next begins. Their count, the first
//     start, the last start and the last return are recorded; every other
//     instant of theirs is an estimate (Lane), and the holds are upper
//     bounds (the idle time between lane loans is not recorded).
//   - A caller that gave up is not in the recording as such; what is left of
//     it (a dial handed on, a waiter never served) is counted, not replayed
//     as served. Loans that began before the recording (its ring dropped
//     their start) are left out (Before).
//
// Instants are since the recording's first; the recording holds no wall
// clock, so a replay of it prints seconds since that start.

// keeperMagic begins every recording pool.Recorder writes.
var keeperMagic = []byte("wprc")

// IsKeeperRecording reports whether data begins as a recording written by
// pool.Recorder (Keeper.Recording) does, rather than as a load CSV.
func IsKeeperRecording(data []byte) bool { return bytes.HasPrefix(data, keeperMagic) }

// ErrKeeperLoad is wrapped by the errors ReadKeeper returns for a recording
// it reads but cannot make a load of.
var ErrKeeperLoad = errors.New("sim: no load in the Keeper recording")

// KeeperLoad is the load read from a Keeper's recording (see ReadKeeper).
type KeeperLoad struct {
	// Recording holds the callers as rows (Row.Line is the number of the
	// step that settled the caller's acquire, plus one; Row.Answers says
	// how it was read: lock, queued, dialed, atreturn, lane, failed,
	// gaveup, waiting), in order of Asked, in nanoseconds since the
	// recording's first instant. Its Load replays them.
	Recording
	// Limits are the recorded pool's limits; Backoff is the recorded ward's
	// backoff, nil without one.
	Limits  pool.Limits
	Backoff bool
	// Steps is how many steps the recording holds, Dropped how many its
	// ring dropped before them.
	Steps   int
	Dropped uint64
	// Dial is the median time from a Make to the Made that settled it,
	// over the Dials dials made for a caller (paired in order); zero when
	// there were none.
	Dial  time.Duration
	Dials int
	// Counts says which callers were read how.
	Counts KeeperCounts
	// Source is the recording as read, for Reproduced.
	Source *pool.Recording
}

// KeeperCounts counts the callers of a KeeperLoad by how they were read
// (see the top of keeper.go for what is exact and what is not).
type KeeperCounts struct {
	// Lock: served by a Take answering Ready at the instant they asked:
	// every instant recorded.
	Lock int
	// Queued: served after a recorded Wait, arrival at that Wait (FIFO).
	Queued int
	// Dialed: served by a dial of their own (paired with dials in order).
	Dialed int
	// AtReturn: first seen when the Keeper served its queue, with no Wait
	// of their own on record: callers that had queued behind others
	// (arrival late), or that arrived at that very instant (exact).
	AtReturn int
	// Lane: loans spread over a Relent, and the loan before them: counts
	// exact, instants estimated.
	Lane int
	// Failed: refused (Shed, Closed) or their dial failed: never served.
	Failed int
	// GaveUp: gave up while dialing or queued (what of them is on record):
	// never served.
	GaveUp int
	// Waiting: still queued or dialing when the recording ends.
	Waiting int
	// Open: loans still out when the recording ends (held past the end).
	Open int
	// Before: loans that came back but began before the recording: left
	// out.
	Before int
	// Guessed: returns of a seat no known loan held, paired with one of
	// several loans whose seat was unknown (a guess).
	Guessed int
}

// Estimated is how many callers of the load have an instant that is not
// the recorded one (Lane and AtReturn; Queued and Dialed are exact unless
// someone gave up or dials ended out of order).
func (c KeeperCounts) Estimated() int { return c.Lane + c.AtReturn }

// String says in one line how the callers were read.
func (c KeeperCounts) String() string {
	return fmt.Sprintf("%d through the lock at once, %d after a recorded Wait, %d by their own dial (exact); "+
		"%d first seen when the Keeper served its queue (arrival late, or exact), %d lane loans (spread evenly: estimated); "+
		"%d refused or failed, %d gave up, %d waiting at the end, %d still out; %d loans begun before the recording left out; "+
		"%d returns paired with one of several dialed loans (a guess)",
		c.Lock, c.Queued, c.Dialed, c.AtReturn, c.Lane, c.Failed, c.GaveUp, c.Waiting, c.Open, c.Before, c.Guessed)
}

// kcaller is a caller being rebuilt: when it asked, and the row it will be.
type kcaller struct {
	asked  int64
	how    string // how it was (or is being) read
	dialAt int64  // when its dial began
	wake   int64  // told Later: when it asks again
	bg     bool   // a background dial (Reserve): no caller
	last   bool   // first seen right after a return at its instant
}

// keeperReader rebuilds the callers of one recording.
type keeperReader struct {
	rows     []Row
	counts   KeeperCounts
	open     map[int32]int // seat → row of the loan out in it
	unseated []int         // rows of loans made whose seat is not yet known
	queue    []*kcaller    // callers queued by a recorded Wait, oldest first
	dialing  []*kcaller    // dials in flight, oldest first
	sleepers []*kcaller    // callers told Later
	dials    []time.Duration
	seats    seatModel
}

// seatModel follows the pool's seats as the recording frees them, to know
// which seat a resource just made takes (a Made names none): the last seat
// freed, or a new one. It starts from an empty pool and gives up (ok false)
// at the first step that shows the pool was not empty: a recording whose
// ring dropped its start, or a Recorder attached to a pool in use.
type seatModel struct {
	ok   bool
	n    int32   // seats in the arena
	free []int32 // freed seats, the last on top
}

// alloc returns the seat a resource made now takes, or -1 when not known.
func (m *seatModel) alloc() int32 {
	if !m.ok {
		return -1
	}
	if k := len(m.free); k > 0 {
		i := m.free[k-1]
		m.free = m.free[:k-1]
		return i
	}
	m.n++
	return m.n - 1
}

// release frees seat i.
func (m *seatModel) release(i int32) {
	if !m.ok {
		return
	}
	if i < 0 || i >= m.n || slices.Contains(m.free, i) {
		m.ok = false
		return
	}
	m.free = append(m.free, i)
}

// used checks that seat i holds a resource.
func (m *seatModel) used(i int32) {
	if m.ok && (i < 0 || i >= m.n || slices.Contains(m.free, i)) {
		m.ok = false
	}
}

// retired reads the seats of an answer "seats [1 4]", in order.
func retired(ans string) []int32 {
	inner, ok := strings.CutPrefix(ans, "seats [")
	if !ok {
		return nil
	}
	var out []int32
	for _, f := range strings.Fields(strings.TrimSuffix(inner, "]")) {
		if n, err := strconv.ParseInt(f, 10, 32); err == nil {
			out = append(out, int32(n))
		}
	}
	return out
}

// ReadKeeper reads a recording written by pool.Recorder and rebuilds its
// callers (see the top of keeper.go). A recording that does not read gets
// an error wrapping pool.ErrRecording (truncated, corrupted, another
// version); one that reads but holds no caller, or an answer that does not
// parse, an error wrapping ErrKeeperLoad. It never panics.
func ReadKeeper(data []byte) (*KeeperLoad, error) {
	rc, err := pool.ReadRecording(data)
	if err != nil {
		return nil, err
	}
	kr := &keeperReader{open: map[int32]int{}, seats: seatModel{ok: true}}
	if err := kr.read(rc.Steps); err != nil {
		return nil, err
	}
	if len(kr.rows) == 0 {
		return nil, fmt.Errorf("%w: its %d steps hold no acquire", ErrKeeperLoad, len(rc.Steps))
	}
	kl := &KeeperLoad{
		Limits: rc.Limits, Backoff: rc.Backoff != nil, Steps: len(rc.Steps),
		Counts: kr.counts, Source: rc,
	}
	if len(rc.Steps) > 0 {
		kl.Dropped = rc.Steps[0].Index
	}
	kl.Dials = len(kr.dials)
	if n := len(kr.dials); n > 0 {
		slices.Sort(kr.dials)
		kl.Dial = kr.dials[(n-1)/2]
	}
	for i := range kr.rows {
		// The instants of a recording only go forward for the steps made
		// under the lock; a Relent's (a lane loan's start) may lie before
		// them. Keep every row in order, as a load CSV must be.
		r := &kr.rows[i]
		r.Asked = max(r.Asked, 0)
		if r.Acquired >= 0 {
			r.Acquired = max(r.Acquired, r.Asked)
		}
		if r.Release >= 0 {
			r.Release = max(r.Release, r.Acquired)
		}
	}
	slices.SortStableFunc(kr.rows, func(a, b Row) int {
		switch {
		case a.Asked < b.Asked:
			return -1
		case a.Asked > b.Asked:
			return 1
		}
		return 0
	})
	kl.Rows = kr.rows
	return kl, nil
}

// takeAnswer reads a Take's answer, as Step.Answer renders it ("Ready
// guard=… seat=3 idle=1ms"): the kind and, for Ready and Stale, the seat.
func takeAnswer(s string) (pool.Kind, int32, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, 0, false
	}
	var k pool.Kind
	for c := pool.Ready; c <= pool.Closed; c++ {
		if c.String() == f[0] {
			k = c
		}
	}
	if k == 0 {
		return 0, 0, false
	}
	if k != pool.Ready && k != pool.Stale {
		return k, 0, true
	}
	for _, x := range f[1:] {
		if v, ok := strings.CutPrefix(x, "seat="); ok {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return 0, 0, false
			}
			return k, int32(n), true
		}
	}
	return 0, 0, false
}

func (kr *keeperReader) read(steps []pool.Step) error {
	var (
		room   bool  // the step before was a return: a Take now serves the queue
		roomAt int64 // at this instant
		stale  *kcaller
		staleQ bool  // the stale caller is the queue's head
		retry  int64 = -1
		// queued says a caller may be queued that the recording has not
		// shown: since a Wait, until a return that no Take follows at
		// once (the Keeper serves its queue at every return).
		queued bool
	)
	for i := 0; i < len(steps); i++ {
		s := steps[i]
		t := int64(s.At)
		line := int(min(s.Index, 1<<40)) + 1
		ret := false // a return, after which the Keeper serves its queue
		switch s.Op {
		case pool.OpTake:
			kind, seat, ok := takeAnswer(s.Answer())
			if !ok {
				return fmt.Errorf("%w: step %d: a Take answer %q that does not read", ErrKeeperLoad, s.Index, s.Answer())
			}
			var c *kcaller
			head := false // c is the head of the queue
			serve := false
			serves := room && roomAt == t || retry >= 0 && t >= retry && len(kr.queue) > 0
			if serves && len(kr.queue) == 0 && !queued {
				serves = false // nobody can be queued: a caller arriving at the instant of a return
			}
			switch {
			case stale != nil:
				c, head, serve = stale, staleQ, room
			case serves:
				serve = true
				if len(kr.queue) > 0 {
					c, head = kr.queue[0], true
				} else {
					c = &kcaller{asked: t, how: "atreturn", last: true}
				}
			default:
				// A new caller, or one waking from Later. The Keeper asks
				// for a new caller only when nobody is queued: the callers
				// still queued here gave up.
				for _, q := range kr.queue {
					q.how = "gaveup"
					kr.fail(q, line)
				}
				kr.queue = kr.queue[:0]
				c = kr.wake(t)
				if c == nil {
					c = &kcaller{asked: t, how: "lock", last: room && roomAt == t}
				}
			}
			stale, staleQ = nil, false
			retry = -1
			pop := func() {
				if head {
					kr.queue = kr.queue[1:]
				}
			}
			switch kind {
			case pool.Ready:
				pop()
				kr.seats.used(seat)
				kr.lend(c, seat, t, line)
			case pool.Stale:
				kr.seats.release(seat)
				stale, staleQ = c, head
			case pool.Make:
				pop()
				if c.how != "atreturn" {
					c.how = "dialed"
				}
				c.dialAt = t
				kr.dialing = append(kr.dialing, c)
			case pool.Wait, pool.Later:
				switch {
				case !serve:
					if kind == pool.Wait {
						c.how = "queued"
						kr.queue = append(kr.queue, c)
						queued = true
						break
					}
					c.wake = t + int64(laterDelay(s.Answer()))
					kr.sleepers = append(kr.sleepers, c)
				case !head:
					// The Keeper asked for a caller the recording has not
					// shown: one queued behind others, there by now at the
					// latest. It heads the queue from here.
					kr.queue = append(kr.queue, c)
				}
				if serve && kind == pool.Later {
					retry = t // the Keeper's timer serves the queue again
				}
			case pool.Shed, pool.Closed:
				pop()
				c.how = "failed"
				kr.fail(c, line)
			}
			// The Keeper goes on serving its queue while each Take lends.
			room = serve && (kind == pool.Ready || kind == pool.Make || kind == pool.Shed || kind == pool.Closed) || stale != nil && room
			roomAt = t
			continue
		case pool.OpMade:
			var c *kcaller
			if len(kr.dialing) > 0 {
				c, kr.dialing = kr.dialing[0], kr.dialing[1:]
			}
			if c != nil && !c.bg {
				kr.dials = append(kr.dials, time.Duration(t-c.dialAt))
			}
			seat := int32(-1)
			if s.Answer() == "true" {
				seat = kr.seats.alloc()
			}
			switch {
			case s.Answer() != "true": // closed while dialing
				if c != nil && !c.bg {
					c.how = "failed"
					kr.fail(c, line)
				}
			case i+1 < len(steps) && handedOn(steps[i+1], t, seat, kr.open):
				// The Keeper gave the new resource back at once: nobody
				// waited for it.
				if c != nil && !c.bg {
					c.how = "gaveup"
					kr.fail(c, line)
				}
				if steps[i+1].Answer() != "true" {
					kr.seats.release(seat)
				}
				i++
				ret = true
			default:
				if c == nil || c.bg {
					c = &kcaller{asked: t, how: "atreturn"}
				}
				kr.lend(c, seat, t, line)
			}
		case pool.OpUnmade:
			ret = true
			if len(kr.dialing) > 0 {
				c := kr.dialing[0]
				kr.dialing = kr.dialing[1:]
				if !c.bg {
					c.how = "failed"
					kr.fail(c, line)
				}
			}
		case pool.OpReserve:
			if s.Answer() == "true" {
				kr.dialing = append(kr.dialing, &kcaller{bg: true})
			}
		case pool.OpGive, pool.OpGiveSeat, pool.OpDrop:
			seat := int32(int64(s.Ref) - 1)
			if s.Op == pool.OpGiveSeat {
				seat = s.Seat
			}
			kr.end(seat, t)
			ret = true
			if s.Answer() == "true" && s.Op == pool.OpDrop || s.Answer() == "false" && s.Op != pool.OpDrop && s.Ref != 0 {
				kr.seats.release(seat) // dropped, or retired on its way back
			}
		case pool.OpEvict, pool.OpClose, pool.OpReset:
			for _, i := range retired(s.Answer()) {
				kr.seats.release(i)
			}
		case pool.OpRelent:
			kr.relent(s.Seat, s.N, t, line)
		}
		room, roomAt = ret, t
		stale = nil
		if ret && (i+1 == len(steps) || steps[i+1].Op != pool.OpTake || int64(steps[i+1].At) != t) {
			// Nobody was served at this return: nobody was queued, and
			// the callers still queued here gave up.
			queued = false
			for _, q := range kr.queue {
				q.how = "gaveup"
				kr.fail(q, line)
			}
			kr.queue = kr.queue[:0]
		}
	}
	for _, c := range kr.queue {
		c.how = "waiting"
		kr.fail(c, 0)
	}
	for _, c := range kr.dialing {
		if !c.bg {
			c.how = "waiting"
			kr.fail(c, 0)
		}
	}
	for _, c := range kr.sleepers {
		c.how = "gaveup"
		kr.fail(c, 0)
	}
	kr.counts.Open = len(kr.open) + len(kr.unseated)
	return nil
}

// laterDelay reads the delay of a Later answer ("Later delay=5ms").
func laterDelay(s string) time.Duration {
	for _, x := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(x, "delay="); ok {
			d, err := time.ParseDuration(v)
			if err == nil && d >= 0 {
				return d
			}
		}
	}
	return 0
}

// handedOn reports whether s gives back, at t, the resource a dial just
// made, in seat made (-1: not known; then any seat no known loan holds):
// the Keeper handing it on.
func handedOn(s pool.Step, t int64, made int32, open map[int32]int) bool {
	if int64(s.At) != t {
		return false
	}
	var seat int32
	switch s.Op {
	case pool.OpGiveSeat:
		seat = s.Seat
	case pool.OpGive:
		seat = int32(int64(s.Ref) - 1)
	default:
		return false
	}
	if made >= 0 {
		return seat == made
	}
	_, known := open[seat]
	return !known
}

// wake returns the caller told Later that is due by t (the earliest), or nil.
func (kr *keeperReader) wake(t int64) *kcaller {
	best := -1
	for i, c := range kr.sleepers {
		if c.wake <= t && (best < 0 || c.wake < kr.sleepers[best].wake) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	c := kr.sleepers[best]
	kr.sleepers = slices.Delete(kr.sleepers, best, best+1)
	return c
}

// lend begins c's loan at t in seat (-1: not known yet).
func (kr *keeperReader) lend(c *kcaller, seat int32, t int64, line int) {
	how := c.how
	switch how {
	case "lock", "queued", "dialed":
	default:
		how = "atreturn"
	}
	kr.count(how, 1)
	kr.rows = append(kr.rows, Row{Line: line, Asked: c.asked, Acquired: t, Release: -1, Answers: how, Last: c.last})
	r := len(kr.rows) - 1
	if seat < 0 {
		kr.unseated = append(kr.unseated, r)
		return
	}
	if old, ok := kr.open[seat]; ok {
		// The seat was lent twice with no return between: the return
		// is not on record (it cannot be); end the older loan here.
		kr.rows[old].Release = t
	}
	kr.open[seat] = r
}

// fail records c as a caller never served.
func (kr *keeperReader) fail(c *kcaller, line int) {
	switch c.how {
	case "gaveup":
		kr.counts.GaveUp++
	case "waiting":
		kr.counts.Waiting++
	default:
		c.how = "failed"
		kr.counts.Failed++
	}
	kr.rows = append(kr.rows, Row{Line: line, Asked: c.asked, Acquired: -1, Release: -1, Answers: c.how, Last: c.last})
}

// loanAt returns the row of the loan out in seat, learning the seat of a
// loan made when seat is not known, or -1 when none is out.
func (kr *keeperReader) loanAt(seat int32) int {
	if r, ok := kr.open[seat]; ok {
		return r
	}
	if len(kr.unseated) == 0 {
		return -1
	}
	if len(kr.unseated) > 1 {
		kr.counts.Guessed++
	}
	r := kr.unseated[0]
	kr.unseated = kr.unseated[1:]
	kr.open[seat] = r
	return r
}

// end ends the loan out in seat at t.
func (kr *keeperReader) end(seat int32, t int64) {
	r := kr.loanAt(seat)
	if r < 0 {
		kr.counts.Before++
		kr.seats.ok = false // the pool was not empty when the recording began
		return
	}
	kr.rows[r].Release = t
	delete(kr.open, seat)
}

// relent spreads n lane loans of seat, the last begun at t, after the loan
// out in seat (see the top of keeper.go).
func (kr *keeperReader) relent(seat int32, n int, t int64, line int) {
	r := kr.loanAt(seat)
	if n <= 0 {
		return
	}
	if r < 0 {
		// The loan before them began before the recording: only the last
		// lane loan's start is known.
		kr.counts.Before += n - 1
		kr.counts.Lane++
		kr.rows = append(kr.rows, Row{Line: line, Asked: t, Acquired: t, Release: -1, Answers: "lane"})
		kr.open[seat] = len(kr.rows) - 1
		return
	}
	first := kr.rows[r].Acquired
	gap := max(t-first, 0) / int64(n)
	if old := kr.rows[r].Answers; old != "lane" {
		kr.count(old, -1)
		kr.rows[r].Answers = "lane"
		kr.counts.Lane++
	}
	kr.rows[r].Release = first + gap
	for j := 1; j < n; j++ {
		at := first + int64(j)*gap
		kr.rows = append(kr.rows, Row{Line: line, Asked: at, Acquired: at, Release: at + gap, Answers: "lane"})
	}
	kr.rows = append(kr.rows, Row{Line: line, Asked: t, Acquired: t, Release: -1, Answers: "lane"})
	kr.counts.Lane += n
	kr.open[seat] = len(kr.rows) - 1
}

// count adds d to the count of callers read as how.
func (kr *keeperReader) count(how string, d int) {
	c := &kr.counts
	switch how {
	case "lock":
		c.Lock += d
	case "queued":
		c.Queued += d
	case "dialed":
		c.Dialed += d
	case "atreturn":
		c.AtReturn += d
	}
}

// Match is how far a run's Take answers agree with a recording's.
type Match struct {
	// Same is how many Takes, from the first, answered the same at the same
	// instant (since each one's first Take); Recorded and Replayed are how
	// many Takes each holds.
	Same, Recorded, Replayed int
	// Differs describes the first Take that differs (or the first one
	// missing from either side), empty when none does.
	Differs string
}

// Exact reports whether every Take answered as recorded.
func (m Match) Exact() bool { return m.Differs == "" }

// String says how many recorded Take answers the replay gave back.
func (m Match) String() string {
	if m.Exact() {
		return fmt.Sprintf("all %d recorded Take answers given back, in order, at their instants", m.Recorded)
	}
	return fmt.Sprintf("the first %d of %d recorded Take answers given back; then %s", m.Same, m.Recorded, m.Differs)
}

// Reproduced holds the Take steps of a run (recorded with Options.Recorder)
// against those of the recording its load came from: their answers (kind,
// seat, idle time, delay) and their instants, each counted from its side's
// first Take.
func Reproduced(recorded, replayed *pool.Recording) Match {
	takes := func(steps []pool.Step) []pool.Step {
		var out []pool.Step
		for _, s := range steps {
			if s.Op == pool.OpTake {
				out = append(out, s)
			}
		}
		return out
	}
	a, b := takes(recorded.Steps), takes(replayed.Steps)
	m := Match{Recorded: len(a), Replayed: len(b)}
	for i := range min(len(a), len(b)) {
		ta, tb := a[i].At-a[0].At, b[i].At-b[0].At
		if ta != tb || a[i].Answer() != b[i].Answer() {
			m.Differs = fmt.Sprintf("recorded step %d at %v answered %s, the replay at %v %s", a[i].Index, ta, a[i].Answer(), tb, b[i].Answer())
			return m
		}
		m.Same++
	}
	switch {
	case len(a) > len(b):
		m.Differs = fmt.Sprintf("the replay asks no more after %d (recorded step %d: %s)", len(b), a[len(b)].Index, a[len(b)].Answer())
	case len(b) > len(a):
		m.Differs = fmt.Sprintf("the replay asks %d more times (first: %s)", len(b)-len(a), b[len(a)].Answer())
	}
	return m
}
