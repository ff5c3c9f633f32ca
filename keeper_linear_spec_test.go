package wardpool

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// The sequential specification of the linearizability check (see
// keeper_linear_test.go): the operations and their answers, the Pool that
// replays them in the order porcupine tries, and how a history is described
// when no order explains it.

// Operations of a history.
type linKind uint8

const (
	linAcquire linKind = iota
	linTry
	linRelease
	linDestroy
	linHijack
	linReset
	linClose
	linStats
	linAdvance
	linTimer // a Keeper timer's callback ran
	linLand
	linAttempt   // an Acquire's or TryAcquire's take of a resource whose check then failed
	linCheckFail // the failed check, which drops the resource
	linSetLimits
	linRefuse   // a dial the backend refused as full (Config.Classify says Full), or failed (down)
	linFailover // Loan.Reset: a resource's word that its generation is condemned
)

// linIn is an operation's input.
type linIn struct {
	kind linKind
	n    int           // the operation's number, which its dial carries
	id   int           // Release, Destroy, Land: the resource
	fail bool          // Release: Config.Reset fails for it
	own  bool          // Land: the dial was an Acquire's own (else background)
	d    time.Duration // Advance
	lim  pool.Limits   // SetLimits
	down bool          // Refuse: the dial failed (a node down), not refused as full
}

// linOut is an operation's output.
type linOut struct {
	err    linErr
	id     int // the resource lent, 0 if none
	dialed int // the resource dialed for this call, 0 if none
	// refused is how many dials for this call the backend refused as
	// full before it was answered (or, for a TryAcquire, its background
	// dial, refused).
	refused int
	books   pool.Books // Stats, as linBooks reads it
}

type linErr uint8

const (
	linNone linErr = iota
	linClosed
	linWouldWait
	linShed
	linOther
)

// linHistory is one recorded history and what it ran with.
type linHistory struct {
	seed   uint64
	cfg    string
	start  time.Time
	limits pool.Limits
	guards linGuards // the ward's shedder and limiter, if any
	checks bool      // Config.Check on every loan (checkhook)
	full   bool      // dials may be refused as full (Config.Classify)
	hold   pool.Hold // Config.Hold, for Loan.Reset
	// samples is how many times the CPU sampler ran: timers, but no
	// operations.
	samples int
	// straddles is how many dial landings were under way as the clock
	// moved (linWorld.straddle).
	straddles int
	// nudges is how many times the clock moved for a round stuck on it
	// (linWorld.watch).
	nudges int
	ops    []porcupine.Operation
	info   porcupine.LinearizationInfo
	// stale says the history was refused, and lent a resource past Keep
	// or Life in every order (staleLends).
	stale bool
}

// linMachine is the specification: a Pool, driven as the Keeper should
// drive it, and what the Keeper keeps beside it.
type linMachine struct {
	p       *pool.Pool[int]
	w       ward.Ward // the pool's guards, read for the summary
	limits  pool.Limits
	start   time.Time // the history's first instant
	now     time.Time
	cpu     int             // the CPU reading, the same all history long
	pending map[int]linPend // operation -> its dial not yet landed
	closed  bool

	// own is the specification's own book of each resource the Keeper
	// holds, kept apart from the Pool's (issue 32): when it was made,
	// when it was last given back, whether it is idle, and the
	// generation (Resets) it was made in. Freshness is held to it (lend),
	// whatever the Pool answers; the Pool's answers only take resources
	// off it (retired, dropped), which can refuse a loan, never allow one.
	own    map[int]linOwn
	resets int

	// The Keeper's queue of waiters, as the specification keeps it: an
	// Acquire that finds callers queued, or that the Pool answers Wait,
	// joins it (its retirements made on the way, Stale answers, are part
	// of its step); a step that gives something back or frees room then
	// serves it, oldest first, as the Keeper's serveLocked does, and each
	// waiter served must have got what its call returned.
	queue  []linWaiter
	served map[int]bool // operations served from the queue: a failed check sends them back to its front

	// The callers whose own dial is in flight, oldest first, as the
	// Keeper keeps them (serveDialersLocked): when something is given
	// back and nobody is queued, the first of them is served with it. A
	// caller whose Acquire returned another resource than it dialed was
	// served so (byReturn); one that returned its own dial must have had
	// it land before anything idle could serve it.
	dialers  []linWaiter
	checkAll bool // Config.Check on every loan (CheckIdle < 0): no dialer is served by a return

	// A full backend (DESIGN.md, "A full backend makes callers wait, not
	// fail"), kept on the specification's own terms: how many dials of
	// each operation were refused so far, and the room the backend last
	// left. A refusal with others live sets the room to those made, from
	// that instant; each second after it the room grows by one, and a
	// resource made raises it, as grown by then, to those held (roomAt
	// moves to the last whole second it grew at). No make may start while as
	// many as the room are live: room, roomAt and roomSet bound the
	// Pool's answers from above, whatever they are.
	refusals map[int]int
	roomSet  bool
	room     int
	roomAt   time.Time
	// retry: a full backend's history, or a held one, in which the
	// Keeper's timer asks for its queued callers again (the Delay of a
	// Wait).
	retry bool

	// A hold after a failover (DESIGN.md, "Callers held through a
	// failover"), on the specification's own terms: Config.Hold, and
	// while a Loan.Reset's hold is on (until holdUntil, or the first
	// resource of the new generation made), the earliest instant the
	// next make may start.
	hold      pool.Hold
	holdOn    bool
	holdUntil time.Time
	holdNext  time.Time
}

