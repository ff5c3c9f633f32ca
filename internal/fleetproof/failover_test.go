package fleetproof

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	redisward "github.com/wardpool/wardpool/drivers/redis"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward/shared"
)

// The fleet of the failover proofs, the setup: ten Keepers of ten,
// sixteen callers each holding a resource 5 ms, one budget of twenty,
// borrowing on. The resource is a counter, not a server: live resources
// are counted from Dial to Close, the ground truth the budget must hold.
const (
	foKeepers     = 10
	foSize        = 10
	foCallers     = 16
	foBudget      = 20
	foHold        = 5 * time.Millisecond
	foAcquire     = time.Second            // each caller's acquire ctx
	foStoreTrip   = 250 * time.Millisecond // the link's timeout
	foNodeTimeout = 2 * time.Second        // cluster-node-timeout
	foWarm        = 1500 * time.Millisecond
	foFull        = foBudget * 9 / 10 // "full": at least 90% of the budget
)

// conn is the fake resource: a pointer, unique per Dial.
type conn struct{ id int64 }

// processOnly is a go-redis client seen only as a Processor: the Store
// cannot ask it to reload its map of slots.
type processOnly struct{ redisward.Processor }

// watched is a store that notes, once the event began, when a budget step
// first failed and when a step sent after that first failed first got an
// answer: when the fleet could reach its budget again.
type watched struct {
	shared.Store
	event            *atomic.Pointer[time.Time]
	failedAt, backAt atomic.Pointer[time.Time]
}

func (w *watched) Budget(ctx context.Context, op shared.BudgetOp) (shared.BudgetReply, error) {
	sent := time.Now()
	rep, err := w.Store.Budget(ctx, op)
	ev := w.event.Load()
	if ev == nil {
		return rep, err
	}
	now := time.Now()
	f := w.failedAt.Load()
	switch {
	case err != nil && f == nil:
		w.failedAt.CompareAndSwap(nil, &now)
	case err == nil && f != nil && sent.After(*f):
		w.backAt.CompareAndSwap(nil, &now)
	}
	return rep, err
}

// failoverRun is one run of the table: a fleet under load, an event (a
// master killed, a server down), and what the fleet did.
type failoverRun struct {
	name  string
	ttl   time.Duration // the budget's TTL
	life  time.Duration // the resources' Life; 0: no churn
	after time.Duration // how long the load runs past the event
	// noReload hides the cluster client's ReloadState from the Store:
	// go-redis's ClusterClient alone, the peer of the Store's reload.
	noReload bool
	// freeze stops the master (SIGSTOP) instead of killing it, and the
	// clients are set as redisward.Store's doc asks for a hung master.
	freeze bool

	at       time.Time     // the event's moment
	promoted time.Duration // from the kill to the slot's new master (0: no cluster)
	// results
	maxLive    int64
	over       time.Duration // time with more live than the budget
	overAt     time.Time     // the first moment over (zero: never)
	lowest     int64         // lowest live after the event
	under      time.Duration // time after the event with fewer live than foFull
	backToFull time.Duration // from the event to full again after the lowest point (0: no dip, -1: never back)
	storeBack  time.Duration // from the event to the first answer to a step sent after the first failed (-1: never)
	acqErrs    uint64
	fallbacks  uint64
	storeErrs  uint64
	reloads    uint64
	served     uint64
}

