package wardpool

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The stall watch (Config.StallAfter): a pool whose callers have waited
// longer than the threshold while no loan came back for as long is starved,
// most often by its own callers (a handler that acquires a second resource
// while it holds one, at Size such handlers, waits for ever). The watch
// says so once per stall, with how many wait, how many are held, and where
// each holder acquired, and counts it (Stats.Stalls, Stats.Stalled).
//
// It does not tick: its timer is armed when a caller queues and no stall
// is reported, for the instant the oldest waiter will have waited the
// threshold with no loan back meanwhile, and is not armed again once
// nobody waits. A loan that comes back ends the stall and re-arms the
// watch. Everything below runs under Keeper.mu but the report.

// DefaultStallAfter is the stall watch's threshold when Config.StallAfter
// is zero: longer than any loan an interactive service means to hold while
// others wait, shorter than the deadlines requests commonly carry (30 s and
// more), so that a deadlock is reported while it lasts rather than when
// the contexts end.
const DefaultStallAfter = 10 * time.Second

// siteFrames is how many frames a call site records (Config.StallSites):
// enough to reach past a driver's frames to its caller's.
const siteFrames = 8

// stallWatch is the watch's state, guarded by Keeper.mu.
type stallWatch struct {
	t        Timer
	armed    bool
	reported bool      // the current stall was reported: quiet until a loan comes back
	back     time.Time // when a loan last came back; zero: none yet
}

// stallNote is a stall report not yet made: the holders' stacks are still
// raw.
type stallNote struct {
	waiting, held, size int
	waited              time.Duration // the oldest waiter's wait
	since               time.Duration // since a loan came back; negative: none did
	holders             []holderNote
}

// holderNote is one loan out during a stall.
type holderNote struct {
	held time.Duration
	pcs  []uintptr
	full bool // the leak watch's whole stack, not a call site
}

// captureSite records the calling goroutine's call site: its first
// siteFrames frames, skipping skip above captureSite's caller.
//
//go:noinline
func (s *stack) captureSite(skip int) {
	s.n = runtime.Callers(skip+2, s.pcs[:siteFrames])
}

// copyFrom makes s a copy of st, or empty for a nil st.
func (s *stack) copyFrom(st *stack) {
	s.n = 0
	if st != nil {
		s.n = copy(s.pcs[:], st.pcs[:st.n])
	}
}

// stallWaitLocked follows a caller's joining the queue at now: the watch's
// timer is armed, unless it is already or the stall is reported.
func (k *Keeper[T]) stallWaitLocked(now time.Time) {
	if k.stallAfter > 0 && !k.stall.armed && !k.stall.reported {
		k.armStallLocked(now, k.stallDueLocked())
	}
}

// stallBackLocked follows a loan's coming back at now: the stall, if one
// was reported, is over, and the watch is armed again while callers wait.
func (k *Keeper[T]) stallBackLocked(now time.Time) {
	k.stall.back = now
	if k.stall.reported {
		k.stall.reported = false
		if k.q.live > 0 && !k.stall.armed {
			k.armStallLocked(now, now.Add(k.stallAfter))
		}
	}
}

// stallDueLocked is when the pool will be stalled if nothing changes: the
// threshold after the later of the oldest waiter's start and the last
// loan's return. Callers must be queued.
func (k *Keeper[T]) stallDueLocked() time.Time {
	from := k.q.peek().start
	if from.Before(k.stall.back) {
		from = k.stall.back
	}
	return from.Add(k.stallAfter)
}

// armStallLocked sets the watch's timer for at.
func (k *Keeper[T]) armStallLocked(now, at time.Time) {
	if k.closed {
		return
	}
	d := max(at.Sub(now), time.Nanosecond)
	k.stall.armed = true
	if k.stall.t == nil {
		k.stall.t = k.clock.AfterFunc(d, k.stallTick)
		return
	}
	k.stall.t.Reset(d)
}

