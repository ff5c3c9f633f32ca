package shared

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// BudgetConfig is the policy of a [Budget]. Copy [DefaultBudget] and change
// a field.
type BudgetConfig struct {
	// Slots is the fleet's number of connections to the backend. Zero or
	// less admits nothing.
	Slots int
	// TTL is how long a replica's membership lives in the store without a
	// renewal (the store's clock); its slots stay counted one TTL more. A
	// replica that dies gives its slots back within two TTLs. Renew well
	// inside it: every TTL/3 (RenewEvery). At least a millisecond.
	TTL time.Duration
	// Borrow lets a replica at its share take slots the others leave
	// unused, as long as nobody below its share is waiting for one.
	Borrow bool
	// Floor is the least a replica may hold on its own word while the
	// store is unreachable, whatever its last reply said, even when it
	// never reached the store (Doorman's safe capacity, set by hand). Zero
	// means none. The budget holds only if Floor × the most replicas the
	// fleet may run is at most Slots: keep it there. Less than zero is
	// zero, more than Slots is Slots.
	Floor int
	// Clock reads the time for the outage's log lines and Outage; nil
	// means time.Now. It decides nothing: the leases run on the store's
	// clock.
	Clock func() time.Time
	// Logger is where the budget says that its store became unreachable,
	// and when it was reachable again (one line each per outage); nil
	// means the Keeper's logger once a Keeper holds the budget (see
	// UseLogger), else slog.Default().
	Logger *slog.Logger
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
// each of its calls, has not run out (TTL, on the store's clock). A member
// whose lease ran out has lapsed: it counts for no share, but its slots
// stay counted for one more TTL, since it may be alive and merely cut off
// from the store; a lapsed member that calls again within that TTL is a
// member again with the slots it reports, and nothing it held was granted
// to anyone else meanwhile. Only then are its slots dropped: a replica that
// died gives its slots back within two TTLs, with nobody's help.
//
// When a replica the store has no record of arrives holding slots (the
// store lost its data, or the replica was cut off for longer than two
// TTLs), the store's total may be short until every live replica has
// reported what it holds: for one TTL from then (a rebuild), nothing new is
// granted; a replica may only take back, within its share, what the store
// had set aside for it (its Room, below), so that a connection closed for
// its age is dialled again and a fleet whose connections churn does not
// drain. A replica whose steps failed brings the Room of its last reply
// with it (BudgetOp.Room), and a store that has no record of it sets that
// much aside again, within its share and what the others' set-asides leave
// free: so a store that came back empty serves through its rebuild too. A
// fleet's first start, whose replicas hold nothing, has no such wait.
//
// The share of each live member is Slots ÷ live members, rounded down. A
// lease is granted when the fleet holds fewer than Slots, what the store
// sets aside for the other members (see the invariant) leaves one free,
// and either the replica holds fewer than its share, or it may borrow
// (Borrow) and the free slots exceed what the waiting replicas lack of
// their shares. A replica below its share that is refused is recorded as
// waiting (for TTL).
//
// Giving back: while some other replica waits below its share, or the
// fleet holds more than Slots, every reply to a replica holding more than
// its share says so (Owed, the slots over its share). The replica gives
// them back as it can: idle connections at once, busy ones as their loans
// end (closed instead of kept idle). A replica that joins lowers everyone's
// share, and is served the same way.
//
// # The invariant
//
// Besides what each member holds, the store records the Room its last
// reply gave it (below): the most it may hold on its own word. It counts
// the larger of the two as taken, and grants a lease only when what is
// taken by the others, and held by the asker, leaves a slot free. So what
// the store sets aside adds up to at most Slots, and every replica holds
// at most what the store sets aside for it (it grows alone only up to its
// Room, and after a failed step its steps ask the store to count at least
// what it holds, BudgetOp.Unsure, until a Renew sets the count exactly).
// Hence the fleet's real total (the connections the replicas hold) is at
// most Slots, through store outages included, with one exception:
//
//   - a replica that held slots while the store had no record of it (cut
//     off or paused for longer than two TTLs, so its slots were dropped
//     and may have been granted again; or a store that lost its data)
//     is counted again with what it holds on its next call. The fleet is
//     then over Slots by at most what such replicas hold; nothing new is
//     granted for one TTL (a rebuild), and every holder above its share
//     owes the excess (Owed, at its next reply) and gives it back as its
//     loans end. With each replica renewing every RenewEvery and paying
//     what it owes, the fleet is back within Slots one RenewEvery, plus
//     its longest loan, after the last such replica came back.
//
// The price of the grace is that a replica that died gives its slots back
// within two TTLs instead of one.
//
// # When the store is unreachable
//
// Every call is bounded by the link's timeout; then the replica decides
// alone (counted in Stats.Fallbacks) and keeps a safe share: it may hold up
// to the Room of its last reply (and at least Floor), and giving slots
// back does not lower it, so a fleet whose connections churn serves at
// that level instead of draining. A replica at or above its share has Room
// equal to what it holds: a borrower never grows alone. A replica below
// its share has Room equal to what it holds, or what its previous reply
// allowed (after a lease or a return; a renewal lets what went unused go
// to the borrowers), or, when it is waiting (or borrowing is off), up to
// its share as far as what the store sets aside for the others leaves
// free. While the store is rebuilding, Room does not grow. A
// replica that never reached the store has Room 0 (or Floor): it dials
// nothing.
//
// Members that join during an outage dial nothing (with a Floor, Floor
// each: the bound then needs Floor × the most replicas to be at most
// Slots); members that leave or die free connections that nobody takes
// until the store answers, so the fleet serves at less. The store's clock
// runs the leases: an outage of the store itself (every replica cut off
// and the data kept, as in a failover) lapses nobody that comes back
// within two TTLs of its last call. A replica cut off alone (a partition)
// keeps its Room; its slots stay set aside for two TTLs after its last
// call, and past that the exception above applies.
//
// One step whose reply is lost after the store applied it (a timeout on
// the way back) can leave the replica with a Room larger than the store
// now sets aside for it, by what that step lowered it: the replica keeps
// the Room of the last reply it heard.
//
// When the store comes back empty (a restart without persistence), every
// replica's next call (at the latest its next Renew) records what it holds:
// the leases are rebuilt from the replicas' own counts.
//
// An outage is logged once when it begins (the first failed call) and once
// when it ends (how long, how many calls fell back), through Logger; Outage
// and Stats say where it stands.
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
	known bool   // whether the store ever answered
	sent  uint64 // steps sent, numbering them
	noted uint64 // the number of the step whose reply is last
	log   *slog.Logger
	out   BudgetOutage // the outage under way, when down
	down  bool         // the latest step that ended failed
	b     BudgetStats
}

