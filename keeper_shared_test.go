package wardpool

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
	"github.com/wardpool/wardpool/ward/shared"
)

// sharedKeeper builds a Keeper on d leasing from a budget over store, as
// replica name.
func sharedKeeper(t *testing.T, d *dialer, store shared.Store, name string, slots int) (*Keeper[*res], *shared.Budget) {
	t.Helper()
	cfg := shared.DefaultBudget
	cfg.Slots, cfg.TTL = slots, 300*time.Millisecond
	b := shared.NewBudget(shared.Link{Store: store, Timeout: time.Minute}, "db", name, cfg)
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 5},
		Shared: Shared{Budget: b, RetryEvery: 2 * time.Millisecond},
		Clock:  newSystemClock(), // the budget's retries and renewals in real time
	})
	return k, b
}

// TestKeeperSharedBudget: two Keepers on one budget of 3. The first takes
// all three; its fourth caller waits as on a full pool (no failure
// counted) until its ctx ends; a caller of the second waits until the
// first closes one, and is then served; the fleet never holds more than 3;
// and at Close each Keeper leaves the fleet.
func TestKeeperSharedBudget(t *testing.T) {
	store := shared.NewMemStore(nil)
	d1, d2 := &dialer{}, &dialer{}
	k1, b1 := sharedKeeper(t, d1, store, "one", 3)
	k2, b2 := sharedKeeper(t, d2, store, "two", 3)
	var loans []Loan[*res]
	for range 3 {
		loans = append(loans, mustAcquire(t, k1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err := k1.Acquire(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire past the budget: %v, want to wait until its ctx ended", err)
	}
	// The pool itself answered Wait at the ceiling the budget set, and the
	// caller's error says so.
	var ae *AcquireError
	if !errors.As(err, &ae) || ae.Ceiling != 3 || !strings.Contains(err.Error(), "budget allowing 3") {
		t.Fatalf("acquire past the budget: %v, want an AcquireError naming the ceiling of 3", err)
	}
	if s := k1.Stats(); s.Waited == 0 {
		t.Fatalf("the pool answered no Wait at the ceiling: %+v", s.Books)
	}
	// A retry of the budget may be in flight for the caller who left.
	clocktest.Eventually(t, "the retries to settle", func() bool { return k1.Stats().Dialing == 0 })
	{
		s := k1.Stats()
		if diff := cmp.Diff(pool.Books{Failed: 0, Live: 3}, pool.Books{Failed: s.Failed, Live: s.Live}); diff != "" {
			t.Fatalf("a refused lease changed the books (-want +got):\n%s", diff)
		}
	}
	if s := k1.SharedStats(); s.BudgetWaits == 0 || s.Budget.Held != 3 {
		t.Fatalf("shared stats %+v, want budget waits counted and 3 held", s)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := k2.Acquire(ctx)
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	clocktest.Eventually(t, "the second Keeper's caller to wait on the budget", func() bool {
		return k2.SharedStats().BudgetWaits > 0
	})
	if d1.open()+d2.open() > 3 {
		t.Fatalf("the fleet holds %d, over the budget of 3", d1.open()+d2.open())
	}
	loans[0].Destroy() // closed: its slot goes back to the fleet
	if err := <-got; err != nil {
		t.Fatalf("the second Keeper's caller: %v", err)
	}
	if b1.Held()+b2.Held() > 3 || d1.open()+d2.open() > 3 {
		t.Fatalf("held %d+%d, open %d+%d: over the budget", b1.Held(), b2.Held(), d1.open(), d2.open())
	}
	for _, l := range loans[1:] {
		l.Release()
	}
	closeKeeper(t, k1)
	closeKeeper(t, k2)
	r, err := store.Budget(context.Background(), shared.BudgetOp{Step: shared.StepRenew, Key: "{db}", Replica: "look", Budget: 3, TTL: time.Second})
	if err != nil || r.Live != 1 || r.Total != 0 {
		t.Fatalf("after both closed the store holds %+v %v, want only the looker", r, err)
	}
}

// TestKeeperSharedBreaker: a shared breaker opened by the fleet refuses the
// dial before it is made, says why, and counts it.
func TestKeeperSharedBreaker(t *testing.T) {
	store := shared.NewMemStore(nil)
	pol := shared.DefaultBreaker
	pol.Failures = 1
	br := shared.NewBreaker(shared.Link{Store: store, Timeout: time.Minute}, "db", pol)
	d := &dialer{}
	k, clock := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Shared: Shared{Breaker: br}})
	l := mustAcquire(t, k) // closed: one round trip, and the dial
	l.Release()
	if err := br.Fail(context.Background(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	l = mustAcquire(t, k) // the idle one: the breaker is not asked
	l2, err := k.Acquire(context.Background())
	if !errors.Is(err, ErrSharedOpen) {
		t.Fatalf("acquire needing a dial with the shared breaker open: %v %v", l2, err)
	}
	l.Release()
	if _, _, dials := d.counts(); dials > 1 {
		t.Fatalf("%d dials at once", dials)
	}
	if opened, _, _ := d.counts(); opened != 1 {
		t.Fatalf("dialed %d, want 1: the refused dial was made", opened)
	}
	s := k.SharedStats()
	if s.BreakerRefused != 1 || s.BreakerState != shared.Open || s.Breaker.Trips != 4 {
		t.Fatalf("shared stats %+v, want 1 refusal, state open, 4 round trips", s)
	}
}

// closeKeeper closes k, failing the test if that takes more than 5s.
func closeKeeper(t *testing.T, k *Keeper[*res]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestKeeperSharedCosts counts round trips: a loan that reuses an idle
// resource asks the store nothing; a dial costs one lease and one breaker
// look (closed); a close one return; and the loop of acquire and release
// on an idle resource allocates nothing with shared guards set.
func TestKeeperSharedCosts(t *testing.T) {
	store := shared.NewMemStore(nil)
	cfg := shared.DefaultBudget
	cfg.Slots = 4
	cfg.TTL = time.Hour // no renewal but the first while the test counts
	b := shared.NewBudget(shared.Link{Store: store, Timeout: time.Minute}, "db", "one", cfg)
	br := shared.NewBreaker(shared.Link{Store: store, Timeout: time.Minute}, "db", shared.DefaultBreaker)
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Shared: Shared{Budget: b, Breaker: br}, Clock: newSystemClock()})
	clocktest.Eventually(t, "the first renewal", func() bool { s := b.Stats(); return s.Renewals > 0 && s.Trips >= s.Renewals })
	// One reading of the budget's figures: a renewal running in the
	// background between two readings would be miscounted.
	trips := func() uint64 { s := b.Stats(); return s.Trips - s.Renewals + br.Stats().Trips }
	before := trips()
	l := mustAcquire(t, k)
	if got := trips() - before; got != 2 {
		t.Fatalf("a dial cost %d round trips, want 2 (lease, breaker)", got)
	}
	l.Release()
	before = trips()
	allocs := testing.AllocsPerRun(1000, func() {
		l, err := k.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	})
	if got := trips() - before; got != 0 {
		t.Fatalf("loans of an idle resource cost %d round trips, want 0", got)
	}
	if allocs != 0 {
		t.Fatalf("a loan of an idle resource allocated %v times", allocs)
	}
	l = mustAcquire(t, k)
	before = trips()
	l.Destroy()
	// The budget counts the Return's round trip as the call ends, after
	// Held has fallen: wait for both.
	clocktest.Eventually(t, "the close to give its slot back", func() bool { return b.Held() == 0 && trips() > before })
	if got := trips() - before; got != 1 {
		t.Fatalf("a close cost %d round trips, want 1 (return)", got)
	}
}

// TestKeeperSharedDialRate: a fleet-wide rate of two dials a minute; the
// third dial fails at once, says why, and is counted.
func TestKeeperSharedDialRate(t *testing.T) {
	store := shared.NewMemStore(nil)
	rate := shared.NewCounter(shared.Link{Store: store, Timeout: time.Minute}, "dials", 2, time.Minute, 0)
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 5}, Shared: Shared{Dials: rate}, Logger: quietLogger()})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	if _, err := k.Acquire(context.Background()); !errors.Is(err, ErrSharedRate) {
		t.Fatalf("third dial in the minute: %v, want ErrSharedRate", err)
	}
	a.Release()
	b.Release()
	if s := k.SharedStats(); s.RateRefused != 1 || s.Dials.Trips != 3 {
		t.Fatalf("shared stats %+v", s)
	}
	if opened, _, _ := d.counts(); opened != 2 {
		t.Fatalf("dialed %d, want 2", opened)
	}
}