// linOwn is the specification's own record of one resource (linMachine.own).
type linOwn struct {
	born time.Time // made: when its dial landed
	back time.Time // last given back (while idle)
	idle bool      // given back since its last loan, and not retired since
	gen  int       // the generation (count of Resets) it was made in
}

// linWaiter is an Acquire (or the attempt of one whose check then failed)
// in the specification's queue, with what its call returned.
type linWaiter struct {
	n       int
	attempt bool
	out     linOut
}

// linPend is a reservation: the dial of an Acquire (own) or a TryAcquire.
type linPend struct {
	id       int
	own      bool
	byReturn bool   // the Acquire was served by a return while this dial was in flight
	closed   bool   // the Acquire was answered ErrClosed: its dial lands after Close
	gen      int    // the generation (count of Resets) the reservation was opened in
	pgen     uint32 // the Pool's name for it (Taken.Gen), handed back to Made
	refuse   bool   // the backend refuses this dial as full (linRefuse settles it)
}

// linState is porcupine's state: the operations taken so far, replayed on
// a fresh machine at each step (the Pool cannot be copied), and a summary
// of what the machine holds, by which equal states are recognised.
type linState struct {
	steps []linStep
	sum   string
}

type linStep struct {
	in  linIn
	out linOut
}

// model is the specification for h, for porcupine.
func (h *linHistory) model() porcupine.Model {
	build := h.machine
	return porcupine.Model{
		Init: func() any { return &linState{sum: build(nil).summary()} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(*linState)
			in, out := input.(linIn), output.(linOut)
			m := build(s.steps)
			if !m.apply(in, out) {
				return false, nil
			}
			steps := append(s.steps[:len(s.steps):len(s.steps)], linStep{in, out})
			return true, &linState{steps: steps, sum: m.summary()}
		},
		Equal: func(a, b any) bool { return a.(*linState).sum == b.(*linState).sum },
		Hash: func(s any) uint64 {
			f := fnv.New64a()
			f.Write([]byte(s.(*linState).sum))
			return f.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			in, ok1 := input.(linIn)
			out, ok2 := output.(linOut)
			if !ok1 || !ok2 {
				return "" // the visualizer asks about an operation it has no record of
			}
			return describeLin(in, out)
		},
		DescribeState: func(s any) string { return s.(*linState).sum },
	}
}

// machine is a fresh specification for h with steps, each accepted
// before, taken again.
func (h *linHistory) machine(steps []linStep) *linMachine {
	w := h.guards.ward(h.start)
	p, err := pool.New[int](h.limits, w)
	if err != nil {
		panic(err)
	}
	m := &linMachine{p: p, w: w, limits: h.limits, start: h.start, now: h.start,
		own: map[int]linOwn{}, served: map[int]bool{}, pending: map[int]linPend{}, cpu: h.guards.cpu, checkAll: h.checks,
		refusals: map[int]int{}, retry: h.full || h.hold.For > 0, hold: h.hold}
	for _, s := range steps {
		if !m.apply(s.in, s.out) {
			panic("replay of an accepted step refused")
		}
	}
	return m
}

