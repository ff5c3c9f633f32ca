package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file settles a make: Made for a resource made, Unmade for a
// reservation that made none (see Take's Make answer).

// Made registers item, opened after Take answered Make, as lent and born at
// now, and settles that reservation. gen is the Make answer's Taken.Gen: the
// generation the reservation was opened in. It reports whether the pool
// holds item afterwards; when false the caller closes it.
//
// A resource whose reservation was opened before the last Reset is of the
// old generation, as if it had been made then: it is lent to the caller it
// was made for (that caller asked before the reset and is owed an answer),
// and retired when it comes back, never lent again; a ResetFor on its word
// resets nothing. Credentials rotated or a primary moved while a dial was
// in flight thus never leave a resource of the old kind in the pool.
//
// extra lengthens item's Life, so that resources made together do not all
// retire together: a runtime draws it for each (Keeper does, from
// Config.LifeJitter); zero for none. A negative extra shortens the life.
// Without a Life limit extra has no effect. Births are held within about 73
// years of the pool's first instant, so an extreme extra saturates (stale at
// once, or never) instead of wrapping around.
//
//   - A handle the pool already holds is not lent twice: the reservation is
//     settled and the existing seat stands (true), before or after Close.
//     One handle lent twice would be two loans to close with one give: a
//     slot lost for good.
//   - After Close the reservation is settled, the resource counted made and
//     retired, and Made answers false.
//   - With no reservation open (Made without Make), item is taken on as lent
//     if there is room under Size and the ward's limiter has a lease for it;
//     otherwise it is refused (false) and nothing is counted.
func (p *Pool[T]) Made(item T, gen uint32, now time.Time, extra time.Duration) bool {
	if p.cls != nil {
		return p.MadeAs(item, gen, -1, now, extra) // the default class (class.go)
	}
	return p.made(item, gen, now, extra)
}

// made is Made apart from classes (MadeAs keeps their books around it).
func (p *Pool[T]) made(item T, gen uint32, now time.Time, extra time.Duration) bool {
	t := p.clock(now)
	reserved := p.making > 0
	if reserved {
		p.making--
		p.onMade(t)
		if gen == p.gen {
			p.hold = holding{} // the new generation has a node: the hold is over
		}
	}
	if _, held := p.z.find(item); held {
		// Already on the books (lent or idle), closed pool or not: the
		// reservation, if any, is settled and the existing seat stands.
		if reserved {
			p.unlease(t)
		}
		return true
	}
	if p.closed {
		if reserved {
			p.unlease(t)
			p.books.Made++
			p.books.Retired++
		}
		return false
	}
	if !reserved {
		// A resource nobody asked for: it needs room under Size (and the
		// ceiling) and the lease and flight every loan holds (asked with a
		// cool CPU reading and no breaker: it is made already). It is of
		// the current generation: no reservation says otherwise.
		if _, full := p.full(t); full {
			return false
		}
		if _, ok := p.admit(t, 0, 0, false); !ok {
			return false
		}
		gen = p.gen
	}
	i := p.z.add(item, t, gen)
	p.roomFor(t)
	p.z.s[i].born = shift(t, extra)
	p.books.Made++
	p.books.Loans++
	return true
}

// bound keeps shifted births far enough from the ends of int64 that an age
// (now minus birth) never wraps: ±73 years either side of the pool's epoch.
const bound = int64(1) << 61

// shift is t moved by d, saturating at ±bound: an extra beyond that reads as
// "stale at once" or "never stale", never as its wrapped opposite.
func shift(t int64, d time.Duration) int64 {
	switch {
	case d > 0 && t > bound-int64(d):
		return bound
	case d < 0 && t < -bound-int64(d):
		return -bound
	}
	return min(max(t+int64(d), -bound), bound)
}

// Unmade gives back a reservation that did not become a resource, and by
// says why:
//
//   - ward.GuardNone: the make failed. It is counted as failed; the ward's
//     breaker counts the failure, its backoff holds further makes back (roll
//     draws the jitter), and its limiter releases the lease without a
//     sample. During a hold after a failover (see ResetFor and Hold) the
//     ward hears nothing instead, and the caller waits for the hold's next
//     make: Unmade returns true.
//   - ward.GuardFull: the backend refused the make for want of room (too
//     many connections). It is counted as failed. While other resources
//     are live (made, or being made), the backend is well and one of them
//     will serve: the pool remembers how many it has made as the
//     backend's room, answers Wait (with ward.GuardFull) instead of Make
//     while as many are live, lets the room grow by one each second after
//     (so one more make a second is tried; a make that succeeds raises the
//     room to the resources held), and Unmade returns true: the caller the
//     make was for waits for a resource to come back, or for the next make,
//     rather than fail. The breaker and backoff hear nothing. With none
//     live, nothing will come back: it is a failed make as with
//     ward.GuardNone.
//   - any other guard: a guard outside the pool, one the runtime asks on its
//     own (a fleet's shared breaker or shared rate on dials,
//     ward.GuardShared), refused the make before it was tried. It is
//     counted as Shed, not as a failed make: the ward's breaker and backoff
//     hear nothing (the shared guard speaks for the backend already, and
//     one outage must not trip two breakers), and the limiter's lease and
//     the shedder's flight go back without a sample.
//
// Unmade returns whether the caller the make was for waits rather than
// fail: true only for the full backend and the hold above, and never once
// the pool is closed. With no reservation open, Unmade does nothing and
// returns false.
func (p *Pool[T]) Unmade(now time.Time, roll float64, by ward.Guard) (wait bool) {
	if p.cls != nil {
		return p.UnmadeAs(now, roll, by, -1) // the default class (class.go)
	}
	return p.unmade(now, roll, by)
}

// unmade is Unmade apart from classes (UnmadeAs keeps their books around
// it).
func (p *Pool[T]) unmade(now time.Time, roll float64, by ward.Guard) (wait bool) {
	t := p.clock(now)
	if p.making == 0 {
		return false
	}
	p.making--
	if by == ward.GuardNone && !p.closed && p.holdsAt(t) {
		// A make of the hold failed: its caller waits for the next, and
		// the ward hears nothing (the hold spaces the makes).
		p.books.Failed++
		p.unlease(t)
		return true
	}
	switch by {
	case ward.GuardNone:
	case ward.GuardFull:
		if live := p.live(); live > 0 && !p.closed {
			p.books.Failed++
			// The backend holds the ones made; the makes still in flight
			// may be refused too, or clear the room by succeeding.
			p.room, p.roomUntil = live-p.making, t+int64(roomHold)
			p.unlease(t)
			return true
		}
	default:
		p.books.Shed++
		p.unlease(t)
		return false
	}
	p.books.Failed++
	p.onUnmade(t, roll)
	return false
}
