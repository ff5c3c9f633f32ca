package redisward

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/ward/shared"
)

// client returns a plain go-redis client on addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBudgetAndCounterLikeMemStore runs one sequence of budget steps and
// two-window counts against Redis and against shared.MemStore, and wants
// the same answers: the script and the Go code are one algorithm.
func TestBudgetAndCounterLikeMemStore(t *testing.T) {
	p, k := newPool(t, 1, nil)
	stores := []shared.Store{NewStore(p, k), shared.NewMemStore(time.Now)}
	ctx := context.Background()
	var got [2][]string
	for i, s := range stores {
		rec := func(v ...any) { got[i] = append(got[i], fmt.Sprint(v...)) }
		op := func(step shared.BudgetStep, who string, held int, borrow bool) {
			r, err := s.Budget(ctx, shared.BudgetOp{Step: step, Key: "{b}", Replica: who, Budget: 5, TTL: time.Minute, Held: held, Borrow: borrow})
			rec(step, who, r, err)
		}
		op(shared.StepRenew, "a", 0, true)
		op(shared.StepRenew, "b", 0, true)
		for h := range 5 {
			op(shared.StepLease, "a", h, true)
		}
		op(shared.StepLease, "b", 0, true)
		op(shared.StepRenew, "a", 4, true)
		op(shared.StepReturn, "a", 3, true)
		op(shared.StepLease, "b", 0, true)
		op(shared.StepLease, "a", 3, true)
		op(shared.StepRenew, "c", 2, false) // a newcomer holding 2 (a rebuild)
		op(shared.StepLease, "c", 2, false)
		op(shared.StepLeave, "a", 0, true)
		op(shared.StepLease, "c", 2, false)
		op(shared.StepReturn, "zz", 0, false) // unknown: joins holding 0
		// Over the budget: a replica the store forgot comes back holding
		// 4 (rebuild); everyone above its share owes, and the Rooms the
		// store counts as taken keep the waiters' leases within it.
		op(shared.StepRenew, "c", 2, true)
		op(shared.StepRenew, "d", 4, true)
		op(shared.StepRenew, "c", 2, true)
		op(shared.StepLease, "zz", 0, true)
		op(shared.StepLeave, "d", 0, true)
		op(shared.StepReturn, "c", 1, true)
		op(shared.StepLease, "zz", 0, true)
		op(shared.StepLease, "zz", 1, true)
		op(shared.StepRenew, "zz", 2, true)
		// After a failed step the replica's own count is a floor.
		r, err := s.Budget(ctx, shared.BudgetOp{Step: shared.StepReturn, Key: "{b}", Replica: "zz", Budget: 5, TTL: time.Minute, Held: 3, Borrow: true, Unsure: true})
		rec("unsure", r, err)
		// A replica the store has no record of brings back the Room of
		// its last reply: that much is set aside for it again, within its
		// share and what the others' set-asides leave free, and it may
		// lease within it through the rebuild its arrival starts.
		// (A budget of its own, as after a store that lost its data:
		// granted, granted, then refused at the Room.)
		for _, held := range []int{1, 2, 3} {
			r, err = s.Budget(ctx, shared.BudgetOp{Step: shared.StepLease, Key: "{e}", Replica: "e", Budget: 5, TTL: time.Minute, Held: held, Borrow: true, Unsure: true, Room: 3})
			rec("brought", r, err)
			if want := held < 3; r.Granted != want || err != nil {
				t.Errorf("store %d: lease holding %d with Room 3 brought back: granted %v (%v), want %v", i, held, r.Granted, err, want)
			}
		}
		for _, at := range []struct {
			key, prev string
			w         float64
		}{{"{c}:1", "{c}:0", 0.5}, {"{c}:1", "{c}:0", 0.5}, {"{c}:1", "{c}:0", 0.5}, {"{c}:2", "{c}:1", 0.25}} {
			n, ok, err := s.IncrUnder(ctx, at.key, at.prev, at.w, 2, time.Minute)
			rec(n, ok, err)
		}
		_, _, err = s.IncrUnder(ctx, "{c}:x", "{c}:y", 1, 2, 0)
		rec(err)
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("step %d: redis %q, memory %q", i, got[0][i], got[1][i])
		}
	}
	if len(got[0]) != 35 {
		t.Fatalf("%d steps recorded", len(got[0]))
	}
}