// fleet runs r: Keepers over the stores newStore gives (one per Keeper,
// with a function returning its reloads count), load for foWarm, then
// event (a master killed; a server stopped, and started again before it
// returns), which calls mark at the moment it struck, with load for
// r.after from that moment. It fills r's results.
func (r *failoverRun) fleet(t *testing.T, newStore func() (shared.Store, func() uint64), event func(mark func())) {
	t.Helper()
	var live, ids atomic.Int64
	cfg := shared.BudgetConfig{Slots: foBudget, TTL: r.ttl, Borrow: true}
	var eventAt atomic.Pointer[time.Time]
	keepers := make([]*wardpool.Keeper[*conn], foKeepers)
	reloads := make([]func() uint64, foKeepers)
	stores := make([]*watched, foKeepers)
	for i := range keepers {
		st, rl := newStore()
		reloads[i] = rl
		stores[i] = &watched{Store: st, event: &eventAt}
		b := shared.NewBudget(shared.Link{Store: stores[i], Timeout: foStoreTrip}, "fo", fmt.Sprint("keeper-", i), cfg)
		k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
			Limits: pool.Limits{Size: foSize, Idle: foSize, Life: r.life},
			Dial: func(context.Context) (*conn, error) {
				live.Add(1)
				return &conn{id: ids.Add(1)}, nil
			},
			Close:  func(*conn) error { live.Add(-1); return nil },
			Shared: wardpool.Shared{Budget: b, RetryEvery: 10 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		keepers[i] = k
	}
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		// At once: with the store away each Close waits for its Leave.
		var wg sync.WaitGroup
		for _, k := range keepers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := k.Close(ctx); err != nil {
					t.Errorf("%s: Close: %v", r.name, err)
				}
			})
		}
		wg.Wait()
	}
	defer closeAll()

	// The sampler, every 10 ms. Before the event it only watches the
	// maximum; from the event on, the rest.
	stopSample := make(chan struct{})
	var sampler sync.WaitGroup
	var dippedAtEnd atomic.Bool
	r.lowest = foBudget
	sampler.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		prev := time.Now()
		dipped := false
		defer func() { dippedAtEnd.Store(dipped) }()
		for {
			select {
			case <-stopSample:
				return
			case <-tick.C:
			}
			now := time.Now()
			n := live.Load()
			r.maxLive = max(r.maxLive, n)
			step := now.Sub(prev)
			prev = now
			if n > foBudget {
				r.over += step
				if r.overAt.IsZero() {
					r.overAt = now
				}
			}
			ev := eventAt.Load()
			if ev == nil {
				continue
			}
			since := now.Sub(*ev)
			// Back to full: the first return to foFull after the lowest
			// point (churn alone dips a little now and then; "time under"
			// counts every dip).
			if n < r.lowest {
				r.lowest, r.backToFull = n, 0
				dipped = n < foFull
			}
			if n < foFull {
				r.under += step
			} else if dipped {
				dipped = false
				r.backToFull = since
			}
		}
	})

	stopLoad := make(chan struct{})
	var load sync.WaitGroup
	var acqErrs, served atomic.Uint64
	for _, k := range keepers {
		for range foCallers {
			load.Go(func() {
				for {
					select {
					case <-stopLoad:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), foAcquire)
					l, err := k.Acquire(ctx)
					cancel()
					if err != nil {
						acqErrs.Add(1)
						continue
					}
					time.Sleep(foHold)
					l.Release()
					served.Add(1)
				}
			})
		}
	}

	time.Sleep(foWarm)
	before := acqErrs.Load()
	var at time.Time
	event(func() {
		at = time.Now()
		eventAt.Store(&at)
	})
	if at.IsZero() {
		t.Fatal("the event never marked its moment")
	}
	r.at = at
	time.Sleep(r.after - time.Since(at))
	// The sampler stops first: a fleet whose callers stop is no longer
	// under test (with churn, its idle resources retire as they age).
	close(stopSample)
	sampler.Wait()
	close(stopLoad)
	load.Wait()
	if dippedAtEnd.Load() {
		r.backToFull = -1
	}
	r.acqErrs = acqErrs.Load() - before
	// The fleet reached its budget again when the first of its stores did.
	r.storeBack = -1
	for _, w := range stores {
		if b := w.backAt.Load(); b != nil && (r.storeBack < 0 || b.Sub(at) < r.storeBack) {
			r.storeBack = b.Sub(at)
		}
	}
	r.served = served.Load()
	for i, k := range keepers {
		s := k.SharedStats().Budget
		r.fallbacks += s.Fallbacks
		r.storeErrs += s.StoreErrors
		r.reloads += reloads[i]()
	}
	closeAll()
	if n := live.Load(); n != 0 {
		t.Errorf("%s: %d resources live after every Keeper closed", r.name, n)
	}
}

// dur formats a span for the table: "-" for none (0), "never" for -1.
func dur(d time.Duration, none string) string {
	switch {
	case d < 0:
		return none
	case d == 0:
		return "-"
	}
	return "+" + d.Round(10*time.Millisecond).String()
}

