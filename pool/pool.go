// Package pool is the bookkeeping of holding a limited number of things:
// Pool, a state machine that never blocks, opens, closes, waits, reads a
// clock or draws a random number. Every method that depends on time takes
// now, and every random decision takes a draw the caller made, so the same
// calls give the same answers on every machine and a test can drive an hour
// of traffic in a loop. The runtime that does the waiting and the I/O
// around it is package wardpool (Keeper); a runtime of one's own (an event
// loop, a simulator) can be built on the same calls.
package pool

import (
	"slices"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// Pool is the state machine of a resource pool: which resources are live,
// which idle, which lent and since when, and which have sat or lived long
// enough to be let go. It performs no I/O; the caller opens what Take says to
// make, and closes what the pool hands back to close.
//
// A resource is recognised on its way back by identity (==), which is how
// its birth survives every loan and Life retires a resource reused all along.
// T should therefore be a handle such as a pointer; two resources that
// compare equal are one resource to the pool, and a value not equal to
// itself (a floating-point NaN) is never recognised: Give and Drop answer
// it as a resource the pool does not hold.
//
// Time. The origin of now does not matter, only differences do. The pool
// never sees time go backwards: an instant earlier than the latest one it
// was given is read as that latest one, so a clock that steps back ages
// nothing and shortens no loan. Give is the one exception: a resource given
// back at an earlier instant (a runtime that learns of a return after it
// has asked the pool something later) is idle since that instant, or since
// its loan began if that is later, and takes its place among the idle ones
// by it: Take, Evict and Next judge it by its own return, as if the Give
// had come on time.
//
// Nothing is lost. A resource leaves the pool only by being handed to the
// caller to close (a Stale answer, Evict, Close, or false from Give or Made)
// or by Drop.
//
// A Pool is not safe for concurrent use: it belongs to one goroutine, or to
// several under one mutex that also covers what each does with an answer.
// Keeper is that arrangement, ready made.
type Pool[T comparable] struct {
	limits Limits
	ward   ward.Ward
	warded bool // ward has a guard: the hot paths skip the ward without a call

	z      seats[T]
	hint   int32 // the seat lent last: most often the next one given back
	making int   // Make reservations not yet settled
	closed bool
	gen    uint32 // the generation: Reset moves it on (see Reset)

	// ceiling is the most resources that may be live, set from outside
	// (SetCeiling); -1 when none is set.
	ceiling int

	// room is how many resources the backend last had room for: a make
	// it refused as full (Unmade with ward.GuardFull) while others were
	// live sets it to those made, a resource made since raises it to those
	// held, it grows by one at roomUntil and each roomHold after (roomUntil
	// moves on with it), and no make starts while as many are live; -1
	// when not set.
	room      int
	roomUntil int64

	hold holding // callers held after a failover (see Hold)

	// How long loans are held, as the pool has measured them: a moving
	// mean of the loans given back or dropped (1/16 weight to each new one),
	// and how many it has seen (up to holdsMax). Admit predicts waits
	// from it.
	held  int64
	holds int

	rot rotation // a generation being retired over a window (see Reset)

	// The pool's clock: instants are nanoseconds since epoch, the first now
	// it was given, and never go backwards (see the type's doc).
	epoch   time.Time
	started bool
	last    int64
	lastAt  time.Time

	// Backoff after failed makes (used only with a ward Backoff).
	failures  int   // failed makes in a row
	holdUntil int64 // no Make before this instant
	lastDelay time.Duration

	books Books

	cls *classes // classes of callers (class.go); nil: none
}

// New returns an empty pool with limits l and the guards of w in front of
// its backend; the zero ward.Ward has none. The pool takes w's guards as its
// own: they must not be shared with another pool. New fails, with an error
// wrapping ErrLimits, when l has a negative field.
func New[T comparable](l Limits, w ward.Ward) (*Pool[T], error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	p := &Pool[T]{limits: l, ward: w, warded: !w.IsZero(), hint: none, ceiling: -1, room: -1}
	capacity := l.Size
	if capacity == 0 || capacity > 1024 {
		capacity = 16
	}
	p.z.init(capacity, l.Life > 0)
	return p, nil
}

// clock turns now into the pool's instant, never earlier than the latest one.
func (p *Pool[T]) clock(now time.Time) int64 {
	if now == p.lastAt && p.started {
		// The same reading again, as a runtime's cached clock gives:
		// skip the subtraction. (== compares the representation; a
		// different representation of the same instant takes the long way.)
		return p.last
	}
	if !p.started {
		p.started = true
		p.epoch, p.lastAt = now, now
		return 0
	}
	t := int64(now.Sub(p.epoch)) // saturates at ±292 years
	if t <= p.last {
		return p.last
	}
	if t > reanchor {
		return p.rebase(now, t)
	}
	p.last, p.lastAt = t, now
	return t
}

// reanchor is how far (about 36 years) the pool's instants may run from its
// epoch before the epoch moves: instants stay small enough that no age, and
// no shifted birth (see shift), can wrap around.
const reanchor = int64(1) << 60

// rebase moves the epoch to now, which is t past the old one, and every
// instant the pool holds with it; it runs once a few decades of steady time,
// or when a caller's clock jumps that far (a stray zero time.Time as the
// first reading, say). A jump of more than reanchor is read as one of
// reanchor: everything held is then decades old, past any sane age limit.
func (p *Pool[T]) rebase(now time.Time, t int64) int64 {
	d := p.last + min(t-p.last, reanchor) // where now falls on the old scale
	move := func(x int64) int64 { return max(x-d, -bound) }
	for i := range p.z.s {
		if s := &p.z.s[i]; s.st() != free {
			s.born, s.since = move(s.born), move(s.since)
		}
	}
	if p.holdUntil != 0 {
		p.holdUntil = move(p.holdUntil)
	}
	if p.rot.on {
		p.rot.from, p.rot.until = move(p.rot.from), move(p.rot.until)
	}
	// A hold that ends by the new epoch (instant 0) has ended (0 means
	// none), and a room that would have grown by then is forgotten:
	// decades have passed.
	if p.room >= 0 {
		if p.roomUntil = move(p.roomUntil); p.roomUntil <= 0 {
			p.room = -1
		}
	}
	if p.hold.until != 0 {
		if p.hold.until, p.hold.next = move(p.hold.until), move(p.hold.next); p.hold.until <= 0 {
			p.hold = holding{}
		}
	}
	p.epoch, p.last, p.lastAt = now, 0, now
	return 0
}

// instant is the time.Time of one of the pool's instants.
func (p *Pool[T]) instant(t int64) time.Time {
	if t == p.last {
		return p.lastAt // the reading it came from: nothing to build
	}
	return p.epoch.Add(time.Duration(t))
}

// Why a seat is stale.
const (
	fresh = iota
	pastKeep
	pastLife
)

// stale says whether seat s, idle, is past Keep or Life at t (see
// Limits.Past, the one definition of fresh).
func (p *Pool[T]) stale(s *seat[T], t int64) int {
	return p.limits.why(t-s.since, t-s.born)
}

// Take asks for a resource at now. roll is a draw in [0, 1) for the ward's
// breaker and cpu the host's CPU use in thousandths for its shedder; without
// a ward neither is read. See Kind for the answers.
//
// The most recently given back resource is handed out first: a warm one is
// likelier to be good, and handing out the newest lets the oldest age past
// Keep and be evicted, which is how a pool shrinks after a burst. Only that
// one is looked at: when it is past its age it is answered Stale (already off
// the books) rather than skipped, so it is closed whether or not the eviction
// timer has run.
func (p *Pool[T]) Take(now time.Time, roll float64, cpu int) Taken[T] {
	if p.cls != nil {
		return p.takeAs(now, roll, cpu, -1) // the default class (class.go)
	}
	return p.take(now, roll, cpu)
}

// take is Take's answer apart from classes: takeAs asks it once the class
// rule lets a caller through.
func (p *Pool[T]) take(now time.Time, roll float64, cpu int) Taken[T] {
	if p.closed {
		return Taken[T]{Kind: Closed}
	}
	t := p.clock(now)
	if i := p.z.top; i != none {
		s := &p.z.s[i]
		if why := p.stale(s, t); why != fresh {
			return Taken[T]{Kind: Stale, Item: p.retire(i, t, why), Seat: i}
		}
		if p.rotating(s) && t >= p.rot.until {
			// Its generation's window has passed: retired, not lent.
			p.rot.done++
			return Taken[T]{Kind: Stale, Item: p.retire(i, t, fresh), Seat: i}
		}
		if p.warded {
			if refusal, ok := p.admit(t, roll, cpu, false); !ok {
				return p.count(refusal)
			}
		}
		sat := time.Duration(t - s.since)
		p.z.pull(i, t)
		p.hint = i
		p.books.Loans++
		p.books.Reused++
		return Taken[T]{Kind: Ready, Item: s.item, Idle: sat, Seat: i}
	}
	if g, full := p.full(t); full {
		p.books.Waited++
		return p.waiting(g, t)
	}
	if w, wait := p.holdWait(t); wait {
		p.books.Waited++
		return w
	}
	if p.warded {
		if refusal, ok := p.admit(t, roll, cpu, true); !ok {
			return p.count(refusal)
		}
	}
	p.making++
	p.spaceHold(t)
	return Taken[T]{Kind: Make, Gen: p.gen}
}

// Give hands a lent resource back at now, keeping the birth it was lent
// with. It reports whether the pool kept it; false means the caller closes
// it, and comes when:
//
//   - Idle resources are at the Idle ceiling already (counted retired);
//   - the pool is closed (counted retired);
//   - item was made before the last Reset (counted retired);
//   - item is already idle: a double give. The pool cannot tell which holder
//     is right, so it takes the handle out altogether (counted retired)
//     rather than let one handle sit in two seats or be lent to two callers;
//   - item is unknown and no reservation is open, or item is unknown and
//     the pool is closed: nothing is counted, and an open reservation stays
//     open for Made or Unmade to settle.
//
// An unknown item while a reservation is open (and the pool not closed) is
// one made after a Make without Made being called: it fills that
// reservation, born now, and is then given back as any other. A resource given back past Life is kept: Take
// answers it Stale, or Evict retires it, as the next look at it will.
func (p *Pool[T]) Give(item T, now time.Time) bool {
	if p.cls != nil {
		p.classBack(item, true) // class.go
	}
	t, back := p.back(now)
	i, held := p.hint, true
	if i == none || p.z.s[i].st() != lent || p.z.s[i].item != item {
		// Not the one lent last (the common case of one caller at a
		// time skips the index): look it up.
		i, held = p.z.find(item)
	}
	if !held {
		if p.making == 0 || p.closed {
			return false
		}
		p.making--
		p.onMade(t)
		p.hold = holding{}
		i = p.z.add(item, t, p.gen)
		p.roomFor(t)
		p.books.Made++
		p.books.Loans++
	}
	if p.z.s[i].st() == idle {
		p.z.pull(i, t)
		p.z.remove(i)
		p.books.Retired++
		return false
	}
	return p.giveLent(i, max(back, p.z.s[i].since))
}

// back is now on the pool's scale for Give: the pool's instant t (never
// earlier than the latest, see clock), and the instant now itself when it
// is earlier than that (see the type's doc on time).
func (p *Pool[T]) back(now time.Time) (t, at int64) {
	t = p.clock(now)
	if now == p.lastAt {
		return t, t // the latest reading itself
	}
	return t, min(int64(now.Sub(p.epoch)), t)
}

// giveLent gives back the resource in seat i, which is lent, at t, which
// is not before its loan began: the branch of Give for a loan coming home.
// A resource made before the last Reset is retired, not kept.
func (p *Pool[T]) giveLent(i int32, t int64) bool {
	p.measure(t - p.z.s[i].since)
	if p.warded {
		p.onLoanEnd(p.z.s[i].since, t, true)
	}
	if s := &p.z.s[i]; s.gen() != p.gen && p.rotating(s) && !p.closed {
		// Of the generation being rotated out: retired when its turn is
		// due, and otherwise kept for now, like any other.
		if p.rotDue(t) {
			p.rot.done++
			p.z.remove(i)
			p.books.Retired++
			return false
		}
	} else if s.gen() != p.gen {
		p.z.remove(i)
		p.books.Retired++
		return false
	}
	if p.closed || (p.limits.Idle > 0 && p.z.idle >= p.limits.Idle) ||
		(p.ceiling >= 0 && p.live() > p.ceiling) || (p.limits.Size > 0 && p.live() > p.limits.Size) {
		p.z.remove(i)
		p.books.Retired++
		return false
	}
	p.z.pushAt(i, t)
	return true
}

// Drop takes a broken resource off the books at once, lent or idle, and
// reports whether the pool held it; the caller closes it either way. It is
// what keeps Live honest: without it a failed connection would hold a slot
// for ever. Dropping an unknown item does nothing and answers false.
func (p *Pool[T]) Drop(item T, now time.Time) bool {
	if p.cls != nil {
		p.classBack(item, false) // class.go
	}
	t := p.clock(now)
	i, held := p.z.find(item)
	if !held {
		return false
	}
	s := &p.z.s[i]
	if s.st() == idle {
		p.z.pull(i, t)
	} else {
		p.measure(t - s.since)
		p.onLoanEnd(s.since, t, false)
	}
	p.z.remove(i)
	p.books.Dropped++
	return true
}

// Evict removes every idle resource past Keep or Life at now and returns
// them for the caller to close; nil when there are none. Its cost is in
// proportion to what it removes, not to how many are idle: a pool of 100k
// idle resources with nothing expired answers in constant time (see
// seats.go).
func (p *Pool[T]) Evict(now time.Time) []T {
	t := p.clock(now)
	var out []T
	// The bottom of the idle list has sat longest, the top of the birth
	// heap lived longest: each loop stops at the first one still fresh.
	if p.limits.Keep > 0 {
		for i := p.z.bottom; i != none && p.limits.why(t-p.z.s[i].since, 0) == pastKeep; i = p.z.bottom {
			out = append(out, p.retire(i, t, pastKeep))
		}
	}
	if p.limits.Life > 0 {
		for i := p.z.oldest(); i != none && p.limits.why(0, t-p.z.s[i].born) == pastLife; i = p.z.oldest() {
			out = append(out, p.retire(i, t, pastLife))
		}
	}
	if p.rot.on {
		out = p.rotEvict(t, out)
	}
	return out
}

// retire takes idle seat i off the books for the caller to close, counting
// it under why, and returns its item.
func (p *Pool[T]) retire(i int32, t int64, why int) T {
	item := p.z.s[i].item
	p.z.pull(i, t)
	p.z.remove(i)
	p.books.Retired++
	switch why {
	case pastKeep:
		p.books.IdleRetired++
	case pastLife:
		p.books.LifeRetired++
	}
	return item
}

// Next returns the instant at which the next idle resource will be past its
// age, and false when none will (nothing idle, or no age limits). A runtime
// sleeps until then and calls Evict: one timer for the whole pool.
func (p *Pool[T]) Next() (time.Time, bool) {
	next, ok := int64(0), false
	consider := func(at int64) {
		if !ok || at < next {
			next, ok = at, true
		}
	}
	if k := int64(p.limits.Keep); k > 0 && p.z.bottom != none {
		consider(p.z.s[p.z.bottom].since + k + 1)
	}
	if l := int64(p.limits.Life); l > 0 {
		if i := p.z.oldest(); i != none {
			consider(p.z.s[i].born + l + 1)
		}
	}
	if at, due := p.rotNext(); due {
		consider(at)
	}
	if !ok {
		return time.Time{}, false
	}
	return p.instant(next), true
}

// Close empties the pool of everything idle, for the caller to close, and
// refuses every later Take with Closed. Lent resources are their borrowers'
// to return: Give answers false for each (so it is closed then), Drop takes
// it off as usual. Open reservations settle through Made (false) or Unmade.
// Closing a closed pool returns nil.
func (p *Pool[T]) Close() []T {
	if p.closed {
		return nil
	}
	p.closed = true
	return p.drainIdle(p.last)
}

// drainIdle retires every idle resource at t and returns them for closing.
func (p *Pool[T]) drainIdle(t int64) []T {
	var out []T
	for i := p.z.top; i != none; i = p.z.top {
		out = append(out, p.retire(i, t, fresh))
	}
	return out
}

// live is how many resources exist: idle, lent, and being made.
func (p *Pool[T]) live() int { return p.z.idle + p.z.lent + p.making }

// busy is how many resources are lent or being made.
func (p *Pool[T]) busy() int { return p.z.lent + p.making }

// Books returns the gauges and counters as one reading.
func (p *Pool[T]) Books() Books {
	b := p.books
	b.Live, b.Idle, b.Busy = p.live(), p.z.idle, p.busy()
	b.Rotating = p.rotLive()
	b.Holding = p.hold.until > p.last
	return b
}

// Loans returns every resource out on loan with how long it has been out at
// now, the longest held first. The pool cannot know which loan was
// forgotten, only the caller knows how long its work may take: the caller
// compares Held with its own threshold.
func (p *Pool[T]) Loans(now time.Time) []Lent[T] {
	t := p.clock(now)
	var dst []Lent[T]
	start := 0
	for i := range p.z.s {
		if s := &p.z.s[i]; s.st() == lent {
			dst = append(dst, Lent[T]{Item: s.item, Held: time.Duration(t - s.since)})
		}
	}
	slices.SortStableFunc(dst[start:], func(a, b Lent[T]) int {
		switch {
		case a.Held > b.Held:
			return -1
		case a.Held < b.Held:
			return 1
		}
		return 0
	})
	return dst
}
