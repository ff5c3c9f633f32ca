package ward

// Ward groups the optional guards in front of one pool's backend. Every field
// may be nil. The zero Ward has none, and a pool with it answers exactly as a
// pool without a ward.
//
// The Breaker, Bucket and Backoff are about a backend that misbehaves: the
// breaker refuses new connections at the rate a failing one deserves, the
// bucket spaces makes out, and the backoff (a policy only: the pool keeps the
// failure count and the moment it may make again) holds makes after one
// failed. The Shedder stops lending while the host is overloaded. The Limiter
// is about the pool's own concurrency: a lease for every loan, its limit
// moving with how long loans are held.
//
// A Ward is not safe for concurrent use: keep one per pool and use it under
// the pool owner's lock.
type Ward struct {
	Breaker *Breaker
	Bucket  *Bucket
	Backoff *Backoff
	Shedder *Shedder
	Limiter *Limiter
}

// IsZero reports whether the ward has no guard at all.
func (w Ward) IsZero() bool {
	return w.Breaker == nil && w.Bucket == nil && w.Backoff == nil &&
		w.Shedder == nil && w.Limiter == nil
}

// Guard names the guard behind a refusal, for errors and books.
type Guard uint8

const (
	GuardNone Guard = iota
	GuardBreaker
	GuardShedder
	GuardBucket
	GuardBackoff
	GuardLimiter
	// GuardCeiling is not a guard of a Ward: it names a ceiling set on a
	// pool from outside (a fleet's connection budget, see pool.SetCeiling).
	GuardCeiling
	// GuardShared is not a guard of a Ward either: it names a guard the
	// runtime asks on its own, shared with other replicas through a store
	// (a fleet's breaker or rate on dials, package ward/shared), that
	// refused a make before it was tried (see pool.Unmade).
	GuardShared
	// GuardFull is not a guard of a Ward either: it names the backend
	// itself refusing a make for want of room (PostgreSQL's 53300, too
	// many connections; Redis's "max number of clients reached"), told to
	// the pool through Unmade. Take answers Wait with it while the pool
	// holds as many as the backend last had room for (see pool.Unmade).
	GuardFull
	// GuardHold is not a guard of a Ward either: it names a pool holding
	// its callers after a failover while it looks for the new writable
	// node, one make at a time (see pool.Hold).
	GuardHold
	// GuardClass is not a guard of a Ward either: it names a pool's
	// classes of callers holding one back (see pool.Class): its class is
	// at its ceiling, or one more would eat into another class's reserve.
	GuardClass
)

// String returns the guard's name in lower case: "breaker", "shedder",
// "bucket", "backoff", "limiter", "ceiling", "shared", "full", "hold", "class", or "none".
func (g Guard) String() string {
	switch g {
	case GuardBreaker:
		return "breaker"
	case GuardShedder:
		return "shedder"
	case GuardBucket:
		return "bucket"
	case GuardBackoff:
		return "backoff"
	case GuardLimiter:
		return "limiter"
	case GuardCeiling:
		return "ceiling"
	case GuardShared:
		return "shared"
	case GuardFull:
		return "full"
	case GuardClass:
		return "class"
	case GuardHold:
		return "hold"
	case GuardNone:
		return "none"
	}
	return "guard(" + ftoa(float64(g)) + ")"
}