// since formats when t came, from the event: "no" when it never did, a
// sign either way.
func since(t, event time.Time) string {
	if t.IsZero() {
		return "no"
	}
	d := t.Sub(event).Round(10 * time.Millisecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// table logs the runs as one table.
func table(t *testing.T, runs []*failoverRun) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\n| run | max live | time over %d | first over (from the event) | lowest live after | time under %d | back to %d+ | new master | store back | acquire errors | fallbacks | store errors | reloads | loans |\n", foBudget, foFull, foFull)
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range runs {
		if r.maxLive == 0 {
			continue // not run
		}
		fmt.Fprintf(&b, "| %s | %d | %v | %s | %d | %v | %s | %s | %s | %d | %d | %d | %d | %d |\n",
			r.name, r.maxLive, r.over.Round(10*time.Millisecond), since(r.overAt, r.at), r.lowest, r.under.Round(10*time.Millisecond),
			dur(r.backToFull, "never"), dur(r.promoted, "never"), dur(r.storeBack, "never"), r.acqErrs, r.fallbacks, r.storeErrs, r.reloads, r.served)
	}
	t.Log(b.String())
}

// TestFleetBudgetThroughFailover is the proof of issue 28's table: the
// fleet under load while the Redis Cluster master holding the budget's slot
// is killed (node timeout 2 s), with and without churn, with a TTL shorter
// and longer than the failover; frozen instead of killed, with churn; the
// peer, a Store that cannot reload the cluster's map; a Sentinel-managed
// master killed, reached through go-redis's failover client; and a single
// Redis down for 3 s with churn. Every store is a go-redis client with its
// defaults (a ClusterClient reloads its map of slots only once a minute),
// but for the frozen run's two options: following the failover is the
// Store's job. The table is logged, and holds asserts what issue 28
// promises of each run: the store followed in seconds, never over the
// budget (but for the documented exception), never empty, back to full.
func TestFleetBudgetThroughFailover(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("the failover proof runs a minute and a half of Redis failovers: it runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	servers.RedisBinary(t)
	servers.RedisCLI(t)
	runs := []*failoverRun{
		{name: "cluster, master killed, TTL 5s", ttl: 5 * time.Second, after: 8 * time.Second},
		{name: "cluster, master killed, TTL 5s, churn (Life 1s)", ttl: 5 * time.Second, life: time.Second, after: 8 * time.Second},
		{name: "cluster, master killed, TTL 1s", ttl: time.Second, after: 6 * time.Second},
		{name: "cluster, master killed, TTL 1s, churn (Life 1s)", ttl: time.Second, life: time.Second, after: 6 * time.Second},
		{name: "cluster, master frozen, TTL 5s, churn (Life 1s), client with ContextTimeoutEnabled, ReadTimeout 250ms", ttl: 5 * time.Second, life: time.Second, after: 8 * time.Second, freeze: true},
		{name: "peer: master killed, TTL 5s, churn (Life 1s), Store without reload (ClusterClient alone)", ttl: 5 * time.Second, life: time.Second, after: 8 * time.Second, noReload: true},
	}
	const slotKey = "fleet:{fo}:members"
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			c := servers.StartCluster(t, 3, 1, foNodeTimeout)
			var watch sync.WaitGroup
			defer watch.Wait()
			r.fleet(t, func() (shared.Store, func() uint64) {
				var edit func(*redis.ClusterOptions)
				if r.freeze {
					edit = func(o *redis.ClusterOptions) {
						o.ContextTimeoutEnabled = true
						o.ReadTimeout = foStoreTrip
					}
				}
				cc := c.Client(t, edit)
				if r.noReload {
					s := redisward.NewClientStore(processOnly{cc}, "fleet:")
					return s, s.Reloads
				}
				s := redisward.NewClientStore(cc, "fleet:")
				return s, s.Reloads
			}, func(mark func()) {
				old, err := c.MasterOf(slotKey)
				if err != nil {
					t.Fatal(err)
				}
				if r.freeze {
					old.Freeze() // thawed when the cluster is stopped
				} else {
					old.Kill()
				}
				mark()
				killed := time.Now()
				r.promoted = -1
				watch.Go(func() {
					if _, err := c.WaitNewMaster(slotKey, old, r.after); err == nil {
						r.promoted = time.Since(killed)
					}
				})
			})
		})
	}
	// Sentinel: a master, its replica and one Sentinel (quorum 1, the
	// master down after 1 s without an answer); every replica of the fleet
	// reaches the budget through go-redis's failover client, with its
	// defaults. The master is killed.
	sentinel := &failoverRun{name: "Sentinel, master killed, TTL 5s, churn (Life 1s), failover client", ttl: 5 * time.Second, life: time.Second, after: 8 * time.Second}
	runs = append(runs, sentinel)
	t.Run(sentinel.name, func(t *testing.T) {
		const name = "fo"
		m := servers.StartRedis(t)
		servers.StartReplica(t, m)
		sen := servers.StartSentinel(t, name, m)
		servers.WaitSentinelReplicas(t, sen, name, 1)
		var watch sync.WaitGroup
		defer watch.Wait()
		sentinel.fleet(t, func() (shared.Store, func() uint64) {
			fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: []string{sen.Addr}})
			t.Cleanup(func() { _ = fc.Close() })
			s := redisward.NewClientStore(fc, "fleet:")
			return s, s.Reloads
		}, func(mark func()) {
			m.Kill()
			mark()
			killed := time.Now()
			sentinel.promoted = -1
			watch.Go(func() {
				for time.Since(killed) < sentinel.after {
					if a, err := servers.MasterAddr(sen, name); err == nil && a != m.Addr {
						sentinel.promoted = time.Since(killed)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		})
	})

	// The Redis comes back empty: the store rebuilds its counts for a TTL
	// (nothing new granted), so the run lasts the outage, the TTL and 2 s.
	single := &failoverRun{name: "one Redis, down 3s, churn (Life 1s), TTL 5s", ttl: 5 * time.Second, life: time.Second, after: 10 * time.Second}
	runs = append(runs, single)
	t.Run(single.name, func(t *testing.T) {
		srv := servers.StartRedis(t)
		single.fleet(t, func() (shared.Store, func() uint64) {
			rc := srv.Client(t)
			s := redisward.NewClientStore(rc, "fleet:")
			return s, s.Reloads
		}, func(mark func()) {
			srv.Kill()
			mark()
			time.Sleep(3 * time.Second)
			if err := srv.Start(); err != nil {
				t.Error(err)
			}
		})
	})
	table(t, runs)

	for _, r := range runs {
		if r.maxLive == 0 {
			continue // not run
		}
		holds(t, r, r == single)
	}
}

// holds asserts what issue 28 promises of run r; storeLost says the store
// came back without its data (a restart), so that nobody's record
// survived.
func holds(t *testing.T, r *failoverRun, storeLost bool) {
	t.Helper()
	// The store follows the failover within the node timeout (Sentinel's
	// down-after, 1 s, for the Sentinel run) and a few seconds; the
	// peer, which cannot reload, is there to show it does not.
	if !r.noReload && !storeLost && (r.storeBack < 0 || r.storeBack > foNodeTimeout+4*time.Second) {
		t.Errorf("%s: the store answered again %s after the kill, want within the node timeout %v + 4s", r.name, dur(r.storeBack, "never"), foNodeTimeout)
	}
	// Never over: the budget's invariant (DESIGN.md, "The fleet's
	// budget") holds through every outage. Its one exception is a member
	// the store has no record of while it holds slots: the store lost its
	// data, or the failover outlasted two TTLs. Then the fleet may be over
	// once the store answers again, until those above their share give
	// back (one renewal and the longest loan, after a rebuild of up to a
	// TTL); it is allowed a TTL and a second here.
	exception := storeLost || (r.promoted > 2*r.ttl && !r.noReload) || (r.promoted < 0 && !r.noReload)
	switch {
	case r.maxLive <= foBudget:
	case !exception:
		t.Errorf("%s: %d live, over the budget of %d for %v from %s after the event", r.name, r.maxLive, foBudget, r.over, since(r.overAt, r.at))
	case r.overAt.Sub(r.at) < r.storeBack-10*time.Millisecond || r.over > r.ttl+time.Second:
		t.Errorf("%s: %d live, over the budget of %d for %v from %s after the event, the store back at %s: want over only after the store answered, for at most the TTL %v and a second",
			r.name, r.maxLive, foBudget, r.over, since(r.overAt, r.at), dur(r.storeBack, "never"), r.ttl)
	}
	// Never empty: each member keeps its safe share while the store is
	// away.
	if r.lowest < 1 {
		t.Errorf("%s: the fleet fell to %d live after the event", r.name, r.lowest)
	}
	// Back to full: by the end of the run, the fleet is back at 90% of its
	// budget: within the node timeout and 4 s or more of a failover, and
	// within the outage, the rebuild's TTL and 2 s of a store that came
	// back empty.
	if r.backToFull < 0 {
		t.Errorf("%s: the fleet fell to %d and was not back to %d within %v of the event", r.name, r.lowest, foFull, r.after)
	}
}
