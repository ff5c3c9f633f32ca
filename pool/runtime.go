package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file is the part of Pool's API that a runtime needs beyond taking and
// giving: seats (so a runtime can keep its own per-resource records in a
// slice), warming without a caller, the backoff's horizon, Reset, and the
// two questions behind a lock-free lane (Lane and Relent). Keeper uses
// nothing else of Pool; a runtime of one's own (an event loop, a simulator)
// can be built on the same calls.

// A seat is a resource's place in the pool: an index below Seats that stays
// the resource's own from Made until it leaves, so a runtime can keep its
// own per-resource records in a slice instead of a map.

// Seats returns how many seats the pool has ever used: every seat is below
// it. It never shrinks.
func (p *Pool[T]) Seats() int { return len(p.z.s) }

// SeatLent returns the seat of the resource lent last, by a Ready answer of
// Take or by Relent, and -1 before any: read right after a Ready, it is the
// seat of the resource that answer lent.
func (p *Pool[T]) SeatLent() int32 { return p.hint }

// SeatOf returns the seat of a resource on the books, idle or lent, and -1
// for one the pool does not hold.
func (p *Pool[T]) SeatOf(item T) int32 {
	if i, ok := p.z.find(item); ok {
		return i
	}
	return none
}

// Born returns when the resource in seat is past Life, as an instant on
// now's scale, and false when the pool has no Life limit or seat holds no
// resource. The instant includes the resource's jitter (see MadeJitter).
func (p *Pool[T]) Born(seat int32) (time.Time, bool) {
	if seat < 0 || int(seat) >= len(p.z.s) || p.z.s[seat].st() == free {
		return time.Time{}, false
	}
	return p.instant(p.z.s[seat].born), true
}

// GiveSeat is Give for a resource the caller knows to be lent from seat (a
// runtime keeps the seat of each loan): it spares Give's map lookup. When
// seat does not hold item lent, it is exactly Give.
func (p *Pool[T]) GiveSeat(seat int32, item T, now time.Time) bool {
	if p.rec != nil {
		return p.recGiveSeat(seat, item, now)
	}
	if seat < 0 || int(seat) >= len(p.z.s) || p.z.s[seat].st() != lent || p.z.s[seat].item != item {
		return p.Give(item, now)
	}
	return p.giveLent(seat, p.clock(now))
}

// Reserve opens a Make reservation for a resource no caller asked for yet
// (a runtime keeping some resources warm), and reports whether it did. It
// answers as Take would for a Make, asking the ward the same questions, but
// never lends an idle resource, and a refusal is not counted in the books:
// no caller was refused. The reservation settles through Made or Unmade.
func (p *Pool[T]) Reserve(now time.Time, roll float64, cpu int) bool {
	if p.rec != nil {
		return p.recReserve(now, roll, cpu)
	}
	if p.closed {
		return false
	}
	t := p.clock(now)
	if _, full := p.full(); full {
		return false
	}
	if _, ok := p.admit(t, roll, cpu, true); !ok {
		return false // admit counts nothing: Take counts its own refusals
	}
	p.making++
	return true
}

// HeldUntil returns when the ward's backoff lets makes start again, and
// false when it holds nothing back.
func (p *Pool[T]) HeldUntil() (time.Time, bool) {
	if p.ward.Backoff == nil || p.failures == 0 || p.holdUntil <= p.last {
		return time.Time{}, false
	}
	return p.instant(p.holdUntil), true
}

// Reset retires every idle resource now, returning them for the caller to
// close, and marks every resource lent now as of an older generation: Give
// retires such a resource when it comes back (false: the caller closes it)
// instead of keeping it. It is for a backend failover, when every
// connection made before is suspect. Reservations open now are of the new
// generation: what they make is kept. Resetting a closed pool returns nil.
func (p *Pool[T]) Reset(now time.Time) []T {
	if p.rec != nil {
		return p.recReset(now)
	}
	t := p.clock(now)
	if p.closed {
		return nil
	}
	p.gen = (p.gen + 1) & genMask
	return p.drainIdle(t)
}

