package wardpool

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
	"github.com/wardpool/wardpool/ward/shared"
)

// TestKeeperRecordingReplaysEveryGuard runs the chaos run (dial failures,
// cancels, Destroy, hijacks, Reset, Close) with each guard of the ward on,
// and all of them together, and replays each recording with no difference.
// Each guard must have had its say in the run: a breaker that refused, a
// shedder that turned hot and shed, a bucket that ran dry, a limiter that
// bound.
func TestKeeperRecordingReplaysEveryGuard(t *testing.T) {
	c0 := newFakeClock().Now()
	breaker := func() *ward.Breaker {
		return ward.NewBreaker(ward.Sre{K: 1.05, Floor: 1.05, Size: 4, Window: 2 * time.Second, Probe: time.Second}, c0)
	}
	shedder := func() *ward.Shedder {
		return ward.NewShedder(ward.Shed{Size: 4, Window: time.Second, CPU: 900, Latency: 5 * time.Millisecond, Beta: 0.5, Cool: 100 * time.Millisecond}, c0)
	}
	bucket := func() *ward.Bucket { return ward.NewBucket(20, 2, c0) }
	limiter := func() *ward.Limiter {
		return ward.NewLimiter(ward.Aimd{Initial: 1, Min: 1, Max: 2, Slow: 20 * time.Millisecond, Backoff: 0.5})
	}
	cases := []struct {
		name  string
		ward  func(w *ward.Ward)
		heard []string // the guards whose refusals the recording must hold
	}{
		{"breaker", func(w *ward.Ward) { w.Breaker = breaker() }, []string{"breaker"}},
		{"shedder", func(w *ward.Ward) { w.Shedder = shedder() }, []string{"shedder"}},
		{"bucket", func(w *ward.Ward) { w.Bucket = bucket() }, []string{"bucket"}},
		{"limiter", func(w *ward.Ward) { w.Limiter = limiter() }, []string{"limiter"}},
		{"all", func(w *ward.Ward) {
			w.Breaker, w.Shedder, w.Bucket, w.Limiter = breaker(), shedder(), bucket(), limiter()
		}, []string{"shedder"}}, // the others refuse by chance here; alone, each must
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int64
			data, _ := chaosRunWith(t, 3, 1<<22, func(cfg *Config[*res]) {
				cfg.Clock = newFakeClock()
				tc.ward(&cfg.Ward)
				// Hot for one reading in every six (each 250ms apart).
				cfg.CPU = func() int {
					if reads.Add(1)%6 == 0 {
						return 980
					}
					return 100
				}
			})
			rc, err := record.ReadRecording(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.Replay(); err != nil {
				t.Fatal(err)
			}
			heard := map[string]int{}
			for _, s := range rc.Steps {
				if _, g, ok := strings.Cut(s.Answer(), "guard="); ok {
					heard[strings.Fields(g)[0]]++
				}
			}
			for _, g := range tc.heard {
				if heard[g] == 0 {
					t.Errorf("the %s never refused in the run: %v", g, heard)
				}
			}
			t.Logf("%d steps, refusals by guard %v", len(rc.Steps), heard)
		})
	}
}

// TestKeeperRecordingRollsWithEveryGuard: with a small recorder the ring
// rolls many times, each checkpoint carrying the guards, and what it kept
// replays.
func TestKeeperRecordingRollsWithEveryGuard(t *testing.T) {
	data, _ := chaosRunWith(t, 5, record.MinLimit, func(cfg *Config[*res]) {
		c := newFakeClock()
		cfg.Clock = c
		cfg.Ward.Breaker = ward.NewBreaker(ward.DefaultSre, c.Now())
		cfg.Ward.Shedder = ward.NewShedder(ward.DefaultShed, c.Now())
		cfg.Ward.Bucket = ward.NewBucket(50, 5, c.Now())
		cfg.Ward.Limiter = ward.NewLimiter(ward.DefaultAimd)
		cfg.CPU = func() int { return 950 }
	})
	rc, err := record.ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Steps[0].Index == 0 {
		t.Fatal("the ring did not roll")
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
}

// TestKeeperRecordingReadmeService: the README's service configuration (a
// Breaker on the preset, the leak watch) records and replays with no
// difference. (The README's pgx driver is left out: it reaches the Keeper
// through the same Config.)
func TestKeeperRecordingReadmeService(t *testing.T) {
	data, _ := chaosRunWith(t, 9, 0, func(cfg *Config[*res]) {
		c := newFakeClock()
		cfg.Clock = c
		cfg.LeakAfter = 30 * time.Second
		cfg.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, c.Now())}
	})
	if err := record.Replay(data); err != nil {
		t.Fatal(err)
	}
}

// flakyStore is a shared.Store whose every nth call times out, as a store
// that stops answering for a moment does.
type flakyStore struct {
	shared.Store
	n     int64
	calls atomic.Int64
}

