package wardpool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// countingClock is the system clock, counting the timer callbacks it runs:
// each is a wake-up of the Keeper.
type countingClock struct{ fired *atomic.Int64 }

func (c countingClock) Now() time.Time { return time.Now() }

func (c countingClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, func() { c.fired.Add(1); f() })
}

// TestKeeperIdleHourWakesOnlyForWhatIsDue holds a Keeper idle through a
// simulated hour under testing/synctest, in the configurations a service
// runs (the defaults; MinIdle; the leak watch; a shedder reading the CPU;
// Life), and counts its wake-ups: no more than pgxpool's health check
// makes in an hour (one a minute, 60), and in fact only the few armed for
// something due (an idle resource's Keep or Life, a leak's threshold). A
// clock that ticked (the cached clock before issue 32 woke every
// millisecond: 3.6 million an hour) fails it at once.
func TestKeeperIdleHourWakesOnlyForWhatIsDue(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config[*res]
		max  int64 // wake-ups in the idle hour
	}{
		{"defaults", Config[*res]{Limits: pool.DefaultLimits}, 1}, // the Keep of the one idle resource
		// Keep retires the warm ones at 30 minutes and MinIdle dials two
		// more, which Keep retires again at the hour: a wake-up each time.
		{"MinIdle", Config[*res]{Limits: pool.DefaultLimits, MinIdle: 2}, 3},
		{"leak watch", Config[*res]{Limits: pool.DefaultLimits, LeakAfter: time.Minute}, 2},
		{"shedder", Config[*res]{Limits: pool.DefaultLimits, CPU: func() int { return 100 },
			Ward: ward.Ward{Shedder: ward.NewShedder(ward.DefaultShed, time.Now())}}, 2},
		{"life", Config[*res]{Limits: pool.Limits{Size: 4, Idle: 4, Life: 20 * time.Minute}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var fired atomic.Int64
				d := &dialer{}
				cfg := tc.cfg
				cfg.Clock = countingClock{&fired}
				cfg.Dial, cfg.Close, cfg.Logger = d.Dial, d.Close, quietLogger()
				k, err := NewKeeper(cfg)
				if err != nil {
					t.Fatal(err)
				}
				l, err := k.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second)
				l.Release()
				synctest.Wait()
				before := fired.Load()
				time.Sleep(time.Hour)
				synctest.Wait()
				woke := fired.Load() - before
				t.Logf("%s: %d wake-ups in an idle hour (pgxpool's health check: 60)", tc.name, woke)
				if woke > tc.max || woke > 60 {
					t.Errorf("%d wake-ups in an idle hour, want at most %d", woke, tc.max)
				}
				if err := k.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