// stallTick is the watch's timer: it reports a stall that has come, or
// sets the timer for when one could, while callers wait.
func (k *Keeper[T]) stallTick() {
	k.mu.Lock()
	k.stall.armed = false
	if k.closed || k.stall.reported || k.q.live == 0 {
		k.mu.Unlock()
		return
	}
	now := k.now()
	if due := k.stallDueLocked(); now.Before(due) {
		k.armStallLocked(now, due)
		k.mu.Unlock()
		return
	}
	loans := k.p.Loans(now)
	if len(loans) == 0 {
		// Nothing is held: the callers wait for dials (or the ward), which
		// their errors and the dial figures speak for. Look again later.
		k.armStallLocked(now, now.Add(k.stallAfter))
		k.mu.Unlock()
		return
	}
	k.stall.reported = true
	k.stats.stalls++
	n := stallNote{
		waiting: k.q.live,
		held:    len(loans),
		size:    k.limits.Size,
		waited:  now.Sub(k.q.peek().start),
		since:   -1,
		holders: make([]holderNote, 0, len(loans)),
	}
	if !k.stall.back.IsZero() {
		n.since = now.Sub(k.stall.back)
	}
	for _, l := range loans {
		h := holderNote{held: l.Held}
		e := k.ents[k.p.SeatOf(l.Item)]
		switch {
		case e.lw != nil && e.lw.stack.n > 0:
			h.pcs, h.full = slices.Clone(e.lw.stack.pcs[:e.lw.stack.n]), true
		case e.site != nil && e.site.n > 0:
			h.pcs = slices.Clone(e.site.pcs[:e.site.n])
		}
		n.holders = append(n.holders, h)
	}
	k.bg++
	k.mu.Unlock()
	k.tellStall(n)
	k.mu.Lock()
	k.bgDoneLocked()
	k.mu.Unlock()
}

// StallMessage is the message of the stall watch's warning (Config.StallAfter).
const StallMessage = "wardpool: the pool is stalled: callers have waited longer than StallAfter and no loan has come back"

// tellStall logs n at warning level, never under the lock.
func (k *Keeper[T]) tellStall(n stallNote) {
	since := "never"
	if n.since >= 0 {
		since = n.since.String()
	}
	k.log.Warn(StallMessage,
		"pool", k.name,
		"waiting", n.waiting,
		"held", n.held,
		"size", n.size,
		"waited", n.waited,
		"since_return", since,
		"stall_after", k.stallAfter,
		"holders", holders(n.holders, k.leakAfter > 0 || k.stallSites))
}

// holders describes where the loans out were acquired: one paragraph per
// place, the most held first, each with how many loans it holds and the
// longest held. A call site is its first frames outside wardpool; the leak
// watch's stack is given whole. recorded says whether either is on.
func holders(hs []holderNote, recorded bool) string {
	type place struct {
		where   string
		n       int
		longest time.Duration
	}
	var places []*place
	byWhere := map[string]*place{}
	for _, h := range hs {
		where := "(call site not recorded: set StallSites or LeakAfter)"
		if recorded {
			where = "(call site not recorded: lent by AcquireAllIdle)"
		}
		switch {
		case h.full:
			where = strings.TrimRight(string(format(h.pcs)), "\n")
		case h.pcs != nil:
			where = site(h.pcs)
		}
		p := byWhere[where]
		if p == nil {
			p = &place{where: where}
			byWhere[where] = p
			places = append(places, p)
		}
		p.n++
		p.longest = max(p.longest, h.held)
	}
	slices.SortStableFunc(places, func(a, b *place) int { return b.n - a.n })
	var b bytes.Buffer
	for i, p := range places {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s, held up to %v, acquired at:\n%s", plural(p.n, "loan", "loans"), p.longest.Round(time.Millisecond), p.where)
	}
	return b.String()
}

// site formats a call site: up to three frames, the first outside
// wardpool's own code, as format does.
func site(pcs []uintptr) string {
	lines := strings.Split(strings.TrimRight(string(format(pcs)), "\n"), "\n")
	return strings.Join(lines[:min(len(lines), 6)], "\n")
}
