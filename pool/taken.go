package pool

import (
	"time"

	"github.com/wardpool/wardpool/ward"
)

// Kind is the answer Take gives.
type Kind uint8

const (
	// Ready hands out an idle resource: the most recently given back one.
	// The caller uses it and gives it back (or drops it if it broke).
	Ready Kind = iota + 1
	// Stale hands out an idle resource past Keep or Life. It is already off
	// the books; the caller closes it and takes again.
	Stale
	// Make says there is room and reserves it: the reservation counts as
	// live. The caller opens a resource and reports Made, or Unmade if that
	// failed.
	Make
	// Wait says every live slot is in use (or the ward's limiter has no
	// lease left). Nothing changed; the caller queues and asks again later.
	Wait
	// Later says making is held back for Taken.Delay, by the ward's bucket or
	// by backoff after a failed make. Nothing changed.
	Later
	// Shed refuses: the ward's breaker will not open new connections to a
	// failing backend, or its shedder will not lend while the host is hot.
	// Nothing changed; Taken.Guard says which.
	Shed
	// Closed is the answer of a pool that has been closed. It is the only
	// answer a closed pool gives, and it is not counted in the books.
	Closed
)

var kindNames = [...]string{"Kind(0)", "Ready", "Stale", "Make", "Wait", "Later", "Shed", "Closed"}

// String returns the answer's name, such as "Ready".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Taken is what Take answers. It is a value: taking allocates nothing.
type Taken[T comparable] struct {
	// Kind is the answer.
	Kind Kind
	// Item is the resource, for Ready and Stale; the zero T otherwise.
	Item T
	// Delay is how long making is held back, for Later, and for a Wait
	// with Guard ward.GuardFull how long until the pool tries a make again
	// even if nothing comes back (the runtime asks again then); zero
	// otherwise.
	Delay time.Duration
	// Idle is how long Item sat idle before this take, for Ready; a runtime
	// uses it to decide whether to check the resource before lending it.
	Idle time.Duration
	// Guard names the guard of the ward that answered Shed, Later, or a
	// limiter's Wait; for a Wait, ward.GuardCeiling or ward.GuardFull when
	// the ceiling or the backend's room holds the pool; ward.GuardNone
	// when the pool answered by itself.
	Guard ward.Guard
	// Seat is Item's seat, for Ready (see Pool.SeatOf); zero otherwise.
	Seat int32
	// Gen is the generation the reservation was opened in, for Make (and
	// for Reserve's Make): the runtime hands it back to Made with what it
	// made. A Reset while the make is in flight leaves the reservation in
	// the generation it was opened in, so what it makes is retired on its
	// return (see Pool.Made).
	Gen uint32
}

// Lent is a resource out on loan and how long it has been out.
type Lent[T comparable] struct {
	Item T
	// Held is how long ago the resource was lent, at the instant Loans was
	// asked.
	Held time.Duration
}