func (s *flakyStore) fail(ctx context.Context) error {
	if s.calls.Add(1)%s.n == 0 {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

func (s *flakyStore) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	if err := s.fail(ctx); err != nil {
		return 0, err
	}
	return s.Store.Incr(ctx, key, ttl)
}

func (s *flakyStore) IncrUnder(ctx context.Context, key, prev string, w float64, limit int64, ttl time.Duration) (int64, bool, error) {
	if err := s.fail(ctx); err != nil {
		return 0, false, err
	}
	return s.Store.IncrUnder(ctx, key, prev, w, limit, ttl)
}

func (s *flakyStore) Get(ctx context.Context, key string) (string, bool, error) {
	if err := s.fail(ctx); err != nil {
		return "", false, err
	}
	return s.Store.Get(ctx, key)
}

func (s *flakyStore) Budget(ctx context.Context, op shared.BudgetOp) (shared.BudgetReply, error) {
	if err := s.fail(ctx); err != nil {
		return shared.BudgetReply{}, err
	}
	return s.Store.Budget(ctx, op)
}

// TestKeeperRecordingFleetMember: three Keepers share a budget of four
// slots, a breaker and a rate on dials through one store that times out
// now and then; one of them is recorded, with a breaker and a limiter of
// its own. Its recording replays alone, without the store, with no
// difference: what the shared guards said reached its pool as ceilings
// (the budget's leases and debts) and failed dials (the shared breaker's
// and rate's refusals), and those are recorded steps.
func TestKeeperRecordingFleetMember(t *testing.T) {
	mem := shared.NewMemStore(nil)
	store := &flakyStore{Store: mem, n: 7}
	bc := shared.DefaultBudget
	bc.Slots, bc.TTL, bc.Borrow = 4, 300*time.Millisecond, true
	// The recorded member's store traffic goes through a Tape too.
	tape := shared.NewTape(store, 0)
	keepers := make([]*Keeper[*res], 3)
	clocks := make([]*fakeClock, 3)
	for i := range keepers {
		link := shared.Link{Store: store, Timeout: 50 * time.Millisecond}
		if i == 0 {
			link.Store = tape
		}
		d := &dialer{fail: func(n int) error {
			if n%4 == 0 {
				return errDial
			}
			return nil
		}}
		c := newFakeClock()
		clocks[i] = c
		cfg := Config[*res]{
			Limits: pool.Limits{Size: 3},
			Clock:  c,
			Logger: quietLogger(),
			Shared: Shared{
				Budget:     shared.NewBudget(link, "db", fmt.Sprint("member-", i), bc),
				Breaker:    shared.NewBreaker(link, "db", shared.DefaultBreaker),
				Dials:      shared.NewCounter(link, "dials", 50, time.Second, 5),
				RetryEvery: 2 * time.Millisecond,
			},
		}
		if i == 0 {
			cfg.Recorder = record.New(1 << 22)
			cfg.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, c.Now()), Limiter: ward.NewLimiter(ward.DefaultAimd)}
		}
		keepers[i], _ = newTestKeeper(t, d, cfg)
	}
	// Every timer of a member, the budget's retries among them, runs on its
	// fake clock: move the clocks a millisecond at a time while the callers
	// run, so that a spent budget is asked again.
	stop := make(chan struct{})
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range clocks {
				c.Advance(time.Millisecond)
			}
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for g := range 9 {
		k := keepers[g%3]
		wg.Go(func() {
			for range 60 {
				ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
				if l, err := k.Acquire(ctx); err == nil {
					runtime.Gosched()
					if g%5 == 0 {
						l.Destroy()
					} else {
						l.Release()
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(stop)
	<-moved
	k := keepers[0]
	rc, err := record.ReadRecording(k.Recording())
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, s := range rc.Steps {
		ops[s.Op]++
	}
	if ops["Ceiling"] == 0 || ops["Unmade"]+ops["Unreserve"] == 0 {
		t.Fatalf("the member's recording holds no ceiling or no refused dial: %v", ops)
	}
	// Every reply its store gave it is on the tape, read back whole: the
	// member's shared guards could be asked again without the store.
	closeKeeper(t, k) // its Leave is the last call
	reel, err := shared.ReadTape(tape.Bytes())
	if err != nil || tape.Full() {
		t.Fatalf("the member's tape: %v (full %v)", err, tape.Full())
	}
	s := k.SharedStats()
	if trips := s.Dials.Trips + s.Breaker.Trips + s.Budget.Trips; uint64(reel.Calls()) != trips {
		t.Fatalf("the tape holds %d calls, the member's guards made %d round trips", reel.Calls(), trips)
	}
	t.Logf("%d steps %v; %d store calls in all, %d on the member's tape; shared stats %+v", len(rc.Steps), ops, store.calls.Load(), reel.Calls(), s)
}
