package shared

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBudgetOwesWhenOver: a replica the store had forgotten comes back
// holding slots and puts the fleet over its budget; nobody waits, yet
// every holder above its share owes, leases are refused, and once they
// give back the fleet is within the budget.
func TestBudgetOwesWhenOver(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	cfg := BudgetConfig{Slots: 4, TTL: time.Second, Borrow: true}
	r := fleet(store, 3, cfg)
	renew(t, r[0], r[1])
	for range 4 {
		lease(t, r[0], true) // r1 asks for nothing: r0 borrows it all
	}
	r[2].held = 3 // cut off past two TTLs, its slots dropped, it lived on
	renew(t, r[2], r[0], r[1])
	if st := r[0].Stats(); st.Total != 7 || st.Share != 1 || r[0].Owed() != 3 {
		t.Fatalf("over the budget: r0 owes %d (%+v), want 3 of 7 held", r[0].Owed(), st)
	}
	if r[2].Owed() != 2 {
		t.Fatalf("the returning replica owes %d, want 2", r[2].Owed())
	}
	lease(t, r[1], false)
	for _, b := range r {
		for range b.Owed() {
			if err := b.Return(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	renew(t, r[1])
	if st := r[1].Stats(); st.Total > cfg.Slots || r[0].Held()+r[1].Held()+r[2].Held() != st.Total {
		t.Fatalf("after giving back: %+v; held %d %d %d", st, r[0].Held(), r[1].Held(), r[2].Held())
	}
}

// TestBudgetOutageKeepsSafeShare: through an outage a replica at its share
// keeps it however often its connections close and are dialled again; a
// borrower does not grow; one that never reached the store dials nothing,
// or its Floor; and the replica says it is alone, since when and why.
func TestBudgetOutageKeepsSafeShare(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	f := &flaky{Store: NewMemStore(clock.Now)}
	cfg := BudgetConfig{Slots: 6, TTL: 5 * time.Second, Borrow: true, Clock: clock.Now, Logger: slog.New(slog.DiscardHandler)}
	r := fleet(f, 3, cfg)
	renew(t, r...)
	lease(t, r[0], true)
	lease(t, r[0], true)
	lease(t, r[1], true)
	lease(t, r[1], true)
	lease(t, r[1], true) // r2 asks for nothing: r1 borrows one
	f.down.Store(true)
	clock.Add(time.Second)
	for range 10 { // churn: each connection closes at its age and is dialled again
		if err := r[0].Return(ctx); !errors.Is(err, errBroken) {
			t.Fatalf("Return during the outage: %v", err)
		}
		if ok, err := r[0].Lease(ctx); !ok || !errors.Is(err, errBroken) {
			t.Fatalf("Lease at the safe share during the outage: %v %v (stats %+v)", ok, err, r[0].Stats())
		}
	}
	if ok, _ := r[0].Lease(ctx); ok || r[0].Held() != 2 {
		t.Fatalf("r0 grew past its share alone: held %d", r[0].Held())
	}
	if ok, _ := r[1].Lease(ctx); ok || r[1].Owed() != 0 {
		t.Fatalf("the borrower grew alone, or owes %d", r[1].Owed())
	}
	clock.Add(2 * time.Second)
	st := r[0].Stats()
	out, down := r[0].Outage()
	if !st.Alone || st.Outages != 1 || st.Room != 2 || !down || out.For != 2*time.Second || !errors.Is(out.Err, errBroken) ||
		out.Fallbacks != 11 || out.Errors != 21 || !out.Since.Equal(at(time.Second)) {
		t.Fatalf("stats %+v, outage %+v (under way: %v)", st, out, down)
	}
	newcomer := NewBudget(Link{Store: f}, "db", "new", cfg)
	if ok, _ := newcomer.Lease(ctx); ok {
		t.Fatal("a replica that never reached the store dialled during the outage")
	}
	floored := cfg
	floored.Floor = 1
	newcomer = NewBudget(Link{Store: f}, "db", "new", floored)
	lease0, _ := newcomer.Lease(ctx)
	lease1, _ := newcomer.Lease(ctx)
	if !lease0 || lease1 {
		t.Fatalf("with a Floor of 1 a newcomer leased %v then %v, want one slot", lease0, lease1)
	}
	f.down.Store(false)
	renew(t, r[0])
	st = r[0].Stats()
	if out, down = r[0].Outage(); st.Alone || down || out.For != 2*time.Second {
		t.Fatalf("after the outage: stats %+v, outage %+v", st, out)
	}
	if c := NewBudget(Link{}, "x", "y", BudgetConfig{Slots: 2, Floor: 5}).Config(); c.Floor != 2 {
		t.Fatalf("Floor over Slots kept as %d", c.Floor)
	}
}

// TestBudgetLogsOncePerOutage: an outage is one line when it begins and
// one when it ends, however many calls fail or fall back in between; the
// second says how long it lasted and how many calls fell back. A budget
// without a Logger takes the one UseLogger offers; one with keeps its own.
func TestBudgetLogsOncePerOutage(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	f := &flaky{Store: NewMemStore(clock.Now)}
	var logs bytes.Buffer
	cfg := BudgetConfig{Slots: 4, TTL: 5 * time.Second, Clock: clock.Now}
	b := NewBudget(Link{Store: f}, "db", "r", cfg)
	b.UseLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	b.UseLogger(nil)
	renew(t, b)
	for outage := range 2 {
		f.down.Store(true)
		for range 5 {
			b.Lease(ctx)
			b.Return(ctx)
			b.Renew(ctx)
		}
		clock.Add(time.Duration(outage+2) * time.Second)
		f.down.Store(false)
		for range 3 {
			renew(t, b)
		}
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 2 || strings.Count(out, "level=INFO") != 2 || strings.Count(out, "\n") != 4 {
		t.Fatalf("want two lines per outage:\n%s", out)
	}
	for _, want := range []string{"unreachable", `err="store down"`, "reachable again", "after=2s", "after=3s", "fallbacks=5", "replica=r", "budget={db}"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the lines:\n%s", want, out)
		}
	}
	if st := b.Stats(); st.Outages != 2 || st.Alone {
		t.Fatalf("stats %+v", st)
	}
	// A Logger of the budget's own wins over the one a Keeper offers.
	var own, offered bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&own, nil))
	b = NewBudget(Link{}, "db", "r", cfg)
	b.UseLogger(slog.New(slog.NewTextHandler(&offered, nil)))
	b.Lease(ctx)
	if own.Len() == 0 || offered.Len() != 0 {
		t.Fatalf("own %q, offered %q", own.String(), offered.String())
	}
	// A caller that gives up is not an outage of the store.
	b = NewBudget(Link{Store: f}, "db", "q", cfg)
	done, cancel := context.WithCancel(ctx)
	cancel()
	b.Lease(done)
	if st := b.Stats(); st.Alone || st.Outages != 0 {
		t.Fatalf("a cancelled call counted as an outage: %+v", st)
	}
}

// TestBudgetRebuildKeepsWhatWasSetAside: while the store relearns the
// counts (a replica came back holding slots it had no record of), nothing
// new is granted, but a replica may take back, within its share, what was
// set aside for it: a connection closed for its age is dialled again, and
// a fleet whose connections churn does not drain through the rebuild.
func TestBudgetRebuildKeepsWhatWasSetAside(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemStore(clock.Now)
	cfg := BudgetConfig{Slots: 6, TTL: time.Second, Borrow: true}
	r := fleet(store, 3, cfg)
	renew(t, r...)
	lease(t, r[0], true)
	lease(t, r[0], true)
	lease(t, r[1], true)
	r[2].held = 2 // cut off past two TTLs, its slots dropped, it lived on
	clock.Add(2 * cfg.TTL)
	renew(t, r[0], r[1])
	renew(t, r[2]) // back, unknown, holding 2: a rebuild
	for range 3 {
		if err := r[0].Return(ctx); err != nil {
			t.Fatal(err)
		}
		lease(t, r[0], true) // what was set aside for it, again
	}
	lease(t, r[0], false) // nothing new: it is at its share
	lease(t, r[1], false) // nothing new: 1 held, 1 set aside
	clock.Add(cfg.TTL)
	lease(t, r[1], true) // the rebuild is over
}

// swapStore is a Store that can be taken down (every call fails) and
// brought back as another store: a Redis without persistence restarting.
type swapStore struct {
	mu   sync.Mutex
	s    Store
	down bool
}

var errStoreDown = errors.New("store down")

func (w *swapStore) cur() (Store, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return nil, errStoreDown
	}
	return w.s, nil
}

