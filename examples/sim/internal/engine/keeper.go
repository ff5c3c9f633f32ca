package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
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
//     means nobody waited for it: its caller had given up or been served by
//     a return (below), or the dial was a background one. An Unmade ends
//     the oldest dial with an error, and the wait of its caller if a return
//     did not serve it, unless the pool answers that its caller waits (a
//     hold after a failover, a full backend): the Keeper puts it back at
//     the front of its queue.
//   - A Wait with a Delay arms the Keeper's timer, which asks for the head
//     of the queue then. Until the head is told otherwise, the queue waits
//     for time, not for a return, so a Take answered otherwise meanwhile is
//     the Keeper asking for the head when a caller arrived behind it (that
//     caller joins the back, its arrival exact), not a sign that the
//     callers queued gave up.
//   - With nobody queued, the Keeper asks at a return for the callers
//     dialing, oldest first, while something is idle: a Take at a return
//     past the queue that lends (after any Stale) serves the oldest caller
//     dialing that no return served yet, and its dial lands later for
//     nobody (a Made handed on). Any other answer leaves it dialing. Such
//     callers are counted as Returned: every instant recorded.
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
	// how it was read: lock, queued, dialed, returned, atreturn, lane,
	// failed, gaveup, waiting), in order of Asked, in nanoseconds since the
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
	Source *record.Recording
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
	// Returned: served while their own dial was in flight by a resource
	// given back meanwhile (the oldest such caller first, as the Keeper
	// serves them); their dial lands for nobody.
	Returned int
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
// the recorded one (Lane and AtReturn; Queued, Dialed and Returned are
// exact unless someone gave up or dials ended out of order).
func (c KeeperCounts) Estimated() int { return c.Lane + c.AtReturn }

// String says in one line how the callers were read.
func (c KeeperCounts) String() string {
	return fmt.Sprintf("%d through the lock at once, %d after a recorded Wait, %d by their own dial, %d by a return while dialing (exact); "+
		"%d first seen when the Keeper served its queue (arrival late, or exact), %d lane loans (spread evenly: estimated); "+
		"%d refused or failed, %d gave up, %d waiting at the end, %d still out; %d loans begun before the recording left out; "+
		"%d returns paired with one of several dialed loans (a guess)",
		c.Lock, c.Queued, c.Dialed, c.Returned, c.AtReturn, c.Lane, c.Failed, c.GaveUp, c.Waiting, c.Open, c.Before, c.Guessed)
}

// ReadKeeper reads a recording written by pool.Recorder and rebuilds its
// callers (see the top of keeper.go). A recording that does not read gets
// an error wrapping record.ErrRecording (truncated, corrupted, another
// version); one that reads but holds no caller, or an answer that does not
// parse, an error wrapping ErrKeeperLoad. It never panics.
func ReadKeeper(data []byte) (*KeeperLoad, error) {
	rc, err := record.ReadRecording(data)
	if err != nil {
		return nil, err
	}
	for _, st := range rc.Steps {
		switch st.Op {
		case "TakeAs", "Serve", "MadeAs", "UnmadeAs":
			// Classes of callers: rebuilding a load of several classes
			// from a recording is not done yet. Say so, rather than
			// "no acquire" for a load whose acquires are all TakeAs.
			return nil, fmt.Errorf("%w: the recording's pool had classes of callers (a %s step); the simulator does not rebuild their load from a recording yet: describe the classes in a scenario file (class, class-load)", ErrKeeperLoad, st.Op)
		}
	}
	kr := &keeperReader{open: map[int32]int{}, seats: seatModel{ok: true}}
	if err := kr.read(rc.Steps); err != nil {
		return nil, err
	}
	if len(kr.rows) == 0 {
		return nil, fmt.Errorf("%w: its %d steps hold no acquire", ErrKeeperLoad, len(rc.Steps))
	}
	kl := &KeeperLoad{
		Limits: rc.Limits, Backoff: rc.Ward().Backoff != nil, Steps: len(rc.Steps),
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
