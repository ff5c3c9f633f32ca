package shared

import (
	"context"
	"sync"
	"time"
)

// BudgetConfig is the policy of a [Budget]. Copy [DefaultBudget] and change
// a field.
type BudgetConfig struct {
	// Slots is the fleet's number of connections to the backend. Zero or
	// less admits nothing.
	Slots int
	// TTL is how long a replica's membership, and with it every slot it
	// holds, lives in the store without a renewal (the store's clock). A
	// replica that dies gives its slots back within TTL. Renew well inside
	// it: every TTL/3 (RenewEvery). At least a millisecond.
	TTL time.Duration
	// Borrow lets a replica at its share take slots the others leave
	// unused, as long as nobody below its share is waiting for one.
	Borrow bool
}

// DefaultBudget is the preset: memberships live five seconds and borrowing
// is on. Slots is left for the caller to set.
var DefaultBudget = BudgetConfig{TTL: 5 * time.Second, Borrow: true}

// Budget is one replica's handle on a fleet-wide connection budget: Slots
// connections to one backend shared by every replica holding a Budget over
// the same store and key. A replica leases a slot before it dials and gives
// it back when the connection closes.
//
// # The rules, applied by the store in one atomic step per call
//
// Membership is leased: a replica is a member while its lease, renewed by
// each of its calls, has not run out (TTL, on the store's clock). Every step
// first drops the members whose lease ran out together with every slot they
// held: that is how a replica that died gives its slots back with nobody's
// help.
//
// When a replica the store does not know arrives holding slots (the store
// lost its data, or the replica's lease ran out while it lived on), the
// store's total is wrong until every live replica has reported what it
// holds: for one TTL from then, every lease is refused (a rebuild). A
// fleet's first start, whose replicas hold nothing, has no such wait.
//
// The share of each live member is Slots ÷ live members, rounded down. A
// lease is granted when the fleet holds fewer than Slots and either the
// replica holds fewer than its share, or it may borrow (Borrow) and the free
// slots exceed what the waiting replicas lack of their shares. A replica
// below its share that is refused is recorded as waiting (for TTL).
//
// Giving back: while some other replica waits below its share, every reply
// to a replica holding more than its share says so (Owed, the slots over
// its share). The replica gives them back as it can: idle connections at
// once, busy ones as their loans end (closed instead of kept idle). The
// waiter's next lease then finds the room. A replica that joins lowers
// everyone's share, and is served the same way.
//
// # When the store is unreachable
//
// Every call is bounded by the link's timeout; then the replica decides
// alone (counted in Stats.Fallbacks). It keeps what it holds and grows only
// up to the Room of the last reply: its share when borrowing is off and no
// member held more than its share, else what it held. So the fleet's total
// stays within Slots for as long as membership is stable, because the
// members' Rooms add up to at most Slots. A replica that never reached the
// store has Room 0: it dials nothing. When membership changes during an
// outage, a dead replica's connections die with it (the total falls), and a
// new one dials nothing until the store answers; a replica whose membership
// ran out in the store while it still held connections (a pause longer
// than TTL, or a partition) is counted again, with what it holds, on its
// next call, and the fleet may then be over Slots until the excess is given
// back. When the store comes back empty (a restart without persistence),
// every replica's next call (at the latest its next Renew) records what it
// holds: the leases are rebuilt from the replicas' own counts.
//
// # Costs
//
// Each Lease, Return and Renew is one round trip; nothing is asked when a
// pooled connection is reused. Within the replica a mutex guards a handful
// of counters: a Budget is safe for concurrent use.
type Budget struct {
	link    Link
	key     string
	replica string
	cfg     BudgetConfig
	tally

	// sending is held shared by every step in flight, and alone by a Renew
	// that sets the store's count to the replica's own (no step may land
	// between that count being read and being written) and by Leave (no
	// step sent before it may land after it).
	sending sync.RWMutex

	mu    sync.Mutex // guards the fields below
	held  int        // slots granted and not given back
	dirty bool       // a step failed: the store's count may be off
	last  BudgetReply
	known bool // whether the store ever answered
	b     BudgetStats
}

// BudgetStats is a replica's view of its budget. The counters only rise.
type BudgetStats struct {
	Held  int // slots this replica holds
	Share int // its fair share at the last reply
	Live  int // live members at the last reply
	Total int // slots held across the fleet at the last reply
	Owed  int // slots it should give back, at the last reply
	Room  int // the most it may hold while the store is unreachable

	Leases   uint64 // leases asked
	Granted  uint64 // leases granted (by the store or by the fallback)
	Refused  uint64 // leases refused: the fleet's budget was spent
	Returned uint64 // slots given back
	Renewals uint64 // renewals sent
	Stats           // round trips, store errors, fallbacks
}

// NewBudget returns replica's handle on the budget kept in the link's store
// under key (which must not contain braces). replica must be unique in the
// fleet (a host name and a process id, for example).
func NewBudget(link Link, key, replica string, cfg BudgetConfig) *Budget {
	cfg.TTL = max(cfg.TTL, time.Millisecond)
	cfg.Slots = max(cfg.Slots, 0)
	return &Budget{link: link, key: "{" + key + "}", replica: replica, cfg: cfg}
}

// Config returns the budget's policy, after clamping.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// RenewEvery returns how often the owner should call Renew: a third of TTL.
func (b *Budget) RenewEvery() time.Duration { return max(b.cfg.TTL/3, time.Millisecond) }