// Generation counts the pool's Resets, modulo 2^30 (a pool Reset a billion
// times starts again at 0). A resource made since the last one is of the
// current generation (see SeatGeneration).
func (p *Pool[T]) Generation() uint32 { return p.gen }

// SeatGeneration returns the generation of the resource in seat: a lent
// resource of an older generation than Generation is retired when it comes
// back.
func (p *Pool[T]) SeatGeneration(seat int32) uint32 {
	if seat < 0 || int(seat) >= len(p.z.s) {
		return 0
	}
	return p.z.s[seat].gen()
}

// Lane reports whether, in the pool's present state, a Give followed at once
// by a Take that lends the same resource changes nothing but that
// resource's loan and the books: no guard of the ward watches loans begin or
// end (a shedder or a limiter does), the Idle ceiling is not reached (the
// Give would not retire), and the pool is not closed. A pair leaves that
// state as it found it, so while the pool is asked nothing else, a runtime
// may carry out any number of such pairs itself, without the pool, and
// report them afterwards with Relent.
//
// With a shedder or a limiter Lane reports false: see LanePairs.
func (p *Pool[T]) Lane() bool { return p.pairs() && p.passes() }

// passes reports whether a Give followed by a Take of the same resource
// would keep it and lend it again, leaving the pool's lists as they were:
// the Idle ceiling is not reached (the Give would not retire), and the
// pool is open.
func (p *Pool[T]) passes() bool {
	l := p.limits
	// With Idle at or above Size the Idle ceiling never binds a Give: a
	// Give needs a resource lent, so fewer than Size are idle.
	idleOK := l.Idle == 0 || (l.Size > 0 && l.Idle >= l.Size) || p.z.idle < l.Idle
	return !p.closed && idleOK && (p.ceiling < 0 || p.Live() <= p.ceiling)
}

// LanePairs is Lane for a pool whose ward watches loans begin and end (a
// shedder, a limiter, or both). It reports whether, in the pool's present
// state and with the host's CPU at cpu thousandths, a Give followed by a
// Take that lends the same resource would be answered so, and leave the
// state in which the same holds:
//
//   - the shedder is Cold at cpu: it admits every loan, however many;
//   - the limiter has no more leases out than its limit: a Give that ends
//     a loan held at most hold gives one back with a quick sample, which
//     never lowers the limit, so the Take that follows finds a lease free.
//     hold is the limiter's Slow (zero: a loan of any length).
//
// Unlike Lane's pairs, each pair matters to the guards at its own instants
// and in its place among the others: a runtime that carries out such
// pairs itself reports each with Pair (or Pairs), in the order it made
// them, before it asks the pool anything else, and keeps cpu the reading
// it passes until then. ok is false without a shedder or a limiter (use
// Lane), and whenever a pair could be answered otherwise.
func (p *Pool[T]) LanePairs(cpu int) (hold time.Duration, ok bool) {
	w := &p.ward
	if p.pairs() || !p.passes() {
		return 0, false
	}
	if w.Shedder != nil && !w.Shedder.Cold(cpu) {
		return 0, false
	}
	if w.Limiter != nil {
		if w.Limiter.Inflight() > w.Limiter.Limit() {
			return 0, false
		}
		hold = max(w.Limiter.Policy().Slow, 0)
	}
	return hold, true
}

// Pair reports one pair a runtime carried out itself on the word of
// LanePairs (or Lane): the resource lent from seat came back at gave and
// was lent again at took. It has the effect of GiveSeat at gave and then
// a Take at took that answers Ready with it: the loan ending at gave is
// settled with the shedder and the limiter, a new one begins at took with
// each, and Loans and Reused rise by one.
//
// As with Relent, the runtime vouches that the resource was fresh at took
// (Limits.Past). Pair reports false, and changes nothing, when the pair
// could not have been answered so: seat does not hold item lent, the
// resource is of an older generation, the pool is closed, or the Give
// would retire it (the Idle ceiling). The guards are told as they would
// have been; should the limiter have no lease free for the Take (a runtime
// clock that stepped back can make a loan read as slow), the loan still
// counts as leased, for it was made. A recording pool answers false: it
// records no pairs of this kind.
func (p *Pool[T]) Pair(seat int32, item T, gave, took time.Time) bool {
	if p.rec != nil || !p.passes() || !p.lentIn(seat, item) {
		return false
	}
	t1 := p.clock(gave)
	t2 := p.clock(took)
	g := p.guards()
	g.one(time.Duration(t1), p.held(seat, t1))
	p.relend(seat, t2, 1)
	return true
}

