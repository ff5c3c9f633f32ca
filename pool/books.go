package pool

// Books is one reading of a pool: three gauges that say what it holds now,
// and counters that only rise, so that the difference between two readings is
// what happened between them.
//
// Two identities hold at every reading:
//
//	Live == Idle + Busy
//	Made == Live - making + Retired + Dropped
//
// where making is the number of Make reservations not yet settled (Busy
// includes them). Loans - Reused is how many resources were made for the
// caller that asked: the pool's cold-start cost.
type Books struct {
	// Live is how many resources exist: idle, lent, and being made.
	Live int
	// Idle is how many sit in the pool, ready to lend.
	Idle int
	// Busy is how many are lent or being made.
	Busy int
	// Rotating is how many of the live ones, idle or lent, are of a
	// generation being retired over a window (Reset with a window): zero
	// once it is done.
	Rotating int
	// Holding says the pool holds its callers after a failover (ResetFor
	// with a Hold), making one resource at a time until one is made or
	// the hold runs out.
	Holding bool

	// Made counts resources that joined the pool: Made accepted them, or Give
	// filled an open reservation with one the pool did not know.
	Made uint64
	// Failed counts reservations that Unmade gave back: makes that failed.
	Failed uint64
	// Loans counts resources handed to callers: every Ready answer and every
	// resource Made accepted into an open reservation.
	Loans uint64
	// Reused counts the loans that came out of idle (Ready answers).
	Reused uint64
	// Retired counts resources the pool let go of for the caller to close:
	// Stale answers, Evict, Close, and a Give, Made or double give answered
	// false for a resource the pool held.
	Retired uint64
	// IdleRetired counts the retired resources that had sat idle longer
	// than Keep (by Take's Stale answer or by Evict).
	IdleRetired uint64
	// LifeRetired counts the retired resources that had lived longer than
	// Life and were not already counted in IdleRetired.
	LifeRetired uint64
	// Dropped counts resources taken off the books by Drop.
	Dropped uint64
	// Waited counts Wait answers.
	Waited uint64
	// Deferred counts Later answers.
	Deferred uint64
	// Shed counts Shed answers.
	Shed uint64
}