// apply takes one operation with its output on the machine, and reports
// whether the specification allows it.
func (m *linMachine) apply(in linIn, out linOut) bool {
	p, now := m.p, m.now
	switch in.kind {
	case linAcquire, linTry, linAttempt:
		if m.closed {
			return in.kind != linAttempt && out.err == linClosed && out.dialed == 0
		}
		if len(m.queue) > 0 && m.retry && !m.served[in.n] {
			// The Keeper asks the Pool for the queued callers first,
			// this Acquire last among them: in these classes the clock
			// alone may have let the first go (a full backend's room
			// grew, a hold's Every passed) with no step to serve it.
			if in.kind == linAcquire {
				m.enqueue(in, out)
				return m.serve()
			}
			if !m.serve() {
				return false
			}
		}
		if len(m.queue) > 0 {
			// Callers are queued: a TryAcquire is told so, an Acquire
			// queues behind them, unasked (the Keeper asks the Pool for
			// them first), unless it comes back from a failed check.
			if in.kind == linTry {
				return out.err == linWouldWait && out.dialed == 0
			}
			m.enqueue(in, out)
			return true
		}
		for {
			t := p.Take(now, 0, m.cpu)
			switch t.Kind {
			case pool.Stale:
				delete(m.own, t.Item)
				continue
			case pool.Ready:
				// Lent from idle: fresh by the specification's own book
				// first, then the one the Pool would lend.
				if in.kind == linAttempt {
					return m.lend(out.id) && t.Item == out.id
				}
				return out.err == linNone && out.dialed == 0 && m.lend(out.id) && out.id == t.Item
			case pool.Make:
				if in.kind == linAttempt || !m.open(in.n, in.kind == linTry, out, t.Gen) {
					return false
				}
				if in.kind == linAcquire {
					m.dialers = append(m.dialers, linWaiter{n: in.n, out: out})
				}
				return true
			case pool.Wait:
				if in.kind == linTry {
					return out.err == linWouldWait && out.dialed == 0
				}
				m.enqueue(in, out) // served later, by a step that frees something
				return true
			case pool.Shed:
				return in.kind != linAttempt && out.err == linShed && out.dialed == 0
			default:
				return false
			}
		}
	case linCheckFail:
		delete(m.own, in.id)
		return p.Drop(in.id, now) && m.serve()
	case linLand:
		pend, ok := m.pending[in.n]
		if !ok || pend.refuse || pend.id != in.id || pend.own != in.own {
			return false
		}
		if i := m.dialer(in.n); i >= 0 {
			if pend.byReturn {
				return false // it lands first: its caller would have had it
			}
			m.dialers = slices.Delete(m.dialers, i, i+1)
		}
		delete(m.pending, in.n)
		kept := linMade(p, in.id, pend.pgen, now)
		if pend.own && kept == pend.closed {
			return false
		}
		if kept {
			// Of the generation its reservation was opened in: a dial in
			// flight across a Reset makes a resource of the old one.
			m.own[in.id] = linOwn{born: now, gen: pend.gen}
			if pend.gen == m.resets {
				m.holdOn = false // the new generation's first: the hold ends
			}
			if m.roomSet {
				// Grown to now first: the room a make raises is the
				// one it had at that instant.
				grown := m.now.Sub(m.roomAt) / time.Second
				m.room += int(grown)
				m.roomAt = m.roomAt.Add(grown * time.Second)
				m.room = max(m.room, p.Books().Live-len(m.pending))
			}
		}
		if !pend.own {
			// A background dial's resource goes idle, like a return.
			if kept {
				m.giveBack(in.id, p.Give(in.id, now))
			}
			return m.serve()
		}
		return true
	case linRelease:
		if o, ok := m.own[in.id]; !ok || o.idle {
			return false // not out on loan, by the specification's own book
		}
		if in.fail {
			delete(m.own, in.id)
			return p.Drop(in.id, now) && m.serve() // the Reset hook failed: destroyed
		}
		if p.SeatOf(in.id) < 0 {
			return false
		}
		// false (closed, made before a Reset, or over the Idle ceiling):
		// retired and closed.
		m.giveBack(in.id, p.Give(in.id, now))
		return m.serve()
	case linDestroy, linHijack:
		delete(m.own, in.id)
		return p.Drop(in.id, now) && m.serve()
	case linReset:
		m.retired(p.Reset(now, 0))
		m.resets++
		return m.serve()
	case linSetLimits:
		if m.closed {
			return out.err == linClosed
		}
		if out.err != linNone {
			return false
		}
		gone, err := p.SetLimits(in.lim, now)
		if err != nil {
			return false
		}
		m.retired(gone)
		m.limits = in.lim // what is retired is closed; fresh reads the new ages
		return m.serve()  // a raised ceiling serves the queue
	case linClose:
		m.retired(p.Close())
		m.closed = true
		// Every caller queued is told the Keeper closed.
		for _, w := range m.queue {
			if w.attempt || w.out.err != linClosed || w.out.dialed != 0 {
				return false
			}
		}
		m.queue = nil
		return out.err == linNone
	case linStats:
		return linBooks(p.Books()) == out.books
	case linAdvance:
		m.now = now.Add(in.d)
		return true
	case linTimer:
		// The Keeper's timer evicts what is past its age now, and serves
		// the queue when that made room.
		if gone := p.Evict(now); len(gone) > 0 {
			m.retired(gone)
			return m.serve()
		}
		if m.retry {
			// It also asks for the queued callers again when a Wait said
			// when to (a full backend's room grows): the clock moved.
			return m.serve()
		}
		return true
	case linRefuse:
		return m.refuse(in.n, in.down)
	case linFailover:
		if o, ok := m.own[in.id]; !ok || o.idle {
			return false // not out on loan, by the specification's own book
		}
		if gone, ok := p.ResetFor(in.id, now, m.hold); ok {
			m.retired(gone)
			m.resets++
			if m.hold.For > 0 {
				m.holdOn, m.holdUntil, m.holdNext = true, now.Add(m.hold.For), now
			}
		}
		// Of an old generation now, or before: retired, not kept.
		if p.Give(in.id, now) {
			return false
		}
		delete(m.own, in.id)
		return m.serve()
	}
	return false
}

