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
	TakeAs(now time.Time, roll float64, cpu int, class int) pool.Taken[T]
	MadeAs(item T, gen uint32, class int, now time.Time, extra time.Duration) bool
	UnmadeAs(now time.Time, roll float64, by ward.Guard, class int) bool
	Serve(now time.Time, fronts []pool.Front) (int, time.Duration)
	ClassBooks() []pool.ClassBooks
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

// Without a recorder, the two calls of every loan, Take (decideLocked) and
// Give (release), go to the Pool itself (Keeper.pool) instead of through
// the machine interface, whose call on a generic type passes through a
// dictionary wrapper that copies the answer once more. The Pool answers
// either way; only the dispatch differs, for those two calls; every other
// call goes through the interface. On BenchmarkUncontended that moved
// wardpool's ratio to puddle from 2.34 to 2.12 (median of 10 rounds, about
// 37 ns of ~266 per Acquire+Release), and writing the choice out at the
// two call sites, not in a helper too big to be inlined, saved 67 more
// instructions of 1561 (callgrind). Every test without Config.Recorder
// runs the direct calls; keeper_record_test.go and
// keeper_record_ward_test.go run the recorder's and replay it.
