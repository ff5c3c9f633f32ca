package wardpool

import (
	"time"

	"github.com/wardpool/wardpool/pool"
)

// Stats is one reading of a Keeper: the pool's books and the runtime's own
// figures. Counters only rise.
type Stats struct {
	pool.Books
	// Waiting is how many callers are queued now.
	Waiting int
	// Dialing is how many dials are in flight now.
	Dialing int
	// Closing is how many resources are waiting to be closed, or being
	// closed, now (see Config.Close): zero once every close so far is done.
	// Closed counts the closes done.
	Closing int
	Closed  uint64
	// Acquires counts successful Acquire, TryAcquire, AcquireFunc and
	// AcquireAllIdle loans.
	Acquires uint64
	// AcquireWait is the total time successful acquires spent waiting
	// (queued, dialing, held back by a Later), on the Keeper's clock.
	AcquireWait time.Duration
	// EmptyAcquires counts successful acquires that found nothing ready and
	// had to wait or dial: never more than Acquires.
	EmptyAcquires uint64
	// Canceled counts acquires that ended with their context before they
	// got a resource, or that Config.AcquireTimeout ended: AcquireTimeouts
	// counts those (in Canceled too, as DialTimeouts are in Failed).
	Canceled        uint64
	AcquireTimeouts uint64
	// Late counts acquires refused at once because the pool predicted a
	// wait longer than their context (or Config.AcquireTimeout) allowed
	// (Config.Admission; each a *LateError, counted in Shed too).
	Late uint64
	// Checks counts Config.Check calls; CheckFailures those that failed and
	// dropped the resource.
	Checks, CheckFailures uint64
	// DialTimeouts counts dials cut short by Config.DialTimeout (counted in
	// Failed too). LastDialError is the error of the latest failed dial, nil
	// when none failed.
	DialTimeouts  uint64
	LastDialError error
	// Leaks counts loans reported as held past Config.LeakAfter.
	Leaks uint64
	// DoubleReleases counts Release, Destroy and Hijack calls on a loan that
	// had already ended: no-ops.
	DoubleReleases uint64
	// Panics counts recovered panics in Dial, Close, Check, BeforeReuse and
	// Classify.
	Panics uint64
	// Stalls counts the stalls the stall watch reported (Config.StallAfter),
	// and Stalled reports whether one is on now: reported, no loan back
	// since, callers still waiting.
	Stalls  uint64
	Stalled bool
	// Resets counts the Keeper's resets: Keeper.Reset, and each Loan.Reset
	// that retired a generation (one per failover, however many loans
	// failed with it). ResetCauses counts them by cause (CauseManual, a
	// classifier's cause such as "25006" or "READONLY", at most MaxCauses
	// of them, the rest under CauseOther); nil when there was none. It is
	// a copy, the reader's to keep.
	Resets      uint64
	ResetCauses map[string]uint64
	// Refusal is the share of new connections the ward's breaker refuses
	// now, in [0, 1]; zero without a breaker.
	Refusal float64
	// Classes is each class's part of the books (Config.Classes), the
	// default class last (named ""); nil without classes. Their Held add
	// up to Busy, and their Waiting to Waiting.
	Classes []ClassStats
	// Shared is the view of the guards shared with other replicas
	// (Config.Shared): the budget's share and slots, the store's errors and
	// local fallbacks, the shared breaker's state. Zero without them.
	Shared SharedStats
}

// WardStats returns what Stats returns, under the name every wardpool
// driver gives the runtime's reading (pgxward.Pool.WardStats and the
// others), so that a Keeper and a driver's pool are alike a
// metrics.Source.
func (k *Keeper[T]) WardStats() Stats { return k.Stats() }

// Stats returns a reading of the pool's figures.
func (k *Keeper[T]) Stats() Stats {
	// counted adds to acquired before empty: read empty first, so that a
	// reading never shows more empty acquires than acquires.
	empty := k.tally.empty.Load()
	shared := k.SharedStats() // the guards' own locks, not the Keeper's
	now := k.now()
	k.mu.Lock()
	s := k.stats
	resets, causes := s.resets.read()
	out := Stats{
		Books:          k.p.Books(),
		Waiting:        k.q.live,
		Dialing:        s.dialing,
		Closing:        len(k.closing.queue) + k.closing.running,
		Closed:         s.closed,
		Acquires:       k.tally.acquired.Load() + s.acquired,
		AcquireWait:    time.Duration(k.tally.waitNs.Load()),
		EmptyAcquires:  empty,
		Canceled:       s.canceled,
		Late:           s.late,
		Checks:         k.tally.checks.Load(),
		CheckFailures:  s.checkFailures,
		DialTimeouts:   s.dialTimeouts,
		LastDialError:  s.lastDial,
		Leaks:          s.leaks,
		DoubleReleases: k.tally.doubles.Load(),
		Panics:         s.panics,
		Resets:         resets,
		ResetCauses:    causes,
		Refusal:        k.p.Refusal(now),
		Shared:         shared,
	}
	out.AcquireTimeouts = s.acquireTimeouts
	out.Classes = k.classStatsLocked()
	out.Stalls, out.Stalled = s.stalls, k.stall.reported && k.q.live > 0
	k.mu.Unlock()
	return out
}

// Leaked returns how many loans are out now for longer than
// Config.LeakAfter; zero without the leak watch.
func (k *Keeper[T]) Leaked() int {
	if k.leakAfter <= 0 {
		return 0
	}
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leakedLocked(now)
}

// Sharing reports whether the Keeper has guards shared with other replicas
// (Config.Shared): Stats.Shared is worth reading.
func (k *Keeper[T]) Sharing() bool { return k.sh != nil }

// Loans returns every resource out on loan and how long it has been out,
// the longest first: the Pool's answer (Pool.Loans).
func (k *Keeper[T]) Loans() []pool.Lent[T] {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.p.Loans(now)
}