// summary describes everything that decides the machine's later answers:
// the idle stack in order with each resource's idle time and birth, the
// lent ones, the reservations, the generation each resource belongs to,
// and the time. It probes the pool destructively: the machine is spent.
func (m *linMachine) summary() string {
	var b strings.Builder
	p, now := m.p, m.now
	fmt.Fprintf(&b, "t=%v closed=%v limits=%+v books=%+v", now.Sub(m.start), m.closed, m.limits, linBooks(p.Books()))
	lent := p.Loans(now)
	slices.SortFunc(lent, func(x, y pool.Lent[int]) int { return x.Item - y.Item })
	b.WriteString(" lent[")
	for _, l := range lent {
		fmt.Fprintf(&b, " c%d", l.Item)
	}
	pend := make([]int, 0, len(m.pending))
	for n := range m.pending {
		pend = append(pend, n)
	}
	slices.Sort(pend)
	b.WriteString(" ] making[")
	for _, n := range pend {
		fmt.Fprintf(&b, " #%d:c%d/%v/%v/%v/%v/g-%d", n, m.pending[n].id, m.pending[n].own, m.pending[n].byReturn, m.pending[n].closed, m.pending[n].refuse, m.resets-m.pending[n].gen)
	}
	b.WriteString(" ] queue[")
	for _, w := range m.queue {
		fmt.Fprintf(&b, " #%d:%v", w.n, w.attempt)
	}
	b.WriteString(" ] dialers[")
	for _, w := range m.dialers {
		fmt.Fprintf(&b, " #%d", w.n)
	}
	served := make([]int, 0, len(m.served))
	for n := range m.served {
		served = append(served, n)
	}
	slices.Sort(served)
	fmt.Fprintf(&b, " ] served%v", served)
	if len(m.refusals) > 0 || m.roomSet {
		refused := slices.Sorted(maps.Keys(m.refusals))
		b.WriteString(" refused[")
		for _, n := range refused {
			fmt.Fprintf(&b, " #%d:%d", n, m.refusals[n])
		}
		fmt.Fprintf(&b, " ] room=%v/%d/%v", m.roomSet, m.room, now.Sub(m.roomAt))
	}
	if m.holding() {
		fmt.Fprintf(&b, " held until %v, next make %v", m.holdUntil.Sub(m.start), m.holdNext.Sub(m.start))
	}
	// The guards' whole state, not only what they read out: two states
	// alike in Limit but not in the limit behind it answer differently
	// later.
	if l := m.w.Limiter; l != nil {
		fmt.Fprintf(&b, " limit=%d/%d %x", l.Inflight(), l.Limit(), l.AppendState(nil, m.start))
	}
	if sh := m.w.Shedder; sh != nil {
		fmt.Fprintf(&b, " flying=%d %x", sh.Flying(), sh.AppendState(nil, m.start))
	}
	// The specification's own book, each resource with its age, how
	// long it has been idle (if it is), and how many Resets ago it was
	// made.
	ids := slices.Sorted(maps.Keys(m.own))
	b.WriteString(" own[")
	for _, id := range ids {
		o := m.own[id]
		fmt.Fprintf(&b, " c%d:age=%v,g-%d", id, now.Sub(o.born), m.resets-o.gen)
		if o.idle {
			fmt.Fprintf(&b, ",idle=%v", now.Sub(o.back))
		}
	}
	// The Pool's idle ones, top first (Close hands them out so, whatever
	// the guards would answer; this is what spends the machine).
	b.WriteString(" ] idle top first[")
	for _, id := range p.Close() {
		fmt.Fprintf(&b, " c%d", id)
	}
	b.WriteString(" ]")
	return b.String()
}

// lend holds a loan of resource id from idle, at the machine's instant, to
// the specification's own rule of freshness (issue 32), on its own book
// and not the Pool's: id must have been given back since its last loan
// (and not retired or dropped since), and must not have been idle longer
// than Keep nor have lived longer than Life. Both bounds are strict: a
// resource exactly Keep idle, or exactly Life old, is fresh. It marks id
// lent.
func (m *linMachine) lend(id int) bool {
	o, ok := m.own[id]
	if !ok || !o.idle || o.gen != m.resets || !linFresh(m.limits, m.now.Sub(o.back), m.now.Sub(o.born)) {
		return false // not idle, of a generation a Reset retired, or stale
	}
	o.idle = false
	m.own[id] = o
	return true
}

