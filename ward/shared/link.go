package shared

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// DefaultTimeout is the store timeout of a [Link] that sets none: long
// enough for a round trip to a Redis in the same region, short enough that
// a caller held by a dead store notices little.
const DefaultTimeout = 100 * time.Millisecond

// Link is how a shared guard reaches its store: the store, and how long one
// round trip may take before the guard gives up on it and decides locally.
type Link struct {
	// Store is where the state lives. A nil Store is a store that is never
	// reachable: every call fails with ErrNoStore and the guard decides
	// locally, as it does when a real store is down.
	Store Store
	// Timeout bounds every round trip, on top of the caller's ctx. Zero or
	// less means DefaultTimeout.
	Timeout time.Duration
}

// ErrNoStore is the store error of a guard whose Link has no Store.
var ErrNoStore = errors.New("wardpool: shared: no store")

// store returns the link's store, or one that always fails.
func (l Link) store() Store {
	if l.Store == nil {
		return noStore{}
	}
	return l.Store
}

// noStore is the store of a Link without one.
type noStore struct{}

func (noStore) Incr(context.Context, string, time.Duration) (int64, error) { return 0, ErrNoStore }
func (noStore) IncrUnder(context.Context, string, string, float64, int64, time.Duration) (int64, bool, error) {
	return 0, false, ErrNoStore
}
func (noStore) SetIfAbsent(context.Context, string, string, time.Duration) (bool, error) {
	return false, ErrNoStore
}
func (noStore) Get(context.Context, string) (string, bool, error) { return "", false, ErrNoStore }
func (noStore) Del(context.Context, ...string) error              { return ErrNoStore }
func (noStore) Budget(context.Context, BudgetOp) (BudgetReply, error) {
	return BudgetReply{}, ErrNoStore
}

func (l Link) timeout() time.Duration {
	if l.Timeout <= 0 {
		return DefaultTimeout
	}
	return l.Timeout
}

// Stats counts a shared guard's round trips and the decisions it made
// without its store. Counters only rise.
type Stats struct {
	Trips       uint64 // round trips to the store
	StoreErrors uint64 // round trips that failed or ran out of time
	Fallbacks   uint64 // decisions made locally because the store did not answer
}

// tally is a guard's live Stats; safe for concurrent use.
type tally struct {
	trips, errs, fallbacks atomic.Uint64
}

func (t *tally) stats() Stats {
	return Stats{Trips: t.trips.Load(), StoreErrors: t.errs.Load(), Fallbacks: t.fallbacks.Load()}
}

// trip bounds ctx by the link's timeout and counts the round trip; the
// caller calls done with the trip's error.
func (t *tally) trip(ctx context.Context, l Link) (context.Context, context.CancelFunc) {
	t.trips.Add(1)
	return context.WithTimeout(ctx, l.timeout())
}

// failed counts err, if any, as a store error and reports whether there was
// one.
func (t *tally) failed(err error) bool {
	if err != nil {
		t.errs.Add(1)
		return true
	}
	return false
}