// lentIn reports whether seat holds item lent, of the current generation.
func (p *Pool[T]) lentIn(seat int32, item T) bool {
	if seat < 0 || int(seat) >= len(p.z.s) {
		return false
	}
	s := &p.z.s[seat]
	return s.gs == p.gen|uint32(lent)<<genBits && s.item == item // lent, of this generation
}

// held is how long the loan from seat, lent, had been out at t (never
// negative: the pool's instants never go back).
func (p *Pool[T]) held(seat int32, t int64) time.Duration {
	return max(time.Duration(t-p.z.s[seat].since), 0)
}

// relend is the rest of n pairs of seat (Pair, Pairs, Relent), the last
// Take at t: the Give and the Take leave the idle list and the birth heap
// as they were (pushed on top, pulled from the top), so only the loan's
// start and the books move.
func (p *Pool[T]) relend(seat int32, t int64, n int) {
	p.z.s[seat].since = t
	p.hint = seat
	p.books.Loans += uint64(n)
	p.books.Reused += uint64(n)
}

// PairAt is one pair for Pairs: the resource lent from Seat came back Gave
// after Pairs' base instant and was lent again Took after it.
type PairAt[T comparable] struct {
	Seat       int32
	Item       T
	Gave, Took time.Duration
}

// Pairs reports pairs as Pair does, in order, and returns how many it
// took: all of them, or up to the first it refused. It reads the base
// instant once, so a runtime that logs its pairs as offsets reports them
// without building an instant for each.
func (p *Pool[T]) Pairs(base time.Time, pairs []PairAt[T]) int {
	if len(pairs) == 0 || p.rec != nil || !p.passes() {
		return 0
	}
	off := int64(base.Sub(p.epoch)) // base on the pool's scale
	g := p.guards()
	last, n := p.last, 0
	for _, x := range pairs {
		t1 := max(last, off+int64(x.Gave))
		t2 := max(t1, off+int64(x.Took))
		if !p.lentIn(x.Seat, x.Item) {
			break
		}
		at, held := time.Duration(t1), p.held(x.Seat, t1)
		if (!g.shed || at >= g.lo && at < g.hi) && (g.limit == nil || g.limit.Quick(held)) {
			g.n++ // the common case, decided here
			g.sum += held
		} else {
			g.one(at, held)
		}
		p.relend(x.Seat, t2, 1)
		last = t2
		n++
	}
	g.flush()
	p.last = last
	p.settle()
	return n
}

// settle brings lastAt, the instant clock compares a new reading with, up
// to last after Pairs moved last on by offsets.
func (p *Pool[T]) settle() { p.lastAt = p.instant(p.last) }

// pairGuards tells the guards of a run of pairs what giveLent's onLoanEnd
// and take's onLoan would tell them of each: a loan ended well at the
// Give, held since its start, and a new one begun. Pairs that are easy
// for both (the Give in the shedder's window's newest bucket, the relay's
// span, and the loan quick for the limiter) are counted into a batch that
// is told as one; any other pair is told alone, after the batch before it,
// so the guards hear their pairs in order.
type pairGuards struct {
	shed   bool
	relay  ward.Relay
	lo, hi time.Duration // the relay's span
	limit  *ward.Limiter
	n      int           // pairs in the batch
	sum    time.Duration // their loans' response times summed
}

