package pool

// Reads of the Pool's insides for the external tests (pool_test): they are
// part of the test build only, not of the package's API.

// Making is how many Make reservations are not yet settled.
func (p *Pool[T]) Making() int { return p.making }

// IsClosed reports whether Close has been called.
func (p *Pool[T]) IsClosed() bool { return p.closed }

// Holds reports whether item is on the books, idle or lent.
func (p *Pool[T]) Holds(item T) bool { return p.SeatOf(item) >= 0 }

// Limits returns the limits the pool holds itself to.
func (p *Pool[T]) Limits() Limits { return p.limits }

// Ceiling returns the ceiling SetCeiling set, and -1 when none is set.
func (p *Pool[T]) Ceiling() int { return p.ceiling }

// Gen is the pool's generation now: what Taken.Gen carries for a Make
// opened now.
func (p *Pool[T]) Gen() uint32 { return p.gen }