// TestBudgetLapseLikeMemStore runs the steps of memberships that lapse and
// are dropped on Redis and on a MemStore whose clock is the Redis server's
// (TIME), step by step, and wants the same answers: a lapsed member's slots
// stay counted for a TTL and it rejoins with them; past that they are
// dropped, and a replica coming back holding slots starts a rebuild. The
// server's clock cannot be faked, so the test waits for it, well clear of
// every boundary (TTL 400ms, waits of 250ms and more).
func TestBudgetLapseLikeMemStore(t *testing.T) {
	p, k := newPool(t, 1, nil)
	rc := client(t, testenv.RedisAddr(t))
	ctx := context.Background()
	serverNow := func() time.Time {
		now, err := rc.Time(ctx).Result()
		if err != nil {
			t.Error(err)
		}
		return now.Truncate(time.Millisecond) // the script's resolution
	}
	stores := []shared.Store{NewStore(p, k), shared.NewMemStore(serverNow)}
	const ttl = 400 * time.Millisecond
	step := 0
	op := func(st shared.BudgetStep, who string, held int) {
		t.Helper()
		var got [2]string
		for i, s := range stores {
			r, err := s.Budget(ctx, shared.BudgetOp{Step: st, Key: "{lapse}", Replica: who, Budget: 4, TTL: ttl, Held: held, Borrow: true})
			got[i] = fmt.Sprint(r, err)
		}
		if got[0] != got[1] {
			t.Errorf("step %d (%v by %s): redis %s, memory %s", step, st, who, got[0], got[1])
		}
		step++
	}
	op(shared.StepRenew, "a", 0)
	op(shared.StepRenew, "b", 0)
	for h := range 3 {
		op(shared.StepLease, "a", h) // a borrows; b asks for nothing
	}
	time.Sleep(250 * time.Millisecond)
	op(shared.StepRenew, "b", 0)
	time.Sleep(250 * time.Millisecond) // a lapsed: no share, its 3 slots still counted
	op(shared.StepLease, "b", 0)
	op(shared.StepLease, "b", 1) // refused: a's slots are not free yet
	op(shared.StepRenew, "a", 3) // a is back within the grace, with its slots
	op(shared.StepRenew, "b", 1)
	time.Sleep(1200 * time.Millisecond) // both silent past two TTLs: dropped
	op(shared.StepRenew, "c", 0)
	op(shared.StepLease, "a", 3) // unknown, holding 3: a rebuild, over the budget
	op(shared.StepLease, "c", 0)
	op(shared.StepRenew, "a", 3)
}

