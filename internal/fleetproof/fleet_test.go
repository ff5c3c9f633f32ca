package fleetproof

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	redisward "github.com/wardpool/wardpool/drivers/redis"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward/shared"
)

func TestMain(m *testing.M) {
	// go-redis logs every refused dial; an outage is what these tests
	// stage, and their tables say what happened.
	redis.SetLogger(quiet{})
	servers.VerifyTestMain(m)
}

// quiet is a go-redis logger that prints nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// replica is one process of the fleet: a Keeper of PostgreSQL connections
// leasing from the fleet's budget through its own Redis client.
type replica struct {
	k      *wardpool.Keeper[*pgx.Conn]
	budget *shared.Budget
	rc     *redis.Client
	served atomic.Int64
}

const (
	replicas = 20
	size     = 20
	slots    = 40
	callers  = 200
	ttl      = 3 * time.Second
	timeout  = 250 * time.Millisecond // the store timeout
)

// TestFleetBudgetOnPostgres is the proof. Phases, each under load from 200
// goroutines (ten per replica, each acquiring with a 2 s ctx, running a
// query, holding the connection 2 ms): a dead replica's 20 slots are held
// at the start and come back within two TTLs (the lease, then its
// grace); a steady second; Redis killed for 3 s; Redis started again,
// empty. (Between the first two, a second for the borrowers of the start
// to give back.) Throughout, the backends of the fleet in
// pg_stat_activity, sampled every 10 ms, never exceed 40.
func TestFleetBudgetOnPostgres(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	testenv.RedisAddr(t)
	srv := servers.StartRedis(t)
	ctx := context.Background()
	app := "wardpool-fleet-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfgPG, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfgPG.RuntimeParams["application_name"] = app

	// Closing a connection ends its backend a moment later, on the
	// server's time: Close waits until the backend is gone, so that the
	// slot goes back to the fleet only once the server no longer counts it
	// (else the sampler could catch an old backend beside its successor).
	gone, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close(ctx)
	var goneMu sync.Mutex
	waitGone := func(pid uint32) {
		goneMu.Lock()
		defer goneMu.Unlock()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			var n int
			if err := gone.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil || n == 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}

	cfg := shared.BudgetConfig{Slots: slots, TTL: ttl, Borrow: true}
	rs := make([]*replica, replicas)
	for i := range rs {
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4, MaxRetries: -1, DialerRetries: 1})
		b := shared.NewBudget(shared.Link{Store: redisward.NewClientStore(rc, "fleet:"), Timeout: timeout}, "pg", fmt.Sprint("replica-", i), cfg)
		k, err := wardpool.NewKeeper(wardpool.Config[*pgx.Conn]{
			Limits: pool.Limits{Size: size},
			Dial: func(ctx context.Context) (*pgx.Conn, error) {
				return pgx.ConnectConfig(ctx, cfgPG.Copy())
			},
			Close: func(c *pgx.Conn) error {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				pid := c.PgConn().PID()
				err := c.Close(ctx)
				waitGone(pid)
				return err
			},
			Shared: wardpool.Shared{Budget: b, RetryEvery: 10 * time.Millisecond},
			// The first replica is recorded: its recording must replay
			// alone, without Redis (checked after the load).
			Recorder: recorderFor(i),
		})
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = &replica{k: k, budget: b, rc: rc}
	}
	defer func() {
		for _, r := range rs {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := r.k.Close(cctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			cancel()
			r.rc.Close()
		}
	}()

	// A replica that died holding 20 slots: it leased them, then went
	// silent (no renewal, no Leave).
	deadRC := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	dead := shared.NewBudget(shared.Link{Store: redisward.NewClientStore(deadRC, "fleet:"), Timeout: time.Second}, "pg", "dead", cfg)
	for range 20 {
		if ok, err := dead.Lease(ctx); !ok || err != nil {
			t.Fatalf("the dead replica's lease: %v %v", ok, err)
		}
	}
	deadRC.Close()
	diedAt := time.Now()

	// The sampler: backends of this fleet every 10 ms.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var maxSeen, samples atomic.Int64
	// In the steady phase, per replica: connections held summed over the
	// samples at which it had callers waiting (it asked), and their count.
	heldSum := make([]int64, replicas)
	askSamples := make([]int64, replicas)
	phaseMax := map[string]*atomic.Int64{}
	var phase atomic.Pointer[string]
	setPhase := func(name string) {
		phaseMax[name] = new(atomic.Int64)
		phase.Store(&name)
	}
	setPhase("dead replica")
	stopSample := make(chan struct{})
	var sampler sync.WaitGroup
	var mapMu sync.Mutex
	sampler.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSample:
				return
			case <-tick.C:
			}
			var n int64
			if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
				t.Error(err)
				return
			}
			samples.Add(1)
			if n > maxSeen.Load() {
				maxSeen.Store(n)
			}
			mapMu.Lock()
			if m := phaseMax[*phase.Load()]; n > m.Load() {
				m.Store(n)
			}
			if *phase.Load() == "steady" {
				for i, r := range rs {
					if r.k.Stats().Waiting > 0 {
						askSamples[i]++
						heldSum[i] += int64(r.budget.Held())
					}
				}
			}
			mapMu.Unlock()
		}
	})

	// The load.
	stopLoad := make(chan struct{})
	var load sync.WaitGroup
	var overshoot atomic.Int64 // the longest an Acquire ran past its ctx's deadline, ns
	var failures atomic.Int64
	for g := range callers {
		r := rs[g%replicas]
		load.Go(func() {
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				deadline, _ := actx.Deadline()
				l, err := r.k.Acquire(actx)
				if over := time.Since(deadline); over > 0 && over.Nanoseconds() > overshoot.Load() {
					overshoot.Store(over.Nanoseconds())
				}
				if err != nil {
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						failures.Add(1)
					}
					continue
				}
				var one int
				if err := l.Value().QueryRow(actx, "SELECT 1").Scan(&one); err != nil {
					l.Destroy()
				} else {
					time.Sleep(2 * time.Millisecond)
					l.Release()
					r.served.Add(1)
				}
				cancel()
				time.Sleep(3 * time.Millisecond) // think time: the machine has two cores
			}
		})
	}

	// Phase 1: the dead replica's slots come back within two TTLs: its
	// lease, then the grace during which a lapsed member's slots stay
	// counted.
	fleetHeld := func() int {
		n := 0
		for _, r := range rs {
			n += r.budget.Held()
		}
		return n
	}
	for fleetHeld() <= slots-20 {
		if time.Since(diedAt) > 10*time.Second {
			t.Fatalf("the dead replica's slots never came back: the fleet holds %d", fleetHeld())
		}
		time.Sleep(5 * time.Millisecond)
	}
	back := time.Since(diedAt)
	// The borrowers of the first seconds give back to the replicas that
	// ask (their debts are learnt at the next refused lease or renewal).
	mapMu.Lock()
	setPhase("settling")
	mapMu.Unlock()
	time.Sleep(time.Second)
	// Phase 2: steady.
	mapMu.Lock()
	setPhase("steady")
	mapMu.Unlock()
	before := make([]int64, replicas)
	for i, r := range rs {
		before[i] = r.served.Load()
	}
	time.Sleep(time.Second)
	minS, maxS, total := int64(1<<62), int64(0), int64(0)
	for i, r := range rs {
		d := r.served.Load() - before[i]
		minS, maxS, total = min(minS, d), max(maxS, d), total+d
		if testing.Verbose() {
			s := r.k.SharedStats()
			t.Logf("replica %d: served %d, held %d, share %d, owed %d, waits %d, leases %d granted %d, errors %d", i, d, s.Budget.Held, s.Budget.Share, s.Budget.Owed, s.BudgetWaits, s.Budget.Leases, s.Budget.Granted, s.Budget.StoreErrors)
		}
	}
	// Phase 3: Redis killed for 3 s.
	mapMu.Lock()
	setPhase("redis down")
	mapMu.Unlock()
	srv.Kill()
	time.Sleep(3 * time.Second)
	heldDown := fleetHeld()
	// Phase 4: Redis back, empty; the leases are rebuilt by the replicas.
	mapMu.Lock()
	setPhase("redis back")
	mapMu.Unlock()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	close(stopLoad)
	load.Wait()
	close(stopSample)
	sampler.Wait()
	if err := record.Replay(rs[0].k.Recording()); err != nil {
		t.Errorf("the recorded replica's replay, without Redis: %v", err)
	}

	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	look, err := redisward.NewClientStore(rc, "fleet:").Budget(ctx, shared.BudgetOp{Step: shared.StepRenew, Key: "{pg}", Replica: "look", Budget: slots, TTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var waits, fallbacks, errs uint64
	for _, r := range rs {
		s := r.k.SharedStats()
		waits += s.BudgetWaits
		fallbacks += s.Budget.Fallbacks
		errs += s.Budget.StoreErrors
	}
	t.Logf("backends sampled %d times every 10ms: max %d of a budget of %d (dead replica %d, settling %d, steady %d, redis down %d, redis back %d)",
		samples.Load(), maxSeen.Load(), slots, phaseMax["dead replica"].Load(), phaseMax["settling"].Load(), phaseMax["steady"].Load(), phaseMax["redis down"].Load(), phaseMax["redis back"].Load())
	t.Logf("dead replica's 20 slots back in use %v after it went silent (TTL %v)", back.Round(time.Millisecond), ttl)
	t.Logf("steady second: loans per replica min %d, max %d, mean %.0f", minS, maxS, float64(total)/replicas)
	t.Logf("redis down 3s: the fleet held %d; longest acquire past its ctx: %v; budget waits %d, fallbacks %d, store errors %d, other acquire errors %d",
		heldDown, time.Duration(overshoot.Load()).Round(time.Millisecond), waits, fallbacks, errs, failures.Load())
	t.Logf("after the restart the server counts %d held by %d members", look.Total, look.Live-1)
	if maxSeen.Load() > slots {
		t.Errorf("the fleet had %d backends, over its budget of %d", maxSeen.Load(), slots)
	}
	if samples.Load() < 100 {
		t.Errorf("only %d samples", samples.Load())
	}
	mapMu.Lock()
	minHeld, maxHeld := float64(slots), 0.0
	var asked int64
	for i, h := range heldSum {
		if askSamples[i] == 0 {
			continue
		}
		asked += askSamples[i]
		avg := float64(h) / float64(askSamples[i])
		minHeld, maxHeld = min(minHeld, avg), max(maxHeld, avg)
	}
	mapMu.Unlock()
	if asked == 0 {
		t.Fatal("no replica had callers waiting in the steady second: the load did not reach the budget")
	}
	t.Logf("steady second: connections held per replica while it had callers waiting, averaged over %d samples: min %.2f, max %.2f (share %d)", asked, minHeld, maxHeld, slots/replicas)
	if minHeld < float64(slots/replicas)/2 {
		t.Errorf("a replica held %.2f connections on average while asking, under half its share %d", minHeld, slots/replicas)
	}
	if heldDown > slots {
		t.Errorf("the fleet held %d during the outage, over %d", heldDown, slots)
	}
	if look.Live-1 != replicas || look.Total > slots {
		t.Errorf("after the restart: %d members holding %d, want %d members within %d", look.Live-1, look.Total, replicas, slots)
	}
	if failures.Load() != 0 {
		t.Errorf("%d acquires failed with something other than their ctx", failures.Load())
	}
}

// recorderFor returns a Recorder for the first replica, nil for the others.
func recorderFor(i int) *record.Recorder {
	if i != 0 {
		return nil
	}
	return record.New(4 << 20)
}