// linFresh is the definition of fresh the specification holds the Keeper
// to, written out here rather than taken from the pool package: idle no
// longer than Keep, alive no longer than Life; a zero bound is no bound.
func linFresh(l pool.Limits, idle, age time.Duration) bool {
	return (l.Keep == 0 || idle <= l.Keep) && (l.Life == 0 || age <= l.Life)
}

// giveBack notes in the specification's own book that id came back at the
// machine's instant, kept idle when the Pool kept it (the Idle ceiling, a
// Reset and Close retire a return), off the book otherwise.
func (m *linMachine) giveBack(id int, kept bool) {
	o, ok := m.own[id]
	if !ok || !kept {
		delete(m.own, id)
		return
	}
	o.idle, o.back = true, m.now
	m.own[id] = o
}

// retired takes resources the Pool retired off the specification's own
// book.
func (m *linMachine) retired(gone []int) {
	for _, id := range gone {
		delete(m.own, id)
	}
}

// linMade is Pool.Made for the specification: the check's Keepers draw no
// Life jitter (Config.LifeJitter is zero), so no resource lives longer than
// Life. The one place the specification calls Made.
func linMade(p *pool.Pool[int], id int, gen uint32, now time.Time) bool {
	return p.Made(id, gen, now, 0)
}

// linBooks is the part of a Keeper's books the specification holds it to:
// the gauges, and the counters whose every step is a call of the
// specification. (Waited counts the Keeper's asking again for its queue,
// and the split of Retired into IdleRetired and LifeRetired depends on the
// instants at which the timer runs between two of the clock's steps.)
func linBooks(b pool.Books) pool.Books {
	return pool.Books{Live: b.Live, Idle: b.Idle, Busy: b.Busy, Made: b.Made, Loans: b.Loans,
		Reused: b.Reused, Retired: b.Retired, Dropped: b.Dropped, Failed: b.Failed}
}

// describeLin is one operation, short.
func describeLin(in linIn, out linOut) string {
	res := func() string {
		s := ""
		switch out.err {
		case linClosed:
			s = "ErrClosed"
		case linWouldWait:
			s = "ErrWouldWait"
		case linShed:
			s = "ShedError"
		case linOther:
			s = "error"
		default:
			s = fmt.Sprintf("c%d", out.id)
		}
		if out.dialed != 0 {
			s += fmt.Sprintf(" (dialed c%d)", out.dialed)
		}
		if out.refused != 0 {
			s += fmt.Sprintf(" (%d refused as full)", out.refused)
		}
		return s
	}
	switch in.kind {
	case linAcquire:
		return "Acquire → " + res()
	case linTry:
		return "TryAcquire → " + res()
	case linRelease:
		if in.fail {
			return fmt.Sprintf("Release(c%d), Reset hook fails", in.id)
		}
		return fmt.Sprintf("Release(c%d)", in.id)
	case linDestroy:
		return fmt.Sprintf("Destroy(c%d)", in.id)
	case linHijack:
		return fmt.Sprintf("Hijack(c%d)", in.id)
	case linReset:
		return "Keeper.Reset"
	case linSetLimits:
		l := in.lim
		return fmt.Sprintf("SetLimits(size=%d idle=%d keep=%v life=%v) → %v", l.Size, l.Idle, l.Keep, l.Life, out.err)
	case linClose:
		return "Close"
	case linStats:
		b := out.books
		return fmt.Sprintf("Stats → live %d idle %d busy %d, made %d loans %d reused %d retired %d dropped %d",
			b.Live, b.Idle, b.Busy, b.Made, b.Loans, b.Reused, b.Retired, b.Dropped)
	case linAdvance:
		return fmt.Sprintf("clock +%v", in.d)
	case linTimer:
		return "the Keeper's timer runs"
	case linAttempt:
		return fmt.Sprintf("takes c%d to check it", out.id)
	case linCheckFail:
		return fmt.Sprintf("Check(c%d) fails: dropped", in.id)
	case linRefuse:
		if in.down {
			return fmt.Sprintf("dial for #%d fails", in.n)
		}
		return fmt.Sprintf("dial for #%d refused as full", in.n)
	case linFailover:
		return fmt.Sprintf("Loan(c%d).Reset", in.id)
	case linLand:
		who := "background"
		if in.own {
			who = "for #" + fmt.Sprint(in.n)
		}
		return fmt.Sprintf("dial of c%d lands (%s)", in.id, who)
	}
	return "?"
}

