package wardpool

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestKeeperRandomOperations drives a Keeper on a fake clock with random
// sequences of every operation that does not block — TryAcquire, Release,
// Destroy, Hijack, a second Release, Reset, AcquireAllIdle, time passing —
// and checks after each step that nothing is lost or lent twice: the books
// balance, every resource the dialer opened is idle, lent, hijacked or
// closed, and no resource is closed twice or closed while lent.
func TestKeeperRandomOperations(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := &dialer{}
		c := newFakeClock()
		size := rapid.IntRange(1, 4).Draw(rt, "size")
		k, err := NewKeeper(Config[*res]{
			Limits: pool.Limits{
				Size: size,
				Idle: rapid.IntRange(0, size).Draw(rt, "idle"),
				Keep: time.Duration(rapid.IntRange(0, 3).Draw(rt, "keep")) * time.Second,
				Life: time.Duration(rapid.IntRange(0, 5).Draw(rt, "life")) * time.Second,
			},
			MinIdle:    rapid.IntRange(0, 1).Draw(rt, "minIdle"),
			LifeJitter: time.Second,
			Dial:       d.Dial,
			Close:      d.Close,
			Clock:      c,
			Rand:       func() float64 { return 0.5 },
		})
		if err != nil {
			if errors.Is(err, ErrConfig) {
				return // MinIdle over Idle: refused, as it should be
			}
			rt.Fatal(err)
		}
		var loans, ended []Loan[*res]
		hijacked := 0
		settle := func() { // until every dial goroutine has finished its work
			clocktest.Eventually(rt, "dials to land", func() bool { return settled(k) })
		}
		settle()
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 7).Draw(rt, "op"); op {
			case 0, 1:
				l, err := k.TryAcquire(bg)
				switch {
				case err == nil:
					loans = append(loans, l)
				case errors.Is(err, ErrWouldWait):
					settle()
				default:
					rt.Fatalf("TryAcquire: %v", err)
				}
			case 2, 3:
				if len(loans) > 0 {
					i := rapid.IntRange(0, len(loans)-1).Draw(rt, "loan")
					loans[i].Release()
					ended = append(ended, loans[i])
					loans = append(loans[:i], loans[i+1:]...)
				}
			case 4:
				if len(loans) > 0 {
					i := rapid.IntRange(0, len(loans)-1).Draw(rt, "loan")
					if rapid.Bool().Draw(rt, "hijack") {
						d.Close(loans[i].Hijack()) // the caller's to close
						hijacked++
					} else {
						loans[i].Destroy()
					}
					ended = append(ended, loans[i])
					loans = append(loans[:i], loans[i+1:]...)
				}
			case 5:
				if len(ended) > 0 {
					ended[rapid.IntRange(0, len(ended)-1).Draw(rt, "ended")].Release()
				}
			case 6:
				c.Advance(time.Duration(rapid.IntRange(1, 3000).Draw(rt, "ms")) * time.Millisecond)
				settle()
			case 7:
				if rapid.Bool().Draw(rt, "reset") {
					k.Reset()
					settle()
				} else {
					loans = append(loans, k.AcquireAllIdle(bg)...)
				}
			}
			// Check, once the background dials (MinIdle) have landed:
			// through Stats some of the time, else the Pool's gauges.
			settle()
			var live, idle, busy int
			if rapid.IntRange(0, 3).Draw(rt, "stats") == 0 {
				s := k.Stats()
				live, idle, busy = s.Live, s.Idle, s.Busy
			} else {
				live, idle, busy = booksAsTheyStand(k)
			}
			if live != idle+busy || live > size {
				rt.Fatalf("books: live %d, idle %d, busy %d", live, idle, busy)
			}
			if d.open() != live {
				rt.Fatalf("%d open, %d live", d.open(), live)
			}
			seen := map[*res]bool{}
			for _, l := range loans {
				if !l.Valid() || seen[l.Value()] || l.Value().closed.Load() {
					rt.Fatalf("loan of r%d: valid %v, twice %v, closed %v",
						l.Value().id, l.Valid(), seen[l.Value()], l.Value().closed.Load())
				}
				seen[l.Value()] = true
			}
			if d.double > 0 {
				rt.Fatal("a resource was closed twice")
			}
		}
		for _, l := range loans {
			l.Release()
		}
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			rt.Fatal(err)
		}
		if open := d.open(); open != 0 || d.double > 0 {
			rt.Fatalf("after Close: %d open, %d closed twice", open, d.double)
		}
		_ = hijacked
	})
}

// booksAsTheyStand reads live, idle and busy under the lock.
func booksAsTheyStand(k *Keeper[*res]) (live, idle, busy int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.p.Books().Live, k.p.Books().Idle, k.p.Books().Busy
}
