package shared

import (
	"context"
	"errors"
	"time"
)

// Store is the port through which shared guards keep their state where every
// replica of a service can see it. Its shape is Redis's: each method is one
// atomic operation on the server and one round trip (a single command or one
// script). Expiry runs on the store's clock, not the caller's.
//
// Implementations must make each method atomic: two Incr calls on one key
// from two replicas at once yield two distinct values, of two SetIfAbsent
// calls on one key exactly one succeeds, and Budget's steps never interleave
// on one budget. Errors are returned, never swallowed; ctx bounds each call.
//
// The keys a guard passes in one call (Del's keys, IncrUnder's two, a
// budget's five) share one hash tag, "{…}", so that a Redis Cluster keeps
// them in one slot.
type Store interface {
	// Incr adds one to the integer at key and returns the new value. A key
	// that did not exist is created at zero first and given ttl to live; an
	// existing key keeps the expiry it had.
	Incr(ctx context.Context, key string, ttl time.Duration) (int64, error)
	// IncrUnder is the two-window counter's step: it reads the integers at
	// key and prev (zero when absent), and when key + prev × weight is
	// strictly under limit it adds one to key (a new key gets ttl to live)
	// and reports true. It returns the count at key afterwards.
	IncrUnder(ctx context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error)
	// SetIfAbsent stores value at key with ttl to live unless key exists, and
	// reports whether it stored.
	SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Get returns the value at key and whether it exists.
	Get(ctx context.Context, key string) (string, bool, error)
	// Del removes the keys; keys that do not exist are no error.
	Del(ctx context.Context, keys ...string) error
	// Budget runs one step of a fleet-wide connection budget (see [Budget]
	// for the rules) and answers where the budget stands after it.
	Budget(ctx context.Context, op BudgetOp) (BudgetReply, error)
}

// ErrNotInteger is returned by Incr and IncrUnder for a key that holds
// something other than a decimal integer, as Redis refuses INCR on such a
// key.
var ErrNotInteger = errors.New("wardpool: shared: value is not an integer")

// BudgetStep names one step of a budget in the store.
type BudgetStep uint8

const (
	// StepLease asks for one slot.
	StepLease BudgetStep = iota + 1
	// StepReturn gives one slot back.
	StepReturn
	// StepRenew renews the replica's membership (and so its slots).
	StepRenew
	// StepLeave removes the replica and every slot it holds.
	StepLeave
)

// String returns "lease", "return", "renew" or "leave".
func (s BudgetStep) String() string {
	switch s {
	case StepLease:
		return "lease"
	case StepReturn:
		return "return"
	case StepRenew:
		return "renew"
	case StepLeave:
		return "leave"
	}
	return "step?"
}

// BudgetOp is one step of one replica on one budget, as [Budget] sends it to
// the store.
type BudgetOp struct {
	Step BudgetStep
	// Key names the budget; the store derives its five keys from it
	// (Key+":members", Key+":held", Key+":want", Key+":rebuild",
	// Key+":room"), so Key
	// carries the hash tag.
	Key string
	// Replica is the asking replica's name, unique in the fleet.
	Replica string
	// Budget is the fleet's number of slots.
	Budget int
	// TTL is how long the replica's membership, and with it every slot it
	// holds, lives without a renewal (the store's clock).
	TTL time.Duration
	// Held is the replica's own count of the slots it holds, before this
	// step (after it, for StepReturn). The store takes it as the truth
	// when it had no record of the replica (a new member, one whose lease
	// ran out, or a store that lost its data), and on StepRenew when
	// Overwrite is set.
	Held int
	// Overwrite makes StepRenew set the store's count to Held: the replica
	// had no step in flight, so its own count is exact.
	Overwrite bool
	// Borrow allows the replica to take slots beyond its share while
	// nobody below theirs is waiting.
	Borrow bool
	// Unsure says that a step of the replica failed since its count was
	// last set (Overwrite), so it may hold slots it took alone while the
	// store was unreachable: the store then counts at least Held for it.
	// (Not always: with steps in flight, Held may be ahead of the store's
	// order, and an over-count lasts until the next Overwrite.)
	Unsure bool
	// Room is the Room of the replica's last reply, sent while a step of
	// it failed since (see Unsure); zero otherwise. When the store has no
	// record of the replica (it lost its data, or the replica lapsed and
	// was dropped), it sets aside for it up to Room, within its share and
	// what the others' set-asides leave free, as its last reply did: so
	// that a fleet whose store came back empty keeps serving through the
	// rebuild instead of draining, and never past Budget.
	Room int
}

// BudgetReply is where a budget stands after one step.
type BudgetReply struct {
	Granted bool // StepLease: the slot is the replica's
	Held    int  // slots the replica holds, by the store's count
	Share   int  // Budget ÷ Live, rounded down
	Live    int  // live members, the asker included
	Total   int  // slots held across the fleet
	Owed    int  // slots the replica should give back: what it holds over its share while others wait or the fleet is over
	Room    int  // the most the replica may hold on its own word while the store is unreachable (the store counts it as taken)
}