// tally counts h's operations by what they did, to show what a run
// covered.
func (h *linHistory) tally(into map[string]int) {
	into["CPU samples (no operation)"] += h.samples
	into["landings under way as the clock moved"] += h.straddles
	if h.nudges > 0 {
		into["clock moved for a stuck round"] += h.nudges
	}
	for _, o := range h.ops {
		in, out := o.Input.(linIn), o.Output.(linOut)
		key := ""
		switch in.kind {
		case linAcquire, linTry:
			key = map[linKind]string{linAcquire: "Acquire", linTry: "TryAcquire"}[in.kind]
			switch {
			case out.err == linClosed:
				key += " ErrClosed"
			case out.err == linShed:
				key += " ShedError"
			case out.err == linOther:
				key += " dial error"
			case out.err == linWouldWait && out.dialed != 0:
				key += " ErrWouldWait+dial"
			case out.err == linWouldWait:
				key += " ErrWouldWait"
			case out.dialed != 0:
				key += " dialed"
			default:
				key += " idle"
			}
		case linRelease:
			key = "Release"
			if in.fail {
				key = "Release (Reset hook fails)"
			}
		case linLand:
			key = "landing"
			if !in.own {
				key = "background landing"
			}
		case linDestroy:
			key = "Destroy"
		case linHijack:
			key = "Hijack"
		case linTimer:
			key = "timer runs"
		case linAttempt:
			key = "Check fails"
		case linCheckFail:
			continue
		case linRefuse:
			key = "dial refused as full"
			if in.down {
				key = "dial fails"
			}
		case linFailover:
			key = "Loan.Reset"
		case linSetLimits:
			key = "SetLimits"
			if out.err == linClosed {
				key += " ErrClosed"
			}
		default:
			key = strings.Fields(describeLin(in, out))[0]
		}
		into[key]++
	}
}

func tallyString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}

// describe prints the history, one operation a line in the order they
// began, with the instants each began and ended.
func (h *linHistory) describe() string {
	ops := slices.Clone(h.ops)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	var b strings.Builder
	fmt.Fprintf(&b, "  %s\n", h.cfg)
	for _, o := range ops {
		in := o.Input.(linIn)
		who := fmt.Sprintf("g%d", o.ClientId)
		if in.kind == linLand {
			who = "dial"
		}
		fmt.Fprintf(&b, "  %4d..%-4d %-5s #%-3d %s\n", o.Call, o.Return, who, in.n, describeLin(in, o.Output.(linOut)))
	}
	if len(h.info.PartialLinearizations()) > 0 {
		b.WriteString("  longest order the Pool accepts:")
		longest := []int(nil)
		for _, part := range h.info.PartialLinearizations() {
			for _, l := range part {
				if len(l) > len(longest) {
					longest = l
				}
			}
		}
		for _, i := range longest {
			fmt.Fprintf(&b, " #%d", h.ops[i].Input.(linIn).n)
		}
		b.WriteString("\n")
		// The state the specification is in after that order: what no
		// operation left could be applied to.
		var steps []porcupine.Operation
		for _, i := range longest {
			steps = append(steps, h.ops[i])
		}
		fmt.Fprintf(&b, "  the specification after it: %s\n", h.stateAfter(steps))
		b.WriteString(h.nextRefused(longest))
	}
	for _, s := range h.staleLends() {
		fmt.Fprintf(&b, "  in every order: %s\n", s)
	}
	return b.String()
}

// nextRefused describes the operations that could have come next after
// the order (those that began before any left had ended), each refused by
// the specification; for a Stats, with how its books differ from the
// specification's.
func (h *linHistory) nextRefused(order []int) string {
	done := map[int]bool{}
	var steps []linStep
	for _, i := range order {
		done[i] = true
		steps = append(steps, linStep{h.ops[i].Input.(linIn), h.ops[i].Output.(linOut)})
	}
	first := int64(-1)
	for i, o := range h.ops {
		if !done[i] && (first < 0 || o.Return < first) {
			first = o.Return
		}
	}
	var b strings.Builder
	for i, o := range h.ops {
		if done[i] || o.Call > first {
			continue
		}
		in, out := o.Input.(linIn), o.Output.(linOut)
		fmt.Fprintf(&b, "  refused next: #%d %s\n", in.n, describeLin(in, out))
		if in.kind == linStats {
			want := linBooks(h.machine(steps).p.Books())
			fmt.Fprintf(&b, "    books (-specification +Stats):\n%s", cmp.Diff(want, out.books))
		}
	}
	return b.String()
}

