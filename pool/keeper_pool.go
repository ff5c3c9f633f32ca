package pool

import "time"

// This file holds the few questions Keeper asks of Pool beyond its exported
// methods. They change nothing that the exported methods could not; they
// spare the Keeper a second map lookup on its hot path and let it warm the
// pool without lending.

// takeSeat is Take, also answering the seat of a Ready item so the Keeper can
// keep its own per-seat record (a loan's generation) without a map lookup.
// The seat is none for every other answer.
func (p *Pool[T]) takeSeat(now time.Time, roll float64, cpu int) (Taken[T], int32) {
	i := p.z.top // Take looks at the top seat only
	t := p.Take(now, roll, cpu)
	if t.Kind != Ready {
		return t, none
	}
	return t, i
}

// seatOf returns the seat of a resource on the books, or none.
func (p *Pool[T]) seatOf(item T) int32 {
	if i, ok := p.z.index[item]; ok {
		return i
	}
	return none
}

// seats returns how many seats the pool has ever used: every seat index is
// below it.
func (p *Pool[T]) seatCount() int { return len(p.z.s) }

// reserve opens a Make reservation for a resource no caller asked for yet
// (Keeper's MinIdle), and reports whether it did. It answers as Take would
// for a Make, asking the ward the same questions, but never lends an idle
// resource, and a refusal is not counted in the books: no caller was refused.
func (p *Pool[T]) reserve(now time.Time, roll float64, cpu int) bool {
	if p.closed {
		return false
	}
	t := p.clock(now)
	if p.limits.Size > 0 && p.Live() >= p.limits.Size {
		return false
	}
	if _, ok := p.admit(t, roll, cpu, true); !ok {
		return false // admit counts nothing: Take counts its own refusals
	}
	p.making++
	return true
}

// heldUntil returns when the ward's backoff lets makes start again, and
// false when it holds nothing back.
func (p *Pool[T]) heldUntil() (time.Time, bool) {
	if p.ward.Backoff == nil || p.failures == 0 || p.holdUntil <= p.last {
		return time.Time{}, false
	}
	return p.instant(p.holdUntil), true
}

// retireLent takes a lent resource off the books as a good one that is not
// to be kept (Keeper.Reset retires loans that began before it): the loan is
// settled as a success and the resource counted retired. It reports whether
// the pool held item lent; the caller closes it either way.
func (p *Pool[T]) retireLent(item T, now time.Time) bool {
	t := p.clock(now)
	i, held := p.z.index[item]
	if !held || p.z.s[i].state != lent {
		return false
	}
	p.onLoanEnd(p.z.s[i].since, t, true)
	p.z.remove(i)
	p.books.Retired++
	return true
}

// retireIdle takes every idle resource off the books, counted retired, and
// returns them for the caller to close (Keeper.Reset).
func (p *Pool[T]) retireIdle(now time.Time) []T { return p.drainIdle(p.clock(now)) }

// lentAt reports whether seat i holds a resource out on loan.
func (p *Pool[T]) lentAt(i int32) bool {
	return int(i) < len(p.z.s) && p.z.s[i].state == lent
}

// itemAt returns the resource in seat i.
func (p *Pool[T]) itemAt(i int32) T { return p.z.s[i].item }

// giveSeat is Give for an item the caller knows to sit in seat i, lent:
// the Keeper's loans carry their seat, which spares the map lookup. Anything
// else goes the long way through Give.
func (p *Pool[T]) giveSeat(i int32, item T, now time.Time) bool {
	if int(i) >= len(p.z.s) || p.z.s[i].state != lent || p.z.s[i].item != item {
		return p.Give(item, now)
	}
	return p.giveLent(i, p.clock(now))
}

// giveSeatAt is giveSeat for a resource that came back at at, before now,
// and sat in the Keeper's hot slots since (see hot.go). It joins the idle
// list where a Give at that instant would have put it, below the seats given
// back after it: Keep counts from when it really came back, and the list
// stays in return order, oldest at the bottom, as eviction needs.
func (p *Pool[T]) giveSeatAt(i int32, item T, at, now time.Time) bool {
	t := p.clock(now)
	if int(i) >= len(p.z.s) || p.z.s[i].state != lent || p.z.s[i].item != item {
		return p.Give(item, now)
	}
	since := min(max(int64(at.Sub(p.epoch)), p.z.s[i].since), t)
	if !p.giveLent(i, t) {
		return false
	}
	p.z.sink(i, since)
	return true
}

// diesAt returns when the resource in seat i will be past Life, and false
// without a Life limit.
func (p *Pool[T]) diesAt(i int32) (time.Time, bool) {
	if p.limits.Life <= 0 {
		return time.Time{}, false
	}
	return p.instant(shift(p.z.s[i].born, p.limits.Life)), true
}
