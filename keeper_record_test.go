package wardpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// chaosRun drives a recorded Keeper through a run with everything in it:
// dials that fail (and the backoff they bring), callers who give up,
// destroys and hijacks, a Reset, the eviction timer, MinIdle, four callers
// at once, a stretch of one caller alone (the lane's ground) and Close. It
// returns the recording and the Keeper.
func chaosRun(t *testing.T, seed uint64, limit int) ([]byte, *Keeper[*res]) {
	return chaosRunWith(t, seed, limit, nil)
}

// chaosRunWith is chaosRun with the Config changed by tune (another ward,
// a CPU reading): the lane may then be shut, and the ward may shed.
func chaosRunWith(t *testing.T, seed uint64, limit int, tune func(*Config[*res])) ([]byte, *Keeper[*res]) {
	d := &dialer{fail: func(n int) error {
		if n%5 == 0 {
			return errDial
		}
		return nil
	}}
	b := ward.DefaultBackoff
	b.Base, b.Cap = 10*time.Millisecond, 50*time.Millisecond
	src := rand.New(rand.NewPCG(seed, 1)) // Rand runs under the lock
	cfg := Config[*res]{
		Limits:     pool.Limits{Size: 3, Idle: 3, Keep: 2 * time.Second, Life: 5 * time.Second},
		Ward:       ward.Ward{Backoff: &b},
		MinIdle:    1,
		LifeJitter: time.Second,
		Rand:       src.Float64,
		Logger:     quietLogger(),
		Recorder:   record.New(limit),
	}
	if tune != nil {
		tune(&cfg)
	}
	k, c := newTestKeeper(t, d, cfg)
	use := func(rng *rand.Rand, l Loan[*res]) {
		switch rng.IntN(10) {
		case 0:
			l.Destroy()
		case 1:
			d.Close(l.Hijack()) // the caller's to close
		default:
			l.Release()
		}
	}
	// One caller alone: every pair may go through the lane.
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 200 {
		if l, err := k.Acquire(bg); err == nil {
			l.Release()
		}
		if rng.IntN(20) == 0 {
			c.Advance(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
	}
	// Four callers at once, the clock moving under them.
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for range 150 {
				ctx, cancel := context.WithCancel(bg)
				if rng.IntN(8) == 0 {
					cancel() // a caller who gave up before asking
				}
				var l Loan[*res]
				var err error
				if rng.IntN(4) == 0 {
					l, err = k.TryAcquire(ctx)
				} else {
					l, err = k.Acquire(ctx)
				}
				cancel()
				if err == nil {
					runtime.Gosched()
					use(rng, l)
				} else if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrWouldWait) &&
					!errors.Is(err, errDial) && (tune == nil || !errors.Is(err, ErrShed)) {
					t.Errorf("acquire: %v", err)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	midRun := 0
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			c.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
			if i%97 == 50 {
				k.Reset()
			}
			if i%31 == 0 {
				k.Loans()
			}
			if i%50 == 5 {
				// Written out on demand, mid-run: a recording of its own.
				midRun++
				if err := record.Replay(k.Recording()); err != nil {
					t.Errorf("a recording written out mid-run: %v", err)
				}
			}
			runtime.Gosched()
			continue
		}
		break
	}
	if midRun == 0 && tune == nil { // a ward that sheds may end the callers first
		t.Error("no recording was written out while the callers ran")
	}
	clocktest.Eventually(t, "the background work", func() bool { return settled(k) })
	k.Stats() // folds the lane
	c.Advance(3 * time.Second)
	clocktest.Eventually(t, "the background work", func() bool { return settled(k) })
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return k.Recording(), k
}

// TestKeeperRecordingReplays records chaos runs of the Keeper and replays
// each: the fresh Pool must give every answer the Keeper's Pool gave. The
// recording must hold every kind of call the run made, the lane's loans
// among them (as Relent steps, and all of them: the books at the end
// count them).
func TestKeeperRecordingReplays(t *testing.T) {
	for seed := range uint64(4) {
		data, k := chaosRun(t, seed, 1<<22)
		rc, err := record.ReadRecording(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Replay(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ops := map[string]int{}
		for _, s := range rc.Steps {
			ops[s.Op]++
		}
		for _, op := range []string{"Take", "Made", "Unmade", "Give", "Drop", "Evict", "Reset", "Loans", "Close"} {
			if ops[op] == 0 {
				t.Errorf("seed %d: no %v in the recording (%v)", seed, op, ops)
			}
		}
		// Every loan is in the recording, whole: a Take answered Ready or
		// a Made for each one the Keeper counted.
		st := k.Stats()
		if ops["Relent"] != 0 || uint64(ops["Take"]) < st.Reused {
			t.Errorf("seed %d: %d Relent steps, %d Takes for %d reuses", seed, ops["Relent"], ops["Take"], st.Reused)
		}
		if rc.Steps[0].Index != 0 {
			t.Errorf("seed %d: a 4 MiB recorder rolled", seed)
		}
		t.Logf("seed %d: %d steps in %d bytes (%.1f bytes a step): %v", seed, len(rc.Steps), len(data), float64(len(data))/float64(len(rc.Steps)), ops)
	}
}

// TestKeeperRecordingRollsAndReplays is the chaos run with a small
// recorder: the ring rolls many times, and what it kept replays.
func TestKeeperRecordingRollsAndReplays(t *testing.T) {
	data, _ := chaosRun(t, 7, record.MinLimit)
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

// TestKeeperRecorderRefused: a ward the recorder cannot rebuild (a guard
// not built by its constructor) is refused by NewKeeper with ErrConfig and
// ErrUnrecordable, naming the guard.
func TestKeeperRecorderRefused(t *testing.T) {
	_, err := NewKeeper(Config[*res]{
		Dial:     (&dialer{}).Dial,
		Close:    (&dialer{}).Close,
		Ward:     ward.Ward{Limiter: new(ward.Limiter)},
		Recorder: record.New(0),
	})
	if !errors.Is(err, ErrConfig) || !errors.Is(err, record.ErrUnrecordable) || !strings.Contains(err.Error(), "Limiter") {
		t.Fatalf("NewKeeper with a zero Limiter and a Recorder: %v", err)
	}
}

// TestKeeperWithoutRecorder: Recording is nil without a Recorder.
func TestKeeperWithoutRecorder(t *testing.T) {
	k, _ := newTestKeeper(t, &dialer{}, Config[*res]{})
	if b := k.Recording(); b != nil {
		t.Fatalf("Recording without a Recorder: %d bytes", len(b))
	}
}