// staleLends finds, in h alone and without trying any order, the loans
// from idle that were past Keep or Life in every order: the clock at the
// loan was at least the sum of the moves that ended before the loan began,
// and at the resource's last return (or its making) at most the sum of
// those that began before that return ended. Each is described in a line.
// It says nothing of a history with SetLimits, whose ages change.
func (h *linHistory) staleLends() []string {
	var moves []porcupine.Operation
	for _, o := range h.ops {
		switch o.Input.(linIn).kind {
		case linSetLimits:
			return nil
		case linAdvance:
			moves = append(moves, o)
		}
	}
	// atLeast and atMost bound the clock (since the start) at instant x.
	atLeast := func(x int64) (t time.Duration) {
		for _, o := range moves {
			if o.Return < x {
				t += o.Input.(linIn).d
			}
		}
		return t
	}
	atMost := func(x int64) (t time.Duration) {
		for _, o := range moves {
			if o.Call < x {
				t += o.Input.(linIn).d
			}
		}
		return t
	}
	l := h.limits
	var found []string
	for _, lend := range h.ops {
		in, out := lend.Input.(linIn), lend.Output.(linOut)
		fromIdle := (in.kind == linAcquire || in.kind == linTry) && out.err == linNone && out.dialed == 0 ||
			in.kind == linAttempt
		if !fromIdle || out.id == 0 {
			continue
		}
		at := atLeast(lend.Call)
		back, made := time.Duration(-1), time.Duration(-1)
		for _, g := range h.ops {
			gin := g.Input.(linIn)
			if gin.id != out.id || g.Call >= lend.Return {
				continue
			}
			switch {
			case gin.kind == linLand:
				made = atMost(g.Return)
				if !gin.own {
					back = max(back, made)
				}
			case gin.kind == linRelease && !gin.fail:
				back = max(back, atMost(g.Return))
			}
		}
		switch {
		case back < 0:
			found = append(found, fmt.Sprintf("#%d lent c%d, never given back before", in.n, out.id))
		case l.Keep > 0 && at-back > l.Keep:
			found = append(found, fmt.Sprintf("#%d lent c%d at %v or later, given back at %v or earlier: idle %v or more, Keep %v",
				in.n, out.id, at, back, at-back, l.Keep))
		case l.Life > 0 && made >= 0 && at-made > l.Life:
			found = append(found, fmt.Sprintf("#%d lent c%d at %v or later, made at %v or earlier: %v old or more, Life %v",
				in.n, out.id, at, made, at-made, l.Life))
		}
	}
	return found
}

// stateAfter replays ops, in order, on a fresh specification and describes
// the state they leave it in.
func (h *linHistory) stateAfter(ops []porcupine.Operation) string {
	m := h.model()
	var s any = m.Init()
	for _, o := range ops {
		ok, next := m.Step(s, o.Input, o.Output)
		if !ok {
			return "(the order does not replay)"
		}
		s = next
	}
	return m.DescribeState(s)
}

// enqueue puts the Acquire (or attempt) in, which returned out, in the
// queue: at its back, or at its front when it comes back after a check of
// a resource it was served failed (the Keeper's pushFront).
func (m *linMachine) enqueue(in linIn, out linOut) {
	w := linWaiter{n: in.n, attempt: in.kind == linAttempt, out: out}
	if m.served[in.n] {
		m.queue = append([]linWaiter{w}, m.queue...)
		return
	}
	m.queue = append(m.queue, w)
}

// serve asks the Pool for the queued callers, oldest first, as the Keeper
// does when something came back or room was freed, and reports whether
// each served got what its call returned.
func (m *linMachine) serve() bool {
	for len(m.queue) > 0 {
		w := m.queue[0]
		t := m.p.Take(m.now, 0, m.cpu)
		switch t.Kind {
		case pool.Stale:
			delete(m.own, t.Item)
			continue
		case pool.Ready:
			if !w.attempt && (w.out.err != linNone || w.out.dialed != 0) || !m.lend(w.out.id) || w.out.id != t.Item {
				return false
			}
		case pool.Make:
			if w.attempt || !m.open(w.n, false, w.out, t.Gen) {
				return false
			}
			m.dialers = append(m.dialers, w)
		case pool.Wait:
			return true
		case pool.Shed:
			if w.attempt || w.out.err != linShed || w.out.dialed != 0 {
				return false
			}
		default:
			return false
		}
		m.served[w.n] = true
		m.queue = m.queue[1:]
	}
	return m.serveDialers()
}

