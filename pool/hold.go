package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// Hold is how a pool holds its callers after a failover (see ResetFor):
// for up to For, it makes one resource at a time, at most one every
// Every, to find the backend's new writable node, and answers its other
// callers Wait (with ward.GuardHold) instead of letting each of them dial
// a node that is down or read-only and fail. The first resource made of
// the new generation ends the hold; so does For running out, after which
// the pool answers as without one. The zero Hold holds nothing.
type Hold struct {
	// For is the longest the hold lasts; zero or less: no hold.
	For time.Duration
	// Every is the least time between two makes during the hold; zero or
	// less means DefaultHoldEvery.
	Every time.Duration
}

// DefaultHoldEvery is the spacing of a hold's makes when Hold.Every is not
// set: ten tries a second, each one dial through every host a connection
// string names.
const DefaultHoldEvery = 100 * time.Millisecond

// holding is a hold's state: until when it lasts (0 for none), the spacing
// of its makes, and when the next may start.
type holding struct {
	until, every, next int64
}

// startHold begins hold h at t, when it holds anything.
func (p *Pool[T]) startHold(h Hold, t int64) {
	if h.For <= 0 {
		return
	}
	every := h.Every
	if every <= 0 {
		every = DefaultHoldEvery
	}
	p.hold = holding{until: shift(t, h.For), every: int64(every), next: t}
}

// holdsAt reports whether a hold lasts at t, ending it when it ran out.
func (p *Pool[T]) holdsAt(t int64) bool {
	if p.hold.until != 0 && t >= p.hold.until {
		p.hold = holding{}
	}
	return p.hold.until != 0
}

// holdWait reports whether a make at t must wait for the hold: one
// started less than Every ago. The answer's Delay is the time until the
// next may start, or the hold ends.
func (p *Pool[T]) holdWait(t int64) (Taken[T], bool) {
	if !p.holdsAt(t) || t >= p.hold.next {
		return Taken[T]{}, false
	}
	d := min(p.hold.next, p.hold.until) - t
	return Taken[T]{Kind: Wait, Guard: ward.GuardHold, Delay: time.Duration(d)}, true
}

// spaceHold notes a make starting at t during a hold: the next waits
// Every.
func (p *Pool[T]) spaceHold(t int64) {
	if p.hold.until != 0 {
		p.hold.next = shift(t, time.Duration(p.hold.every))
	}
}