// TestBudgetOnRedisConcurrent: twenty replicas, each with its own pool of
// connections, leasing at once from eight goroutines each, are granted
// exactly the budget of 40 between them, and the server's count agrees.
func TestBudgetOnRedisConcurrent(t *testing.T) {
	const nrep, g, each, slots = 20, 8, 5, 40
	_, k := newPool(t, 1, nil)
	cfg := shared.BudgetConfig{Slots: slots, TTL: time.Minute, Borrow: true}
	var bs []*shared.Budget
	for i := range nrep {
		p, _ := newPool(t, 4, nil)
		bs = append(bs, shared.NewBudget(shared.Link{Store: NewStore(p, k), Timeout: 5 * time.Second}, "db", fmt.Sprint("r", i), cfg))
	}
	var granted, errs atomic.Int64
	var wg sync.WaitGroup
	for _, b := range bs {
		for range g {
			wg.Go(func() {
				for range each {
					ok, err := b.Lease(context.Background())
					if err != nil {
						errs.Add(1)
					}
					if ok {
						granted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if err := bs[0].Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := bs[0].Stats()
	if errs.Load() != 0 || granted.Load() != slots || st.Total != slots || st.Live != nrep {
		t.Fatalf("granted %d (errors %d), server total %d of %d live; want %d", granted.Load(), errs.Load(), st.Total, st.Live, slots)
	}
}

// TestBudgetOnRedisDeadReplica: a replica that stops renewing loses its
// slots one TTL after its lease runs out on the server's clock (it lapses,
// then its slots are dropped), and another replica gets them then, with
// nobody's help.
func TestBudgetOnRedisDeadReplica(t *testing.T) {
	p, k := newPool(t, 2, nil)
	cfg := shared.BudgetConfig{Slots: 4, TTL: 200 * time.Millisecond, Borrow: true}
	link := shared.Link{Store: NewStore(p, k), Timeout: 5 * time.Second}
	dead := shared.NewBudget(link, "db", "dead", cfg)
	live := shared.NewBudget(link, "db", "live", cfg)
	ctx := context.Background()
	for range 4 {
		if ok, err := dead.Lease(ctx); !ok || err != nil {
			t.Fatalf("lease: %v %v", ok, err)
		}
	}
	start := time.Now()
	if ok, _ := live.Lease(ctx); ok {
		t.Fatal("leased past the budget while the other replica lives")
	}
	clocktest.Eventually(t, "the condition", func() bool { ok, _ := live.Lease(ctx); return ok })
	t.Logf("slots of a replica gone silent came back %v after it was last heard (TTL %v)", time.Since(start).Round(time.Millisecond), cfg.TTL)
	if st := live.Stats(); st.Live != 1 || st.Share != 4 {
		t.Fatalf("after the lease ran out: %+v", st)
	}
}

// TestBudgetOnRedisRestart stops the store's server for 3 s and starts it
// again empty. Meanwhile every replica keeps what it holds and grows no
// further than its last known share; no call waits past the link's timeout;
// afterwards the server's counts are rebuilt from the replicas' own, and
// the fleet stays within the budget.
func TestBudgetOnRedisRestart(t *testing.T) {
	srv := ownRedis(t)
	const nrep, slots = 5, 10
	cfg := shared.BudgetConfig{Slots: slots, TTL: 2 * time.Second} // borrowing off: the room is the share
	var bs []*shared.Budget
	for i := range nrep {
		c := client(t, srv.Addr)
		bs = append(bs, shared.NewBudget(shared.Link{Store: NewClientStore(c, ""), Timeout: 50 * time.Millisecond}, "db", fmt.Sprint("r", i), cfg))
	}
	ctx := context.Background()
	for _, b := range bs {
		if err := b.Renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bs {
		if ok, err := b.Lease(ctx); !ok || err != nil {
			t.Fatalf("lease before the outage: %v %v", ok, err)
		}
	}
	srv.Kill() // as a crash would
	down := time.Now()
	var slowest time.Duration
	for time.Since(down) < 3*time.Second {
		for _, b := range bs {
			caller, cancel := context.WithTimeout(ctx, time.Second)
			t0 := time.Now()
			_, err := b.Lease(caller)
			slowest = max(slowest, time.Since(t0))
			if err == nil {
				t.Fatal("a lease answered by a stopped server")
			}
			if caller.Err() != nil {
				t.Fatal("a caller was held past its ctx by a dead store")
			}
			cancel()
		}
		sum := 0
		for _, b := range bs {
			sum += b.Held()
		}
		if sum > slots {
			t.Fatalf("the fleet holds %d during the outage, over %d", sum, slots)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range bs {
		if b.Held() != slots/nrep {
			t.Fatalf("a replica holds %d after the outage, want its share %d", b.Held(), slots/nrep)
		}
		if st := b.Stats(); st.Fallbacks == 0 || st.StoreErrors == 0 {
			t.Fatalf("the outage was not counted: %+v", st)
		}
	}
	t.Logf("during a 3 s outage the slowest Lease took %v (store timeout 50ms)", slowest.Round(time.Millisecond))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The server came back empty; the replicas' next steps rebuild it.
	for _, b := range bs {
		clocktest.Eventually(t, "the condition", func() bool { return b.Renew(ctx) == nil })
	}
	if err := bs[0].Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if st := bs[0].Stats(); st.Total != slots || st.Live != nrep {
		t.Fatalf("after the restart the server counts %d held by %d members, want %d by %d", st.Total, st.Live, slots, nrep)
	}
	for _, b := range bs {
		if ok, _ := b.Lease(ctx); ok {
			t.Fatal("leased past the budget after the rebuild")
		}
	}
}

// TestSharedGuardsOnCluster runs the budget, the breaker and the two-window
// counter on a Redis Cluster of three masters, through go-redis's
// ClusterClient: every call's keys share a hash tag, so each script runs
// on one node, and the answers are the ones a single server gives.
func TestSharedGuardsOnCluster(t *testing.T) {
	addrs := ownCluster(t)
	ctx := context.Background()
	var cs []*redis.ClusterClient
	for range 4 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	// The keys of one guard share a slot; different guards spread over
	// the masters.
	nodes := map[string]bool{}
	for i := range 12 {
		name := fmt.Sprint("db", i)
		var slots []int64
		for _, suffix := range []string{":members", ":held", ":want"} {
			s, err := cs[0].ClusterKeySlot(ctx, "svc:{"+name+"}"+suffix).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, s)
		}
		if slots[0] != slots[1] || slots[1] != slots[2] {
			t.Fatalf("budget %s's keys in slots %v", name, slots)
		}
		b := shared.NewBudget(shared.Link{Store: NewClientStore(cs[0], "svc:"), Timeout: 5 * time.Second}, name, "x", shared.DefaultBudget)
		if err := b.Renew(ctx); err != nil {
			t.Fatalf("budget %s on the cluster: %v", name, err)
		}
		m, err := cs[0].MasterForKey(ctx, "svc:{"+name+"}:held")
		if err != nil {
			t.Fatal(err)
		}
		nodes[m.String()] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("twelve budgets all on one master: %v", nodes)
	}
	// The budget: four replicas, each its own cluster client, at once.
	cfg := shared.BudgetConfig{Slots: 9, TTL: time.Minute, Borrow: true}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i, c := range cs {
		b := shared.NewBudget(shared.Link{Store: NewClientStore(c, "svc:"), Timeout: 5 * time.Second}, "orders", fmt.Sprint("r", i), cfg)
		for range 4 {
			wg.Go(func() {
				for range 5 {
					if ok, err := b.Lease(ctx); err != nil {
						t.Error(err)
					} else if ok {
						granted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if granted.Load() != 9 {
		t.Fatalf("granted %d on the cluster, want the budget of 9", granted.Load())
	}
	// The breaker: opened by the fleet's failures, one probe after the
	// cooldown, closed by its success (one DEL of three keys in one slot).
	pol := shared.BreakerPolicy{Failures: 4, Window: time.Minute, Cooldown: 0, Lease: time.Minute, Hold: time.Hour}
	var brs []*shared.Breaker
	for _, c := range cs {
		brs = append(brs, shared.NewBreaker(shared.Link{Store: NewClientStore(c, "svc:"), Timeout: 5 * time.Second}, "payments", pol))
	}
	now := time.Now()
	for _, b := range brs {
		if err := b.Fail(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	var probes []shared.Call
	for _, b := range brs {
		if call, ok, err := b.Allow(ctx, now); err != nil {
			t.Fatal(err)
		} else if ok {
			probes = append(probes, call)
		}
	}
	if len(probes) != 1 || !probes[0].Probe {
		t.Fatalf("%d calls through a half-open breaker, want one probe", len(probes))
	}
	if err := probes[0].Pass(ctx); err != nil {
		t.Fatalf("closing the breaker on the cluster: %v", err)
	}
	if st, err := brs[3].State(ctx, now); st != shared.Closed || err != nil {
		t.Fatalf("after the probe passed: %v %v", st, err)
	}
	// The counter: one limit across the replicas.
	var admitted int
	for i := range 10 {
		c := shared.NewCounter(shared.Link{Store: NewClientStore(cs[i%4], "svc:"), Timeout: 5 * time.Second}, "api", 6, time.Hour, 0)
		if ok, err := c.Take(ctx, now); err != nil {
			t.Fatal(err)
		} else if ok {
			admitted++
		}
	}
	if admitted != 6 {
		t.Fatalf("the counter admitted %d on the cluster, want 6", admitted)
	}
}

// TestSharedBreakerFleetDials: twenty replicas in front of a dead backend,
// each trying a dial every 5 ms for 600 ms, with one breaker shared through
// Redis against twenty breakers of their own (each over its own in-memory
// store). It reports the dials each way; the shared breaker must let
// through fewer than a fifth of what twenty local ones do.
func TestSharedBreakerFleetDials(t *testing.T) {
	p, k := newPool(t, 8, nil)
	pol := shared.BreakerPolicy{Failures: 5, Window: time.Minute, Cooldown: 100 * time.Millisecond, Lease: 50 * time.Millisecond, Hold: time.Hour}
	run := func(mk func(i int) *shared.Breaker) int64 {
		var dials atomic.Int64
		var wg sync.WaitGroup
		stop := time.Now().Add(600 * time.Millisecond)
		for i := range 20 {
			b := mk(i)
			wg.Go(func() {
				ctx := context.Background()
				for time.Now().Before(stop) {
					call, ok, err := b.Allow(ctx, time.Now())
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						dials.Add(1) // the backend is dead: every dial fails
						if err := call.Fail(ctx, time.Now()); err != nil {
							t.Error(err)
							return
						}
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		return dials.Load()
	}
	fleet := run(func(int) *shared.Breaker {
		return shared.NewBreaker(shared.Link{Store: NewStore(p, k), Timeout: 5 * time.Second}, "dead", pol)
	})
	alone := run(func(int) *shared.Breaker {
		return shared.NewBreaker(shared.Link{Store: shared.NewMemStore(time.Now)}, "dead", pol)
	})
	t.Logf("dials to a dead backend in 0.6 s by 20 replicas: %d with one shared breaker (%.0f/s), %d with 20 local ones (%.0f/s)",
		fleet, float64(fleet)/0.6, alone, float64(alone)/0.6)
	if fleet*5 >= alone {
		t.Fatalf("shared %d dials against local %d: the shared breaker saved less than it should", fleet, alone)
	}
}