// BudgetOutage is a store outage as one replica saw it: from its first
// failed step to the next that succeeded.
type BudgetOutage struct {
	Since time.Time     // when the first step failed (Config.Clock)
	For   time.Duration // how long it has lasted, or lasted
	Err   error         // the latest store error
	// Errors counts the steps that failed, Fallbacks the leases decided
	// alone.
	Errors, Fallbacks uint64
}

// BudgetStats is a replica's view of its budget. The counters only rise.
type BudgetStats struct {
	Held  int // slots this replica holds
	Share int // its fair share at the last reply
	Live  int // live members at the last reply
	Total int // slots held across the fleet at the last reply
	Owed  int // slots it should give back, at the last reply (in an outage: what it holds over Room)
	Room  int // the most it may hold while the store is unreachable (its safe share)

	// Alone reports whether the store did not answer the latest step: the
	// replica decides alone, within Room (the safe-share mode).
	Alone bool
	// Outages counts the store outages this replica met: each began with
	// a failed step after one that succeeded (or after the first).
	Outages uint64

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
	cfg.Floor = min(max(cfg.Floor, 0), cfg.Slots)
	// dirty: the first Renew sets the store's count to this handle's, in
	// case a replica of the same name left one behind.
	return &Budget{link: link, key: "{" + key + "}", replica: replica, cfg: cfg, log: cfg.Logger, dirty: true}
}

// Config returns the budget's policy, after clamping.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// RenewEvery returns how often the owner should call Renew: a third of TTL.
func (b *Budget) RenewEvery() time.Duration { return max(b.cfg.TTL/3, time.Millisecond) }

// UseLogger makes l the budget's logger when its config named none; a
// Keeper calls it with its own. A nil l changes nothing.
func (b *Budget) UseLogger(l *slog.Logger) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.Logger == nil && l != nil {
		b.log = l
	}
}

func (b *Budget) now() time.Time {
	if b.cfg.Clock != nil {
		return b.cfg.Clock()
	}
	return time.Now()
}

// send runs one step with the replica's count (held before a lease, after a
// return) and returns the reply, or the store's error, which marks the
// store's count as possibly off, and the step's number. The caller holds
// sending.
func (b *Budget) send(ctx context.Context, step BudgetStep, held int, overwrite bool) (BudgetReply, uint64, error) {
	b.mu.Lock()
	b.sent++
	n, unsure := b.sent, b.dirty && !overwrite
	room := 0
	if b.dirty && b.known {
		// The store may have lost this replica's record (see
		// BudgetOp.Room): it brings back what it was allowed alone.
		room = b.last.Room
	}
	b.mu.Unlock()
	tctx, cancel := b.trip(ctx, b.link)
	defer cancel()
	r, err := b.link.store().Budget(tctx, BudgetOp{
		Step: step, Key: b.key, Replica: b.replica, Budget: b.cfg.Slots,
		TTL: b.cfg.TTL, Held: held, Overwrite: overwrite, Borrow: b.cfg.Borrow, Unsure: unsure, Room: room,
	})
	if b.failed(err) {
		b.mu.Lock()
		b.dirty = true
		b.mu.Unlock()
	}
	// A step the caller gave up on says nothing about the store.
	if err == nil || ctx.Err() == nil {
		b.seen(err)
	}
	return r, n, err
}