func (w *swapStore) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	s, err := w.cur()
	if err != nil {
		return 0, err
	}
	return s.Incr(ctx, key, ttl)
}

func (w *swapStore) IncrUnder(ctx context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error) {
	s, err := w.cur()
	if err != nil {
		return 0, false, err
	}
	return s.IncrUnder(ctx, key, prev, weight, limit, ttl)
}

func (w *swapStore) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	s, err := w.cur()
	if err != nil {
		return false, err
	}
	return s.SetIfAbsent(ctx, key, value, ttl)
}

func (w *swapStore) Get(ctx context.Context, key string) (string, bool, error) {
	s, err := w.cur()
	if err != nil {
		return "", false, err
	}
	return s.Get(ctx, key)
}

func (w *swapStore) Del(ctx context.Context, keys ...string) error {
	s, err := w.cur()
	if err != nil {
		return err
	}
	return s.Del(ctx, keys...)
}

func (w *swapStore) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	s, err := w.cur()
	if err != nil {
		return BudgetReply{}, err
	}
	return s.Budget(ctx, op)
}

// TestBudgetStoreBackEmptyKeepsServing: a store that restarts empty while
// the fleet's connections churn (each closed and dialled again) must not
// drain the fleet through the rebuild that follows: each replica brings
// back the Room its last reply gave it (BudgetOp.Room) and the store sets
// that much aside for it again, so every closed connection is dialled
// again within it, and the fleet never holds more than Slots. Without the
// Room brought back, the store has nothing set aside for anyone and
// grants nothing for one TTL, and the fleet drains to zero.
func TestBudgetStoreBackEmptyKeepsServing(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	w := &swapStore{s: NewMemStore(clock.Now)}
	cfg := BudgetConfig{Slots: 6, TTL: time.Second, Borrow: true}
	r := fleet(w, 3, cfg)
	renew(t, r...)
	for _, b := range r {
		lease(t, b, true)
		lease(t, b, true)
	}
	renew(t, r...) // each learns its Room: its share, 2
	total := func() int {
		n := 0
		for _, b := range r {
			n += b.Held()
		}
		return n
	}
	churn := func() {
		t.Helper()
		for _, b := range r {
			if err := b.Return(ctx); err != nil && !errors.Is(err, errStoreDown) {
				t.Fatal(err)
			}
			if ok, err := b.Lease(ctx); !ok {
				t.Fatalf("%s: the slot it closed was not granted again (err %v, stats %+v)", b.replica, err, b.Stats())
			}
			if n := total(); n > cfg.Slots {
				t.Fatalf("the fleet holds %d, over %d", n, cfg.Slots)
			}
		}
	}
	// Down for a while: each keeps its Room alone.
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	for range 3 {
		churn()
		clock.Add(cfg.TTL / 4)
	}
	// Back, empty: a rebuild of one TTL, through which the churn goes on.
	w.mu.Lock()
	w.s, w.down = NewMemStore(clock.Now), false
	w.mu.Unlock()
	for range 6 {
		churn()
		clock.Add(cfg.TTL / 4)
	}
	if n := total(); n != cfg.Slots {
		t.Fatalf("after the rebuild the fleet holds %d, want %d", n, cfg.Slots)
	}
	// A newcomer during all this got nothing new beyond the budget.
	late := NewBudget(Link{Store: w, Timeout: time.Minute}, "db", "late", cfg)
	if ok, _ := late.Lease(ctx); ok && total()+late.Held() > cfg.Slots {
		t.Fatalf("a newcomer was granted past the budget: %d + %d", total(), late.Held())
	}
}