// guards readies the guards for a run of pairs.
func (p *Pool[T]) guards() pairGuards {
	g := pairGuards{limit: p.ward.Limiter}
	if s := p.ward.Shedder; s != nil {
		g.relay, g.shed = s.Relay(p.epoch), true // instants are offsets from the epoch
		g.lo, g.hi = g.relay.Span()
	}
	return g
}

// one tells the guards the batch, then one pair whose Give is at (from the
// epoch), ending a loan held for held.
func (g *pairGuards) one(at, held time.Duration) {
	g.flush()
	if g.shed {
		g.relay.Pass(at, held) // SettleAfter, Admit
		g.lo, g.hi = g.relay.Span()
	}
	if g.limit != nil {
		g.limit.Settle(held, true)
		g.limit.Lease()
	}
}

// flush tells the guards the batch.
func (g *pairGuards) flush() {
	if g.shed {
		g.relay.Passes(g.n, g.sum)
	}
	if g.limit != nil {
		g.limit.Passes(g.n)
	}
	g.n, g.sum = 0, 0
}

// pairs reports whether the ward lets Give/Take pairs pass unseen at all.
func (p *Pool[T]) pairs() bool { return p.ward.Shedder == nil && p.ward.Limiter == nil }

// Relent reports n loans that a runtime made itself, as the pool would
// have: the resource lent from seat was given back and taken again n times,
// each time by a Take that Lane and Limits.Past say would have answered
// Ready with it, the last of them at now. It has the effect of those n
// Give/Take pairs: the loan's start moves to now, and Loans and Reused rise
// by n. The pairs were made while Lane reported true, but may be reported
// after later calls (a Reset, a Close, other Gives): a runtime reports them
// when the resource next passes through its lock. It reports false, and
// changes nothing, when the ward has a shedder or a limiter, n is not
// positive, or seat does not hold item lent: those pairs could not have
// been answered so.
func (p *Pool[T]) Relent(seat int32, item T, n int, now time.Time) bool {
	if p.rec != nil {
		return p.recRelent(seat, item, n, now)
	}
	if n <= 0 || !p.pairs() || seat < 0 || int(seat) >= len(p.z.s) {
		return false
	}
	s := &p.z.s[seat]
	if s.st() != lent || s.item != item {
		return false
	}
	p.relend(seat, p.clock(now), n)
	return true
}

// full reports whether the pool has no room for another resource: Size is
// reached (ward.GuardNone), or the ceiling set from outside is
// (ward.GuardCeiling).
func (p *Pool[T]) full() (ward.Guard, bool) {
	live := p.Live()
	if p.limits.Size > 0 && live >= p.limits.Size {
		return ward.GuardNone, true
	}
	if p.ceiling >= 0 && live >= p.ceiling {
		return ward.GuardCeiling, true
	}
	return ward.GuardNone, false
}

// SetCeiling sets the most resources that may be live from now on, below
// Limits.Size, from knowledge outside the pool: the slots of a fleet-wide
// connection budget this replica holds (Keeper does this with
// Config.Shared). Take answers Wait, with Guard ward.GuardCeiling, when the
// ceiling is reached; a Give while more are live than the ceiling retires
// the resource (false: the caller closes it), and Trim retires idle ones
// above it; Lane reports false meanwhile. A negative n removes the ceiling,
// which is the default.
func (p *Pool[T]) SetCeiling(n int) {
	if p.rec != nil {
		p.recCeiling(n)
		return
	}
	p.ceiling = max(n, -1)
}

// Ceiling returns the ceiling SetCeiling set, and -1 when none is set.
func (p *Pool[T]) Ceiling() int { return p.ceiling }

// Trim retires idle resources, those given back longest ago first, while
// more are live than the ceiling, and returns them for the caller to close
// (counted retired); nil without a ceiling or when nothing is over it.
func (p *Pool[T]) Trim(now time.Time) []T {
	if p.rec != nil {
		return p.recTrim(now)
	}
	t := p.clock(now)
	var out []T
	for p.ceiling >= 0 && p.Live() > p.ceiling && p.z.bottom != none {
		out = append(out, p.retire(p.z.bottom, t, fresh))
	}
	return out
}