// TestKeeperSharedGivesBackWhenOthersAsk: a Keeper that borrowed the whole
// budget while the other asked for nothing, and keeps its loans going with
// no queue of its own (its releases would take the lane), gives back down
// to its share once the other asks: the other's caller is served.
func TestKeeperSharedGivesBackWhenOthersAsk(t *testing.T) {
	store := shared.NewMemStore(nil)
	d1, d2 := &dialer{}, &dialer{}
	k1, b1 := sharedKeeper(t, d1, store, "one", 4)
	k2, _ := sharedKeeper(t, d2, store, "two", 4)
	var loans []Loan[*res]
	for range 4 {
		loans = append(loans, mustAcquire(t, k1))
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := k2.Acquire(ctx)
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	// k1 keeps lending and taking back its four, never queueing.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case err := <-got:
				got <- err
				return
			default:
			}
			for i, l := range loans {
				if l.Valid() {
					l.Release()
				}
				if nl, err := k1.TryAcquire(context.Background()); err == nil {
					loans[i] = nl
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	<-done
	if err := <-got; err != nil {
		t.Fatalf("the asking Keeper's caller: %v", err)
	}
	for _, l := range loans {
		if l.Valid() {
			l.Release()
		}
	}
	if h := b1.Held(); h > 3 {
		t.Fatalf("the borrower still holds %d of 4 after the other asked", h)
	}
}

// downStore is a budget store that does not answer while down is set.
type downStore struct {
	shared.Store
	down atomic.Bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (s *downStore) Budget(ctx context.Context, op shared.BudgetOp) (shared.BudgetReply, error) {
	if s.down.Load() {
		return shared.BudgetReply{}, errRefused
	}
	return s.Store.Budget(ctx, op)
}

// TestKeeperSharedStoreOutage: when the budget's store goes away the
// Keeper keeps serving at its safe share, however often its connections
// close; a caller past it gives up with an error naming the store's
// outage; the outage is one line in the Keeper's log when it begins and
// one when it ends, however many calls failed; and the stats say so.
func TestKeeperSharedStoreOutage(t *testing.T) {
	store := &downStore{Store: shared.NewMemStore(time.Now)}
	var logs syncBuffer
	cfg := shared.DefaultBudget
	cfg.Slots, cfg.TTL = 4, time.Minute
	b := shared.NewBudget(shared.Link{Store: store, Timeout: time.Minute}, "db", "one", cfg)
	other := shared.NewBudget(shared.Link{Store: store, Timeout: time.Minute}, "db", "two", cfg)
	if err := other.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 5},
		Shared: Shared{Budget: b, RetryEvery: 2 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Clock:  newSystemClock(), // the budget's retries in real time
	})
	a, c := mustAcquire(t, k), mustAcquire(t, k) // its share: 2 of 4
	store.down.Store(true)
	for range 5 { // churn: each closes and is dialled again, alone
		a.Destroy()
		a = mustAcquire(t, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err := k.Acquire(ctx)
	cancel()
	var ae *AcquireError
	if !errors.As(err, &ae) || !errors.Is(ae.BudgetStoreErr, errRefused) || ae.Ceiling != 2 ||
		!strings.Contains(err.Error(), "budget allowing 2 here (the budget's store has been unreachable for ") ||
		!strings.Contains(err.Error(), "connection refused)") {
		t.Fatalf("acquire past the safe share: %v", err)
	}
	st := k.SharedStats().Budget
	if !st.Alone || st.Outages != 1 || st.Fallbacks == 0 || st.Held != 2 {
		t.Fatalf("budget stats in the outage %+v", st)
	}
	store.down.Store(false)
	a.Release()
	c.Release()
	clocktest.Eventually(t, "a call to reach the store again", func() bool {
		_ = b.Renew(context.Background())
		return !k.SharedStats().Budget.Alone
	})
	closeKeeper(t, k)
	out := logs.String()
	if strings.Count(out, "store is unreachable") != 1 || strings.Count(out, "reachable again") != 1 {
		t.Fatalf("want one line as the outage began and one as it ended:\n%s", out)
	}
	if !strings.Contains(out, "replica=one") || !strings.Contains(out, "fallbacks=") {
		t.Fatalf("the lines do not say whose outage, or what fell back:\n%s", out)
	}
	if ae := (&AcquireError{Ceiling: 2, BudgetStoreErr: errRefused, BudgetStoreDown: 12 * time.Second}); !strings.Contains(ae.Error(),
		"the fleet's budget allowing 2 here (the budget's store has been unreachable for 12s: dial tcp 127.0.0.1:6379: connect: connection refused)") {
		t.Fatalf("message %q", ae.Error())
	}
}

// syncBuffer is a bytes.Buffer safe for the Keeper's goroutines to log to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKeeperSharedRefusalIsNotAFailedDial: a dial the shared breaker
// refuses is given back to the pool as a refusal (Pool.Unreserve), so the
// ward's own breaker, fed by failed dials, does not open on the same
// outage, and the books count it as shed, not failed.
func TestKeeperSharedRefusalIsNotAFailedDial(t *testing.T) {
	store := shared.NewMemStore(nil)
	pol := shared.DefaultBreaker
	pol.Failures = 1
	br := shared.NewBreaker(shared.Link{Store: store, Timeout: time.Minute}, "db", pol)
	d := &dialer{}
	c := newFakeClock()
	local := ward.NewBreaker(ward.DefaultSre, c.Now())
	k, clock := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		Ward:   ward.Ward{Breaker: local},
		Clock:  c,
		Shared: Shared{Breaker: br},
	})
	if err := br.Fail(context.Background(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := k.Acquire(context.Background()); !errors.Is(err, ErrSharedOpen) {
			t.Fatalf("acquire with the shared breaker open: %v, want ErrSharedOpen", err)
		}
	}
	s := k.Stats()
	if s.Failed != 0 || s.Shed != 20 || s.LastDialError != nil {
		t.Fatalf("books %+v, last dial error %v: want 20 shed, none failed", s.Books, s.LastDialError)
	}
	if r := local.Ratio(clock.Now()); r != 0 {
		t.Fatalf("the local breaker refuses %.2f of dials after refusals by the shared one", r)
	}
	if opened, _, _ := d.counts(); opened != 0 {
		t.Fatalf("%d dials made past an open shared breaker", opened)
	}
}

// TestKeeperSharedCloseWaitsForLoans: with a fleet budget, Close leaves
// the fleet after at most a second, but returns only once every loan is
// home, as it does without a budget.
func TestKeeperSharedCloseWaitsForLoans(t *testing.T) {
	store := shared.NewMemStore(nil)
	d := &dialer{}
	k, _ := sharedKeeper(t, d, store, "one", 3)
	l := mustAcquire(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := k.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a loan out = %v, want it to wait until its ctx ends", err)
	}
	l.Release()
	closeKeeper(t, k)
	if open := d.open(); open != 0 {
		t.Fatalf("%d open after Close", open)
	}
}