// seen follows the store's answer to a step (err nil) or its failure: the
// first failure after an answer begins an outage, the first answer after
// a failure ends it, each said once in the log.
func (b *Budget) seen(err error) {
	b.mu.Lock()
	switch {
	case err != nil && !b.down:
		b.down = true
		b.b.Outages++
		b.out = BudgetOutage{Since: b.now(), Err: err, Errors: 1}
		room, log := b.roomLocked(), b.logger()
		b.mu.Unlock()
		log.Warn("wardpool: the budget's store is unreachable; this replica decides alone within its safe share",
			"budget", b.key, "replica", b.replica, "room", room, "err", err)
		return
	case err != nil:
		b.out.Err = err
		b.out.Errors++
	case b.down:
		b.down = false
		b.out.For = b.now().Sub(b.out.Since)
		out, log := b.out, b.logger()
		b.mu.Unlock()
		log.Info("wardpool: the budget's store is reachable again",
			"budget", b.key, "replica", b.replica, "after", out.For,
			"errors", out.Errors, "fallbacks", out.Fallbacks, "err", out.Err)
		return
	}
	b.mu.Unlock()
}

func (b *Budget) logger() *slog.Logger {
	if b.log != nil {
		return b.log
	}
	return slog.Default()
}

// roomLocked is the most the replica may hold alone: the Room of its last
// reply, and at least Floor. mu must be held.
func (b *Budget) roomLocked() int {
	room := 0
	if b.known {
		room = b.last.Room
	}
	return max(room, b.cfg.Floor)
}

// noteLocked records the reply to step n, once the step's own effect on
// held is counted. mu must be held. Replies may arrive out of order (a
// Renew sent before a Return may answer after it): a reply to a step sent
// before the one last noted is dropped, so a stale Room never outlives a
// newer one.
func (b *Budget) noteLocked(r BudgetReply, n uint64) {
	if n < b.noted {
		return
	}
	b.last, b.known, b.noted = r, true, n
}

// Lease asks for one slot. It reports whether the slot is the replica's; a
// refusal means the fleet's budget is spent for now (the caller waits, as
// for a full pool, and asks again). When the store does not answer in time,
// the replica decides alone (granted only below its Room, see Budget) and
// the error is returned beside.
func (b *Budget) Lease(ctx context.Context) (bool, error) {
	b.sending.RLock()
	defer b.sending.RUnlock()
	b.mu.Lock()
	b.b.Leases++
	held := b.held
	b.mu.Unlock()

	r, n, err := b.send(ctx, StepLease, held, false)

	b.mu.Lock()
	defer b.mu.Unlock()
	granted := r.Granted
	if err != nil {
		b.fallbacks.Add(1)
		if b.down {
			b.out.Fallbacks++
		}
		granted = b.held < b.roomLocked()
	}
	if granted {
		b.held++
		b.b.Granted++
	} else {
		b.b.Refused++
	}
	if err == nil {
		b.noteLocked(r, n)
	}
	return granted, err
}

// Return gives one slot back: call it once for every granted lease, when
// its connection is closed (or the dial it was for failed). Returning more
// than was granted is ignored. A store error is returned; the store's count
// is then corrected by the next Renew. Giving back does not lower the
// replica's Room: through an outage it may lease again up to it.
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
	held := b.held
	b.mu.Unlock()

	r, n, err := b.send(ctx, StepReturn, held, false)

	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.noteLocked(r, n)
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

	r, n, err := b.send(ctx, StepRenew, held, overwrite)

	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.noteLocked(r, n)
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

	_, _, err := b.send(ctx, StepLeave, 0, false)
	return err
}

// Owed returns how many slots the replica should give back now: close that
// many idle connections (or, when none is idle, close connections as their
// loans end instead of keeping them idle). It costs no round trip. By the
// last reply, it is what the store said the replica holds over its share,
// less what was given back since; while the store is unreachable, it is
// what the replica holds over its Room (a borrower shrinks to its share).
func (b *Budget) Owed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return max(b.held-b.roomLocked(), 0)
	}
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

// Outage returns the store outage under way and true, or the last one that
// ended and false (the zero BudgetOutage when there was none). It costs no
// round trip.
func (b *Budget) Outage() (BudgetOutage, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.out
	if b.down {
		out.For = b.now().Sub(out.Since)
	}
	return out, b.down
}

// Stats returns the replica's view of the budget.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b
	s.Held = b.held
	s.Share, s.Live, s.Total, s.Owed = b.last.Share, b.last.Live, b.last.Total, b.last.Owed
	s.Room = b.roomLocked()
	if b.down {
		s.Owed = max(b.held-s.Room, 0)
	}
	s.Alone = b.down
	s.Stats = b.tally.stats()
	return s
}
