package wardpool

import (
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// machine is what the Keeper calls on its Pool: every method of *pool.Pool
// it uses. A *pool.Pool is one; so is a *record.Pool, the recorder in front
// of one, which answers the same and writes each call down.
type machine[T comparable] interface {
	Take(now time.Time, roll float64, cpu int) pool.Taken[T]
	Reserve(now time.Time, roll float64, cpu int) pool.Taken[T]
	Made(item T, gen uint32, now time.Time, extra time.Duration) bool
	Unmade(now time.Time, roll float64, by ward.Guard) bool
	Give(item T, now time.Time) bool
	Drop(item T, now time.Time) bool
	Evict(now time.Time) []T
	Close() []T
	Reset(now time.Time, over time.Duration) []T
	ResetFor(item T, now time.Time, h pool.Hold) ([]T, bool)
	SetCeiling(n int, now time.Time) []T
	SetLimits(l pool.Limits, now time.Time) ([]T, error)
	Refusal(now time.Time) float64
	Admit(now time.Time, ahead int, within time.Duration) (time.Duration, bool)
	Loans(now time.Time) []pool.Lent[T]
	Books() pool.Books
	Next() (time.Time, bool)
	HeldUntil() (time.Time, bool)
	SeatOf(item T) int32
}

// take is k.p.Take, and give k.p.Give: the two calls of every loan.
// Without a recorder they go to the *pool.Pool itself (k.pool) rather than
// through the machine interface, whose call on a generic type passes
// through a dictionary wrapper that copies the Taken answer once more.
// The Pool answers either way; only the dispatch differs, and only for
// these two methods. On BenchmarkUncontended that moved wardpool's ratio
// to puddle from 2.34 to 2.12 (median of 10 rounds, about 37 ns of ~266
// per Acquire+Release; callgrind: 1562 -> 1524 instructions). Every test
// without Config.Recorder runs the direct call; keeper_record_test.go and
// keeper_record_ward_test.go run the recorder's, and check that the
// recording replays to the same answers.
func (k *Keeper[T]) take(now time.Time, roll float64, cpu int) pool.Taken[T] {
	if k.pool != nil {
		return k.pool.Take(now, roll, cpu)
	}
	return k.p.Take(now, roll, cpu)
}

// give is k.p.Give; see take.
func (k *Keeper[T]) give(item T, now time.Time) bool {
	if k.pool != nil {
		return k.pool.Give(item, now)
	}
	return k.p.Give(item, now)
}
