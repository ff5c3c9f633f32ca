package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file is the part of Pool's API that a runtime needs beyond taking and
// giving: seats (so a runtime can keep its own per-resource records in a
// slice), warming without a caller, the backoff's horizon, Reset and the
// ceiling. Keeper uses nothing else of Pool; a runtime of one's own (an
// event loop, a simulator) can be built on the same calls.

// A seat is a resource's place in the pool: an index below Seats that stays
// the resource's own from Made until it leaves, so a runtime can keep its
// own per-resource records in a slice instead of a map.

// SeatOf returns the seat of a resource on the books, idle or lent, and -1
// for one the pool does not hold. A seat is a resource's place in the pool:
// a small index that stays the resource's own from Made until it leaves, so
// a runtime can keep its own per-resource records in a slice. A Ready
// answer carries it (Taken.Seat); SeatOf is for a resource Made just
// registered.
func (p *Pool[T]) SeatOf(item T) int32 {
	if i, ok := p.z.find(item); ok {
		return i
	}
	return none
}

// Reserve opens a Make reservation for a resource no caller asked for yet
// (a runtime keeping some resources warm). It answers as Take would, asking
// the ward the same questions, but never lends an idle resource: Make (with
// the reservation's Gen, for Made) when it opened one; otherwise the answer
// that refused it (Wait when the pool is full, Later or Shed with the
// guard, Closed), not counted in the books: no caller was refused. The
// reservation settles through Made or Unmade.
func (p *Pool[T]) Reserve(now time.Time, roll float64, cpu int) Taken[T] {
	if p.closed {
		return Taken[T]{Kind: Closed}
	}
	t := p.clock(now)
	if g, full := p.full(t); full {
		return p.waiting(g, t)
	}
	if w, wait := p.holdWait(t); wait {
		return w
	}
	if refusal, ok := p.admit(t, roll, cpu, true); !ok {
		return refusal // admit counts nothing: Take counts its own refusals
	}
	p.making++
	if p.cls != nil {
		p.cls.making[len(p.cls.making)-1]++ // the default class's (class.go)
	}
	p.spaceHold(t)
	return Taken[T]{Kind: Make, Gen: p.gen}
}

// HeldUntil returns when the ward's backoff lets makes start again, and
// false when it holds nothing back.
func (p *Pool[T]) HeldUntil() (time.Time, bool) {
	if p.ward.Backoff == nil || p.failures == 0 || p.holdUntil <= p.last {
		return time.Time{}, false
	}
	return p.instant(p.holdUntil), true
}

// Reset retires the current generation: every resource the pool holds now
// (idle or lent) and every reservation open now. It is for a backend
// failover, when every connection made before is suspect, and for rotated
// credentials or a moved endpoint, when each must be replaced. Lent
// resources of the old generation are retired when they come back (Give
// answers false: the caller closes them); a reservation open now makes a
// resource of the old generation, which serves the caller it was made for
// and is retired on its return (see Made). Resetting a closed pool returns
// nil.
//
// With over zero, every idle resource is retired now, returned for the
// caller to close, and every lent one on its return. With over positive,
// the generation is retired at a bounded pace over that window, so that a
// pool of n does not open n new resources at once: one at once and one
// more every over/n, the idle ones idle longest first (Evict retires them;
// Next says when the next is due) and the lent ones as they come back,
// each when its turn is due; until then an old resource may still be lent.
// At the end of the window every old one left is retired: idle ones by
// Evict, lent ones on their return. Books.Rotating counts the old ones
// still live. A Reset during a rotation retires what is left of the
// earlier one at once (its idle resources now, its lent ones on return).
func (p *Pool[T]) Reset(now time.Time, over time.Duration) []T {
	t := p.clock(now)
	if p.closed {
		return nil
	}
	var out []T
	if p.rot.on {
		// What is left of an earlier rotation goes at once.
		for i := p.z.bottom; i != none; {
			up := p.z.s[i].up
			if p.rotating(&p.z.s[i]) {
				out = append(out, p.retire(i, t, fresh))
			}
			i = up
		}
		p.rot.on = false
	}
	old := p.gen
	p.gen = (p.gen + 1) & genMask
	if over <= 0 {
		return append(out, p.drainIdle(t)...)
	}
	p.startRotation(old, p.live(), t, over) // dials in flight are of the old generation too
	return p.rotEvict(t, out)
}

