package wardpool

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

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
}

// linOut is an operation's output.
type linOut struct {
	err    linErr
	id     int        // the resource lent, 0 if none
	dialed int        // the resource dialed for this call, 0 if none
	books  pool.Books // Stats, as linBooks reads it
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
	// samples is how many times the CPU sampler ran: timers, but no
	// operations.
	samples int
	ops     []porcupine.Operation
	info    porcupine.LinearizationInfo
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

	// The specification's own record of each resource, kept apart from
	// the Pool's so that freshness is held to the seeds' definition and
	// not only to the Pool that also answers: when it was made, when it
	// was last given back, and the generation (Resets) it was made in.
	born, given map[int]time.Time
	gen         map[int]int
	resets      int

	// The Keeper's queue of waiters, as the specification keeps it: an
	// Acquire that finds callers queued, or that the Pool answers Wait,
	// joins it (its retirements made on the way, Stale answers, are part
	// of its step); a step that gives something back or frees room then
	// serves it, oldest first, as the Keeper's serveLocked does, and each
	// waiter served must have got what its call returned.
	queue  []linWaiter
	served map[int]bool // operations served from the queue: a failed check sends them back to its front
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
	id     int
	own    bool
	closed bool // the Acquire was answered ErrClosed: its dial lands after Close
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
	limits := h.limits
	build := func(steps []linStep) *linMachine {
		w := h.guards.ward(h.start)
		p, err := pool.New[int](limits, w)
		if err != nil {
			panic(err)
		}
		m := &linMachine{p: p, w: w, limits: limits, start: h.start, now: h.start,
			born: map[int]time.Time{}, given: map[int]time.Time{}, gen: map[int]int{}, served: map[int]bool{}, pending: map[int]linPend{}, cpu: h.guards.cpu}
		for _, s := range steps {
			if !m.apply(s.in, s.out) {
				panic("replay of an accepted step refused")
			}
		}
		return m
	}
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
		DescribeOperation: func(input, output any) string { return describeLin(input.(linIn), output.(linOut)) },
		DescribeState:     func(s any) string { return s.(*linState).sum },
	}
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
				continue
			case pool.Ready:
				if in.kind == linAttempt {
					return t.Item == out.id && m.fresh(t.Item)
				}
				return out.err == linNone && out.id == t.Item && out.dialed == 0 && m.fresh(t.Item)
			case pool.Make:
				if out.dialed == 0 {
					return false
				}
				switch {
				case in.kind == linTry && out.err == linWouldWait:
					m.pending[in.n] = linPend{id: out.dialed}
				case in.kind == linAcquire && out.err == linNone && out.id == out.dialed:
					m.pending[in.n] = linPend{id: out.dialed, own: true}
				case in.kind == linAcquire && out.err == linClosed:
					m.pending[in.n] = linPend{id: out.dialed, own: true, closed: true}
				default:
					return false
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
		return p.Drop(in.id, now) && m.serve()
	case linLand:
		pend, ok := m.pending[in.n]
		if !ok || pend.id != in.id || pend.own != in.own {
			return false
		}
		delete(m.pending, in.n)
		kept := p.Made(in.id, now)
		if pend.own && kept == pend.closed {
			return false
		}
		if kept {
			m.born[in.id], m.gen[in.id] = now, m.resets
		}
		if !pend.own {
			// A background dial's resource goes idle, like a return.
			if kept && p.Give(in.id, now) {
				m.given[in.id] = now
			}
			return m.serve()
		}
		return true
	case linRelease:
		if in.fail {
			return p.Drop(in.id, now) && m.serve() // the Reset hook failed: destroyed
		}
		if p.SeatOf(in.id) < 0 {
			return false
		}
		if p.Give(in.id, now) { // false (closed, or made before a Reset): closed
			m.given[in.id] = now
		}
		return m.serve()
	case linDestroy, linHijack:
		return p.Drop(in.id, now) && m.serve()
	case linReset:
		p.Reset(now)
		m.resets++
		return m.serve()
	case linSetLimits:
		if m.closed {
			return out.err == linClosed
		}
		if out.err != linNone {
			return false
		}
		if _, err := p.SetLimits(in.lim, now); err != nil {
			return false
		}
		m.limits = in.lim // what is retired is closed; fresh reads the new ages
		return m.serve()  // a raised ceiling serves the queue
	case linClose:
		p.Close()
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
		if len(p.Evict(now)) > 0 {
			return m.serve()
		}
		return true
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
		fmt.Fprintf(&b, " c%d%s", l.Item, m.age(l.Item))
	}
	pend := make([]int, 0, len(m.pending))
	for n := range m.pending {
		pend = append(pend, n)
	}
	slices.Sort(pend)
	b.WriteString(" ] making[")
	for _, n := range pend {
		fmt.Fprintf(&b, " #%d:c%d/%v/%v", n, m.pending[n].id, m.pending[n].own, m.pending[n].closed)
	}
	b.WriteString(" ] queue[")
	for _, w := range m.queue {
		fmt.Fprintf(&b, " #%d:%v", w.n, w.attempt)
	}
	served := make([]int, 0, len(m.served))
	for n := range m.served {
		served = append(served, n)
	}
	slices.Sort(served)
	fmt.Fprintf(&b, " ] served%v", served)
	// The guards' whole state, not only what they read out: two states
	// alike in Limit but not in the limit behind it answer differently
	// later.
	if l := m.w.Limiter; l != nil {
		fmt.Fprintf(&b, " limit=%d/%d %x", l.Inflight(), l.Limit(), l.AppendState(nil, m.start))
	}
	if sh := m.w.Shedder; sh != nil {
		fmt.Fprintf(&b, " flying=%d %x", sh.Flying(), sh.AppendState(nil, m.start))
	}
	// The idle ones, top first (Close hands them out so, whatever the
	// guards would answer; this is what spends the machine), each with
	// how long it has been idle and its age.
	b.WriteString(" idle top first[")
	for _, id := range p.Close() {
		fmt.Fprintf(&b, " c%d:%v%s", id, now.Sub(m.given[id]), m.age(id))
	}
	b.WriteString(" ]")
	return b.String()
}

// age is a resource's age and how many Resets ago it was made, for the
// summary.
func (m *linMachine) age(id int) string {
	return fmt.Sprintf("(%v,g-%d)", m.now.Sub(m.born[id]), m.resets-m.gen[id])
}

// fresh reports whether resource id, which the Pool has just lent from
// idle, may be lent by the seeds' definition: idle no longer than Keep
// since its own last return, alive no longer than Life since it was made
// (both strict: exactly Keep or Life is still fresh).
func (m *linMachine) fresh(id int) bool {
	l := m.limits
	if l.Keep > 0 && m.now.Sub(m.given[id]) > l.Keep {
		return false
	}
	return l.Life == 0 || m.now.Sub(m.born[id]) <= l.Life
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
	}
	return b.String()
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
			continue
		case pool.Ready:
			if w.out.id != t.Item || !m.fresh(t.Item) || !w.attempt && (w.out.err != linNone || w.out.dialed != 0) {
				return false
			}
		case pool.Make:
			switch {
			case w.attempt || w.out.dialed == 0:
				return false
			case w.out.err == linNone && w.out.id == w.out.dialed:
				m.pending[w.n] = linPend{id: w.out.dialed, own: true}
			case w.out.err == linClosed:
				m.pending[w.n] = linPend{id: w.out.dialed, own: true, closed: true}
			default:
				return false
			}
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
	return true
}
