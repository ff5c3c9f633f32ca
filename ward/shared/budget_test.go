package shared

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// fleet returns n budget handles named r0…r(n-1) over one store.
func fleet(store Store, n int, cfg BudgetConfig) []*Budget {
	out := make([]*Budget, n)
	for i := range out {
		out[i] = NewBudget(Link{Store: store, Timeout: time.Minute}, "db", fmt.Sprintf("r%d", i), cfg)
	}
	return out
}

func lease(t *testing.T, b *Budget, want bool) {
	t.Helper()
	got, err := b.Lease(context.Background())
	if err != nil || got != want {
		t.Fatalf("%s Lease = %v %v, want %v (stats %+v)", b.replica, got, err, want, b.Stats())
	}
}

func renew(t *testing.T, bs ...*Budget) {
	t.Helper()
	for _, b := range bs {
		if err := b.Renew(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBudgetShareBorrowAndGiveBack walks the rules: a replica alone may
// borrow the whole budget; a second one asking below its share is refused
// and recorded as waiting; the borrower is told what it owes, gives it
// back, and the waiter then reaches its share, and no further while the
// other is at its own.
func TestBudgetShareBorrowAndGiveBack(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	cfg := DefaultBudget
	cfg.Slots = 4
	r := fleet(store, 2, cfg)
	a, b := r[0], r[1]
	renew(t, a, b, a)
	if st := a.Stats(); st.Share != 2 || st.Live != 2 {
		t.Fatalf("after both joined: %+v, want share 2 of 2 live", st)
	}
	for range 4 {
		lease(t, a, true) // 2 of its share, 2 borrowed: b asks for none
	}
	lease(t, b, false) // the budget is spent; b waits below its share
	renew(t, a)
	if a.Owed() != 2 {
		t.Fatalf("a owes %d, want 2 (stats %+v)", a.Owed(), a.Stats())
	}
	a.Return(context.Background())
	if a.Owed() != 1 {
		t.Fatalf("after one given back a owes %d, want 1", a.Owed())
	}
	lease(t, b, true)
	a.Return(context.Background())
	lease(t, b, true)
	if a.Owed() != 0 {
		t.Fatalf("a still owes %d at its share", a.Owed())
	}
	lease(t, b, false) // the budget is spent again, and b is at its share
	lease(t, a, false)
	st := b.Stats()
	if st.Held != 2 || st.Total != 4 || st.Leases != 4 || st.Granted != 2 || st.Refused != 2 {
		t.Fatalf("b's stats %+v", st)
	}
	// A slot given back stays b's to take again alone (its Room) until b
	// renews; then, with nobody waiting, it may be borrowed again.
	b.Return(context.Background())
	lease(t, a, false)
	renew(t, b)
	lease(t, a, true)
	if st := a.Stats(); st.Held != 3 || st.Returned != 2 {
		t.Fatalf("a's stats %+v", st)
	}
}

// TestBudgetWaitersComeBeforeBorrowers: a free slot goes to a replica below
// its share that is waiting, not to a borrower.
func TestBudgetWaitersComeBeforeBorrowers(t *testing.T) {
	store := NewMemStore(nil)
	cfg := DefaultBudget
	cfg.Slots = 6
	r := fleet(store, 3, cfg)
	renew(t, r...)
	for range 4 {
		lease(t, r[0], true)
	}
	lease(t, r[1], true)
	lease(t, r[1], true)
	lease(t, r[2], false) // waiting, lacking 2
	r[0].Return(context.Background())
	lease(t, r[1], false) // at its share: the free slot is r2's
	lease(t, r[0], false)
	lease(t, r[2], true)
}

// TestBudgetNoBorrow: with borrowing off a replica stops at its share, and
// its Room is its share.
func TestBudgetNoBorrow(t *testing.T) {
	store := NewMemStore(nil)
	cfg := BudgetConfig{Slots: 5, TTL: time.Second}
	r := fleet(store, 2, cfg)
	renew(t, r...)
	lease(t, r[0], true)
	lease(t, r[0], true)
	lease(t, r[0], false)
	if st := r[0].Stats(); st.Room != 2 || st.Share != 2 {
		t.Fatalf("stats %+v, want share and room 2", st)
	}
}

// TestBudgetDeadReplicaGivesBackWithinTwoTTLs: a replica that stops
// renewing lapses when its lease runs out (no share, nothing it waits for)
// and loses its slots one TTL later, on the store's clock; one that calls
// again within that TTL finds its slots still its own, granted to nobody.
func TestBudgetDeadReplicaGivesBackWithinTwoTTLs(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	cfg := DefaultBudget
	cfg.Slots = 3
	r := fleet(store, 2, cfg)
	renew(t, r...)
	for range 3 {
		lease(t, r[0], true)
	}
	clock.Add(cfg.TTL)
	renew(t, r[1])
	if st := r[1].Stats(); st.Live != 1 || st.Share != 3 || st.Total != 3 {
		t.Fatalf("r0 lapsed: %+v, want 1 live, share 3, its 3 slots still counted", st)
	}
	lease(t, r[1], false) // r0's slots are counted for one more TTL
	clock.Add(cfg.TTL - time.Millisecond)
	renew(t, r[0]) // back within the grace: a member again, its slots its own
	if st := r[0].Stats(); st.Live != 2 || st.Total != 3 || st.Held != 3 {
		t.Fatalf("r0 back within the grace: %+v", st)
	}
	clock.Add(2 * cfg.TTL)
	renew(t, r[1])
	lease(t, r[1], true)
	if st := r[1].Stats(); st.Live != 1 || st.Share != 3 || st.Total != 1 {
		t.Fatalf("after r0's slots were dropped: %+v", st)
	}
}

// TestBudgetJoinLowersShares: a replica joining lowers the share, and the
// one above it owes the difference once the newcomer asks.
func TestBudgetJoinLowersShares(t *testing.T) {
	store := NewMemStore(nil)
	cfg := DefaultBudget
	cfg.Slots = 4
	r := fleet(store, 2, cfg)
	renew(t, r[0])
	for range 4 {
		lease(t, r[0], true)
	}
	lease(t, r[1], false)
	renew(t, r[0])
	if r[0].Owed() != 2 {
		t.Fatalf("owed %d after a newcomer asked, want 2", r[0].Owed())
	}
}

// flaky is a store whose calls fail while down is set.
type flaky struct {
	Store
	down atomic.Bool
}

func (f *flaky) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	if f.down.Load() {
		return BudgetReply{}, errBroken
	}
	return f.Store.Budget(ctx, op)
}

// TestBudgetOutage: with the store unreachable a replica keeps what it
// holds and grows only to the Room of its last reply (its share with
// borrowing off); one that never reached the store dials nothing; every
// decision is counted; and when the store comes back empty, Renew rebuilds
// the counts from the replicas' own.
func TestBudgetOutage(t *testing.T) {
	ctx := context.Background()
	f := &flaky{Store: NewMemStore(nil)}
	cfg := BudgetConfig{Slots: 6, TTL: time.Second}
	r := fleet(f, 3, cfg)
	renew(t, r[0], r[1])
	lease(t, r[0], true)
	f.down.Store(true)
	var granted int
	for range 5 {
		ok, err := r[0].Lease(ctx)
		if !errors.Is(err, errBroken) {
			t.Fatalf("Lease during the outage: %v", err)
		}
		if ok {
			granted++
		}
	}
	// Share was 3 (6 ÷ 2 members): r0 holds 1 and may grow to 3.
	if granted != 2 || r[0].Held() != 3 {
		t.Fatalf("granted %d during the outage (held %d), want 2 (to the share of 3)", granted, r[0].Held())
	}
	if ok, _ := r[2].Lease(ctx); ok {
		t.Fatal("a replica that never reached the store dialled during the outage")
	}
	if st := r[0].Stats(); st.Fallbacks != 5 || st.StoreErrors != 5 {
		t.Fatalf("stats %+v", st)
	}
	// The store comes back empty: the counts are rebuilt from the replicas.
	f.Store = NewMemStore(nil)
	f.down.Store(false)
	renew(t, r...)
	if st := r[2].Stats(); st.Total != 3 || st.Live != 3 || st.Share != 2 {
		t.Fatalf("after the rebuild: %+v, want 3 held of 6 by 3 members", st)
	}
	// With borrowing on, the room is what is held: no growth alone.
	g := &flaky{Store: NewMemStore(nil)}
	b := NewBudget(Link{Store: g}, "db", "x", BudgetConfig{Slots: 6, TTL: time.Second, Borrow: true})
	lease(t, b, true)
	g.down.Store(true)
	if ok, _ := b.Lease(ctx); ok {
		t.Fatal("a borrowing replica grew during an outage")
	}
	if err := b.Return(ctx); !errors.Is(err, errBroken) {
		t.Fatalf("Return during the outage: %v", err)
	}
	if b.Held() != 0 {
		t.Fatal("a slot given back during an outage is still held")
	}
	if err := b.Return(ctx); err != nil {
		t.Fatalf("Return of nothing: %v", err)
	}
}

// TestBudgetLeaveAndEdges: Leave gives everything back; a budget of zero
// admits nothing; names of the steps.
func TestBudgetLeaveAndEdges(t *testing.T) {
	ctx := context.Background()
	store := NewMemStore(nil)
	r := fleet(store, 2, BudgetConfig{Slots: 2, TTL: time.Second, Borrow: true})
	lease(t, r[0], true)
	lease(t, r[0], true)
	lease(t, r[1], false)
	if err := r[0].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	lease(t, r[1], true)
	lease(t, r[1], true)
	zero := NewBudget(Link{Store: store}, "none", "z", BudgetConfig{Slots: -3})
	lease(t, zero, false)
	if c := zero.Config(); c.Slots != 0 || c.TTL != time.Millisecond || zero.RenewEvery() != time.Millisecond {
		t.Fatalf("clamped config %+v, renew every %v", c, zero.RenewEvery())
	}
	for s, name := range map[BudgetStep]string{StepLease: "lease", StepReturn: "return", StepRenew: "renew", StepLeave: "leave", 0: "step?"} {
		if s.String() != name {
			t.Errorf("%d.String() = %q", s, s.String())
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := store.Budget(cancelled, BudgetOp{Step: StepLease}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Budget with a cancelled ctx: %v", err)
	}
}

// TestBudgetConcurrentLeasesStayWithin: twenty replicas leasing from many
// goroutines at once never hold more than the budget between them, and the
// store's total is the sum of their own counts.
func TestBudgetConcurrentLeasesStayWithin(t *testing.T) {
	store := NewMemStore(nil)
	cfg := DefaultBudget
	cfg.Slots = 40
	r := fleet(store, 20, cfg)
	var wg sync.WaitGroup
	var granted atomic.Int64
	for _, b := range r {
		for range 4 {
			wg.Go(func() {
				for range 10 {
					if ok, _ := b.Lease(context.Background()); ok {
						granted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	sum := 0
	for _, b := range r {
		sum += b.Held()
	}
	renew(t, r[0])
	if granted.Load() != 40 || sum != 40 || r[0].Stats().Total != 40 {
		t.Fatalf("granted %d, held %d, store total %d; want 40 each", granted.Load(), sum, r[0].Stats().Total)
	}
}

// TestBudgetProperty drives random steps of random replicas (leases,
// returns, renewals, giving back what is owed) with a stable membership and
// checks after each that the fleet holds no more than the budget, that the
// store's total is the sum of the replicas' own counts, and that a replica
// waiting below its share is served once the others give back what they
// owe.
func TestBudgetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		store := NewMemStore(nil)
		n := rapid.IntRange(1, 6).Draw(t, "replicas")
		cfg := BudgetConfig{Slots: rapid.IntRange(0, 12).Draw(t, "slots"), TTL: time.Second, Borrow: rapid.Bool().Draw(t, "borrow")}
		r := fleet(store, n, cfg)
		for _, b := range r {
			b.Renew(ctx)
		}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			b := r[rapid.IntRange(0, n-1).Draw(t, "who")]
			switch rapid.IntRange(0, 3).Draw(t, "step") {
			case 0:
				b.Lease(ctx)
			case 1:
				b.Return(ctx)
			case 2:
				b.Renew(ctx)
			case 3:
				for range b.Owed() {
					b.Return(ctx)
				}
			}
			sum := 0
			for _, x := range r {
				sum += x.Held()
				if !cfg.Borrow && x.Held() > cfg.Slots/n {
					t.Fatalf("%s holds %d over its share %d with borrowing off", x.replica, x.Held(), cfg.Slots/n)
				}
			}
			reply, _ := store.Budget(ctx, BudgetOp{Step: StepRenew, Key: "{db}", Replica: "r0", Budget: cfg.Slots, TTL: time.Second, Held: r[0].Held()})
			if sum > cfg.Slots || reply.Total != sum {
				t.Fatalf("fleet holds %d (store says %d) of %d", sum, reply.Total, cfg.Slots)
			}
		}
		// Liveness: a replica below its share that asks, after everyone
		// renews and gives back what they owe, is served.
		w := r[rapid.IntRange(0, n-1).Draw(t, "waiter")]
		share := cfg.Slots / n
		if w.Held() >= share {
			return
		}
		for w.Held() < share {
			if ok, _ := w.Lease(ctx); !ok {
				break // refused below its share: now it waits
			}
		}
		if w.Held() >= share {
			return
		}
		for _, x := range r {
			x.Renew(ctx)
			for range x.Owed() {
				x.Return(ctx)
			}
		}
		if ok, _ := w.Lease(ctx); !ok {
			t.Fatalf("%s below its share %d (holds %d) refused after the others gave back", w.replica, share, w.Held())
		}
	})
}

// TestNoStore: a Link without a Store is a store that never answers: every
// guard decides locally, says why, and counts it; nothing panics.
func TestNoStore(t *testing.T) {
	ctx := context.Background()
	var none Link
	if _, ok, err := NewBreaker(none, "b", DefaultBreaker).Allow(ctx, t0); !ok || !errors.Is(err, ErrNoStore) {
		t.Fatalf("breaker: %v %v", ok, err)
	}
	if ok, err := NewCounter(none, "c", 5, time.Second, 1).Take(ctx, t0); !ok || !errors.Is(err, ErrNoStore) {
		t.Fatalf("counter: %v %v", ok, err)
	}
	if _, err := NewPeriod(none, "p", 5, time.Second, 1).Take(ctx, t0); !errors.Is(err, ErrNoStore) {
		t.Fatalf("period: %v", err)
	}
	b := NewBudget(none, "d", "r", DefaultBudget)
	if ok, err := b.Lease(ctx); ok || !errors.Is(err, ErrNoStore) {
		t.Fatalf("budget: %v %v, want refused (it never heard from a store)", ok, err)
	}
	if b.Stats().Fallbacks != 1 {
		t.Fatalf("budget stats %+v", b.Stats())
	}
}

// gatedStore holds each StepReturn until its gate is closed, and records
// the order in which steps reach the store.
type gatedStore struct {
	Store
	gate  chan struct{}
	inner chan struct{} // closed when a Return is being held
	mu    sync.Mutex
	steps []BudgetStep
}

func (g *gatedStore) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	if op.Step == StepReturn {
		close(g.inner)
		<-g.gate
	}
	g.mu.Lock()
	g.steps = append(g.steps, op.Step)
	g.mu.Unlock()
	return g.Store.Budget(ctx, op)
}

// TestBudgetLeaveWaitsForStepsInFlight: a Return still on its way when
// Leave is called lands first; landing after the Leave, it would count the
// replica a member again (a Keeper closing with a connection's close in
// flight did exactly that on a loaded machine).
func TestBudgetLeaveWaitsForStepsInFlight(t *testing.T) {
	ctx := context.Background()
	g := &gatedStore{Store: NewMemStore(nil), gate: make(chan struct{}), inner: make(chan struct{})}
	b := NewBudget(Link{Store: g, Timeout: time.Minute}, "db", "r", BudgetConfig{Slots: 2, TTL: time.Minute})
	lease(t, b, true)
	returned := make(chan error, 1)
	go func() { returned <- b.Return(ctx) }()
	<-g.inner // the Return is at the store, held
	left := make(chan error, 1)
	go func() { left <- b.Leave(ctx) }()
	select {
	case err := <-left:
		t.Fatalf("Leave returned (%v) while a Return was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.gate)
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	if err := <-left; err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	steps := append([]BudgetStep(nil), g.steps...)
	g.mu.Unlock()
	if n := len(steps); n < 2 || steps[n-2] != StepReturn || steps[n-1] != StepLeave {
		t.Fatalf("steps reached the store as %v, want the Return before the Leave", steps)
	}
	look := NewBudget(Link{Store: g.Store}, "db", "look", BudgetConfig{Slots: 2, TTL: time.Minute})
	if err := look.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if st := look.Stats(); st.Live != 1 || st.Total != 0 {
		t.Fatalf("after the Leave the store counts %+v, want only the looker", st)
	}
}