// send runs one step with the replica's count (held before a lease, after a
// return) and returns the reply, or the store's error, which marks the
// store's count as possibly off. The caller holds sending.
func (b *Budget) send(ctx context.Context, step BudgetStep, held int, overwrite bool) (BudgetReply, error) {
	ctx, cancel := b.trip(ctx, b.link)
	defer cancel()
	r, err := b.link.store().Budget(ctx, BudgetOp{
		Step: step, Key: b.key, Replica: b.replica, Budget: b.cfg.Slots,
		TTL: b.cfg.TTL, Held: held, Overwrite: overwrite, Borrow: b.cfg.Borrow,
	})
	if b.failed(err) {
		b.mu.Lock()
		b.dirty = true
		b.mu.Unlock()
	}
	return r, err
}

// noteLocked records a reply, once the step's own effect on held is
// counted. mu must be held. Replies may arrive out of order (a Renew sent
// before a Return may answer after it), so with borrowing the room is held
// to what the replica holds now: a stale reply never lets it grow alone.
func (b *Budget) noteLocked(r BudgetReply) {
	if b.cfg.Borrow {
		r.Room = min(r.Room, b.held)
	}
	b.last, b.known = r, true
}

// Lease asks for one slot. It reports whether the slot is the replica's; a
// refusal means the fleet's budget is spent for now (the caller waits, as
// for a full pool, and asks again). When the store does not answer in time,
// the fallback decides (granted only below Room) and the error is returned
// beside.
func (b *Budget) Lease(ctx context.Context) (bool, error) {
	b.sending.RLock()
	defer b.sending.RUnlock()
	b.mu.Lock()
	b.b.Leases++
	held := b.held
	b.mu.Unlock()

	r, err := b.send(ctx, StepLease, held, false)

	b.mu.Lock()
	defer b.mu.Unlock()
	granted := r.Granted
	if err != nil {
		b.fallbacks.Add(1)
		granted = b.known && b.held < b.last.Room
	}
	if granted {
		b.held++
		b.b.Granted++
	} else {
		b.b.Refused++
	}
	if err == nil {
		b.noteLocked(r)
	}
	return granted, err
}

// Return gives one slot back: call it once for every granted lease, when
// its connection is closed (or the dial it was for failed). Returning more
// than was granted is ignored. A store error is returned; the store's count
// is then corrected by the next Renew.
func (b *Budget) Return(ctx context.Context) error {
	b.sending.RLock()
	defer b.sending.RUnlock()
	b.mu.Lock()
	if b.held == 0 {
		b.mu.Unlock()
		return nil
	}
	b.held--
	b.b.Returned++
	if b.cfg.Borrow {
		// The slot is the fleet's again: with borrowing, the room is what
		// is held, so it shrinks with it (another replica may have it
		// before this one hears from the store again).
		b.last.Room = min(b.last.Room, b.held)
	}
	held := b.held
	b.mu.Unlock()

	r, err := b.send(ctx, StepReturn, held, false)

	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.noteLocked(r)
	}
	return err
}

// Renew renews the replica's membership, and so its slots, and learns its
// share and what it owes. Call it every RenewEvery while the replica lives
// (and before its first Lease, to learn a Room for an early outage).
//
// After a step failed (the store's count of this replica's slots may then
// be off: a lease the store granted whose answer was lost, or slots granted
// or given back while the store was unreachable), Renew also sets the
// store's count to the replica's own, provided no other step is in flight
// (it then holds the steps back for its one round trip); otherwise the
// next Renew does. A store that lost everything learns the counts again
// from each replica's next step.
func (b *Budget) Renew(ctx context.Context) error {
	b.mu.Lock()
	b.b.Renewals++
	dirty := b.dirty
	b.mu.Unlock()
	overwrite := dirty && b.sending.TryLock()
	if overwrite {
		defer b.sending.Unlock()
	} else {
		b.sending.RLock()
		defer b.sending.RUnlock()
	}
	b.mu.Lock()
	held := b.held
	b.mu.Unlock()

	r, err := b.send(ctx, StepRenew, held, overwrite)

	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.noteLocked(r)
		if overwrite {
			b.dirty = false
		}
	}
	return err
}

// Leave removes the replica from the fleet, with every slot the store counts
// for it: call it when the pool has closed its connections. Steps sent
// before it land first (it waits for them): a Return still on its way when
// Leave came would otherwise reach the store after it and count the
// replica a member again. After Leave the handle holds nothing and may
// Lease again (rejoining).
func (b *Budget) Leave(ctx context.Context) error {
	b.sending.Lock()
	defer b.sending.Unlock()
	b.mu.Lock()
	b.held = 0
	b.known = false
	b.mu.Unlock()

	_, err := b.send(ctx, StepLeave, 0, false)
	return err
}

// Owed returns how many slots the replica should give back now, by the last
// reply: close that many idle connections (or, when none is idle, close
// connections as their loans end instead of keeping them idle). It costs no
// round trip.
func (b *Budget) Owed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.Owed <= 0 {
		return 0
	}
	// What was already given back since the reply counts.
	return max(min(b.last.Owed, b.held-b.last.Share), 0)
}

// Held returns how many slots the replica holds. It costs no round trip.
func (b *Budget) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Stats returns the replica's view of the budget.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b
	s.Held = b.held
	s.Share, s.Live, s.Total, s.Owed, s.Room = b.last.Share, b.last.Live, b.last.Total, b.last.Owed, b.last.Room
	s.Stats = b.tally.stats()
	return s
}
