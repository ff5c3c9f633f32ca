package engine

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// rotationScenario is a pool of 32 kept full by 600 callers a second,
// whose dials take 300 ms, rotated at second 10 over the window over.
func rotationScenario(t *testing.T, over time.Duration) Scenario {
	s := builtin(t, "steady")
	s.Rate, s.Hold, s.Dial = 600, 40*time.Millisecond, 300*time.Millisecond
	s.Limits = pool.Limits{Size: 32, Idle: 32, Keep: 30 * time.Second}
	s.Timeout = 200 * time.Millisecond
	s.RotateAt, s.RotateOver = 10*time.Second, over
	return s
}

// TestRotationPace: the same load rotated at once and over 5 s. At once,
// the whole generation is re-dialled within the second; over 5 s, the
// dials a second stay near the pace (32/5 a second) and the callers behind
// them mostly do not give up. Every connection of the old generation is
// gone a second after the window either way: the eviction timer retires
// the idle ones at the pace the pool names. Without the rotation (no
// Reset) there would be no dials to count; with the window ignored, the
// two runs would be the same.
func TestRotationPace(t *testing.T) {
	const n = 32
	run := func(over time.Duration) RotationSum {
		s := rotationScenario(t, over)
		check := booksCheck(t, "rotation over "+over.String())
		r, err := Run(s, Options{RotationRead: 7 * time.Second, Observe: func(x Second, b pool.Books) {
			check(x, b)
			if x.Sec >= 17 && b.Rotating != 0 {
				t.Errorf("over %v: second %d, %d of the old generation still live", over, x.Sec, b.Rotating)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Sum.Rotation
	}
	once, rolling := run(0), run(5*time.Second)
	t.Logf("at once: %+v", once)
	t.Logf("over 5s: %+v", rolling)
	if once.From != 10*time.Second || once.To != 17*time.Second || rolling.To != once.To {
		t.Errorf("stretches %v-%v and %v-%v, want 10s-17s both", once.From, once.To, rolling.From, rolling.To)
	}
	if once.DialsPeak < n-2 {
		t.Errorf("at once: peak %d dials a second, want about %d", once.DialsPeak, n)
	}
	if pace := (n + 4) / 5; rolling.DialsPeak > pace+3 {
		t.Errorf("over 5s: peak %d dials a second, want at most %d", rolling.DialsPeak, pace+3)
	}
	if rolling.Dials < n-2 || once.Dials < n-2 {
		t.Errorf("dials in the stretch: rolling %d, at once %d; want the generation re-dialled (about %d)", rolling.Dials, once.Dials, n)
	}
	if once.Retired < 2 || rolling.Retired != 1 {
		t.Errorf("retired by the Reset itself: at once %d, rolling %d; want every idle one (most are lent) and one", once.Retired, rolling.Retired)
	}
	if rolling.TimedOut*10 > once.TimedOut || once.TimedOut == 0 {
		t.Errorf("timed out: rolling %d, at once %d; want a tenth at most", rolling.TimedOut, once.TimedOut)
	}
	if rolling.P99 >= once.P99 {
		t.Errorf("wait p99 around the rotation: rolling %v, at once %v", rolling.P99, once.P99)
	}
}

// A run without a rotation reports none, and a rotation is validated.
func TestRotationOff(t *testing.T) {
	r, err := Run(builtin(t, "steady"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sum.Rotation != (RotationSum{}) {
		t.Errorf("no rotation, figures %+v", r.Sum.Rotation)
	}
	s := builtin(t, "steady")
	s.RotateOver = -time.Second
	if s.Validate() == nil {
		t.Error("a negative rotate-over validates")
	}
	s, err = Override(builtin(t, "steady"), "rotate-at=10s, rotate-over=5s")
	if err != nil || s.RotateAt != 10*time.Second || s.RotateOver != 5*time.Second {
		t.Errorf("Override: %v, %v, %v", s.RotateAt, s.RotateOver, err)
	}
}
