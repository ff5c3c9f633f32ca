package wardpool

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
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
			rc, err := pool.ReadRecording(data)
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
	data, _ := chaosRunWith(t, 5, pool.MinRecordLimit, func(cfg *Config[*res]) {
		c := newFakeClock()
		cfg.Clock = c
		cfg.Ward.Breaker = ward.NewBreaker(ward.DefaultSre, c.Now())
		cfg.Ward.Shedder = ward.NewShedder(ward.DefaultShed, c.Now())
		cfg.Ward.Bucket = ward.NewBucket(50, 5, c.Now())
		cfg.Ward.Limiter = ward.NewLimiter(ward.DefaultAimd)
		cfg.CPU = func() int { return 950 }
	})
	rc, err := pool.ReadRecording(data)
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
	if err := pool.Replay(data); err != nil {
		t.Fatal(err)
	}
}