// serveDialers hands what is idle, with nobody queued, to the callers whose
// own dial is in flight, oldest first, as the Keeper's serveDialersLocked
// does, and reports whether each so served was one whose Acquire returned
// a resource given back (not its own dial).
func (m *linMachine) serveDialers() bool {
	if m.checkAll {
		m.dialers = nil // every loan is checked: a dialing caller waits for its dial
		return true
	}
	for len(m.queue) == 0 && len(m.dialers) > 0 && !m.closed {
		if m.p.Books().Idle == 0 {
			return true
		}
		w := m.dialers[0]
		t := m.p.Take(m.now, 0, m.cpu)
		switch t.Kind {
		case pool.Stale:
			delete(m.own, t.Item)
			continue
		case pool.Ready:
			if pend := m.pending[w.n]; pend.refuse {
				// Its dial will be refused: it is served by this return,
				// and dials no more.
				if w.out.err != linNone || w.out.dialed != 0 || w.out.refused != m.refusals[w.n]+1 {
					return false
				}
				pend.own = false
				m.pending[w.n] = pend
			} else if !pend.byReturn {
				return false // this would have served it before its dial landed
			}
			if !m.lend(w.out.id) || w.out.id != t.Item {
				return false
			}
		default:
			return true // the ward would not lend: it waits on
		}
		m.dialers = m.dialers[1:]
		p := m.pending[w.n]
		p.byReturn = false // served: its dial lands for nobody, as a background one
		m.pending[w.n] = p
	}
	return true
}

// dialer is the index of operation n in the dialers, or -1.
func (m *linMachine) dialer(n int) int {
	for i, w := range m.dialers {
		if w.n == n {
			return i
		}
	}
	return -1
}

// open opens the reservation of a make the Pool answered for operation n
// (a TryAcquire's when try), whose call returned out, and reports whether
// the call's answer and the backend's room allow the make: no make starts
// while as many are live as the room a full backend left, grown by one
// for each whole second since it was refused (DESIGN.md). The dial it
// opens is refused as full while the call saw more refusals than the
// specification has taken (linRefuse settles it); it lands otherwise.
func (m *linMachine) open(n int, try bool, out linOut, pgen uint32) bool {
	if m.roomSet {
		grown := int(m.now.Sub(m.roomAt) / time.Second)
		if m.p.Books().Live-1 >= m.room+grown {
			return false // as many live as there is room for, before this one
		}
	}
	if m.holding() {
		if m.now.Before(m.holdNext) {
			return false // one make every Every while held
		}
		every := m.hold.Every
		if every <= 0 {
			every = pool.DefaultHoldEvery
		}
		m.holdNext = m.now.Add(every)
	}
	pend := linPend{id: out.dialed, gen: m.resets, pgen: pgen}
	switch {
	case m.refusals[n] < out.refused:
		// Refused: what the call saw comes of what follows.
		pend.id, pend.refuse = 0, true
		if try && out.err != linWouldWait {
			return false
		}
		pend.own = !try
	case out.dialed == 0:
		return false
	case try && out.err == linWouldWait:
	case try:
		return false
	case out.err == linNone && out.id == out.dialed:
		pend.own = true
	case out.err == linNone:
		// Served by a return before its dial landed: the dial lands for
		// nobody.
		pend.byReturn = true
	case out.err == linClosed:
		pend.own, pend.closed = true, true
	default:
		return false
	}
	m.pending[n] = pend
	return true
}

// holding reports whether a hold after a failover is on at the machine's
// instant: For has not passed since the Loan.Reset, and no resource of
// the new generation was made.
func (m *linMachine) holding() bool {
	if m.holdOn && !m.now.Before(m.holdUntil) {
		m.holdOn = false
	}
	return m.holdOn
}

// refuse takes the refusal, as full, of operation n's dial (or its
// failure, when down: see below). The backend
// is full, not down: with other resources live (made, or being made) the
// caller waits, back at the front of the queue, for one to come back or
// for the next make, and the backend's room becomes the resources made;
// with none live (or the Keeper closed) nothing will come back, and the
// caller gets the error (ErrClosed once closed). A dial nobody waits for
// (a TryAcquire's, or one whose caller a return served) is refused
// unseen. A dial that failed (down) has its caller wait for the next
// make while a hold after a failover is on, and fail otherwise.
func (m *linMachine) refuse(n int, down bool) bool {
	pend, ok := m.pending[n]
	if !ok || !pend.refuse {
		return false
	}
	delete(m.pending, n)
	m.refusals[n]++
	p := m.p
	// Live counts this reservation too, until Unmade gives it back.
	wait := p.Books().Live-1 > 0 && !m.closed
	by := ward.GuardFull
	if down {
		// A failed dial: its caller waits for the next only while held.
		wait, by = m.holding() && !m.closed, ward.GuardNone
	}
	if p.Unmade(m.now, 0, by) != wait {
		return false
	}
	if wait && !down {
		m.roomSet, m.room, m.roomAt = true, p.Books().Live-len(m.pending), m.now
	}
	i := m.dialer(n)
	if !pend.own || i < 0 {
		return m.serve()
	}
	w := m.dialers[i]
	m.dialers = slices.Delete(m.dialers, i, i+1)
	switch {
	case m.closed:
		if w.out.err != linClosed {
			return false
		}
	case wait:
		m.queue = append([]linWaiter{w}, m.queue...)
	case w.out.err != linOther || w.out.dialed != 0 || w.out.refused != m.refusals[n]:
		return false
	}
	return m.serve()
}