// ResetFor is Reset on the word of one resource that failed in a way that
// condemns every resource made with it (a database that turned read-only
// after a failover): it resets, and reports true, only when item is on the
// books (idle or lent) and of the current generation. A resource made
// before the last Reset is retired already, so the failures of a whole
// generation, reported one after another, reset the pool once: the
// resources made since are not retired on the word of one that was
// condemned before them. It returns the idle resources retired, for the
// caller to close, as Reset does; nil and false when it resets nothing,
// in which case nothing changes. item itself is not given back: when lent,
// its Give (or Drop) follows as usual, and Give retires it after a reset.
//
// With a Hold (h.For positive), the pool then holds its callers: see Hold.
// Until the hold ends, Take and Reserve start at most one make every
// h.Every and answer Wait (with ward.GuardHold and the Delay until the next
// may start) otherwise; Unmade of a failed make answers true (its caller
// waits for the next) and the ward hears nothing; the first resource of
// the new generation made ends it, as For running out does.
func (p *Pool[T]) ResetFor(item T, now time.Time, h Hold) ([]T, bool) {
	if p.closed {
		return nil, false
	}
	i, ok := p.z.find(item)
	if !ok || p.z.s[i].gen() != p.gen && !p.rotating(&p.z.s[i]) {
		return nil, false
	}
	out := p.Reset(now, 0)
	p.startHold(h, p.last)
	return out, true
}

// full reports whether the pool has no room for another resource at t:
// Size is reached (ward.GuardNone), the ceiling set from outside is
// (ward.GuardCeiling), or as many are live as the backend last had room
// for (ward.GuardFull; the room grows by one at roomUntil and at each
// roomHold after it).
func (p *Pool[T]) full(t int64) (ward.Guard, bool) {
	live := p.live()
	if p.limits.Size > 0 && live >= p.limits.Size {
		return ward.GuardNone, true
	}
	if p.ceiling >= 0 && live >= p.ceiling {
		return ward.GuardCeiling, true
	}
	p.grow(t)
	if p.room >= 0 && live >= p.room {
		return ward.GuardFull, true
	}
	return ward.GuardNone, false
}

// grow brings a full backend's room up to t: one more for each whole
// roomHold since the last growth. A long quiet spell (2^20 of them, a
// dozen days) leaves the room forgotten.
func (p *Pool[T]) grow(t int64) {
	if p.room < 0 || t < p.roomUntil {
		return
	}
	n := (t-p.roomUntil)/int64(roomHold) + 1
	if n > 1<<20 {
		p.room = -1
		return
	}
	p.room += int(n)
	p.roomUntil += n * int64(roomHold)
}

// roomFor raises a full backend's room to the resources the pool holds,
// one having just joined at t: the backend had room for it. The room is
// grown up to t first, so that what it is afterwards depends on the
// instants of the refusal and of the makes alone, not on whether a Take
// happened to look at it in between (a raise applied before a growth
// that was due would otherwise add the growth on top of it).
func (p *Pool[T]) roomFor(t int64) {
	if p.grow(t); p.room >= 0 {
		p.room = max(p.room, p.z.idle+p.z.lent)
	}
}

// roomHold is how long the room a full backend left holds before it grows
// by one (see Unmade): one more make a second is tried, whether or not a
// resource came back.
const roomHold = time.Second

// waiting is the Wait answer for guard g at t: with the backend full, Delay
// says when the room grows, so that the pool tries a make again even if
// nothing comes back.
func (p *Pool[T]) waiting(g ward.Guard, t int64) Taken[T] {
	w := Taken[T]{Kind: Wait, Guard: g}
	if g == ward.GuardFull {
		w.Delay = time.Duration(p.roomUntil - t)
	}
	return w
}

// SetCeiling sets the most resources that may be live from now on, below
// Limits.Size, from knowledge outside the pool: the slots of a fleet-wide
// connection budget this replica holds (Keeper does this with
// Config.Shared). It retires idle resources, those given back longest ago
// first, while more are live than the ceiling, and returns them for the
// caller to close (counted retired); nil when nothing is over it. From then
// on Take answers Wait, with Guard ward.GuardCeiling, when the ceiling is
// reached; a Give while more are live than the ceiling retires the resource
// (false: the caller closes it). A negative n
// removes the ceiling, which is the default.
func (p *Pool[T]) SetCeiling(n int, now time.Time) []T {
	p.ceiling = max(n, -1)
	return p.trim(now)
}

// trim retires idle resources, those given back longest ago first, while
// more are live than the ceiling, and returns them (counted retired).
func (p *Pool[T]) trim(now time.Time) []T {
	t := p.clock(now)
	var out []T
	for p.ceiling >= 0 && p.live() > p.ceiling && p.z.bottom != none {
		out = append(out, p.retire(p.z.bottom, t, fresh))
	}
	return out
}
