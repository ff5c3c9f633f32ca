package wardpool

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// The leak watch (leak.go): a loan of a resource reused from idle is
// watched as a loan of a fresh one is, and a loan's end and its report
// agree.

func TestLeakWatchSeesReusedLoans(t *testing.T) {
	// A loan of a resource given back a moment ago is reported once past
	// LeakAfter with the stack of the Acquire that took it, counted by
	// Leaked and Stats.Leaks, and reported again when it comes back.
	var (
		mu    sync.Mutex
		leaks []Leak[*res]
	)
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:    pool.Limits{Size: 2},
		LeakAfter: time.Minute,
		OnLeak:    func(l Leak[*res]) { mu.Lock(); leaks = append(leaks, l); mu.Unlock() },
	})
	mustAcquire(t, k).Release()
	before := k.Stats().Reused
	l := acquireFromLane(t, k)
	if after := k.Stats().Reused; after != before+1 {
		t.Fatalf("the loan did not reuse the idle resource (reused %d, then %d)", before, after)
	}
	c.Advance(59 * time.Second)
	if n := k.Leaked(); n != 0 {
		t.Fatalf("Leaked %d before LeakAfter", n)
	}
	c.Advance(2 * time.Second)
	mu.Lock()
	if len(leaks) != 1 || leaks[0].Item != l.Value() || leaks[0].Returned || leaks[0].Held < time.Minute {
		mu.Unlock()
		t.Fatalf("reports %+v, want the lane's loan reported once", leaks)
	}
	if !strings.Contains(string(leaks[0].Stack), "acquireFromLane") {
		mu.Unlock()
		t.Fatalf("the stack does not show who acquired:\n%s", leaks[0].Stack)
	}
	mu.Unlock()
	if n := k.Leaked(); n != 1 {
		t.Fatalf("Leaked %d, want 1", n)
	}
	c.Advance(5 * time.Minute) // reported once only
	l.Release()
	mu.Lock()
	if len(leaks) != 2 || !leaks[1].Returned || leaks[1].Item != l.Value() || leaks[1].Held < 6*time.Minute ||
		!strings.Contains(string(leaks[1].Stack), "acquireFromLane") {
		mu.Unlock()
		t.Fatalf("reports %+v, want the return reported", leaks)
	}
	mu.Unlock()
	if s := k.Stats(); s.Leaks != 1 || k.Leaked() != 0 {
		t.Fatalf("stats %+v, Leaked %d", s, k.Leaked())
	}
	checkBalanced(t, k, d)
}

func acquireFromLane(t *testing.T, k *Keeper[*res]) Loan[*res] { return mustAcquire(t, k) }

func TestLeakWatchRacesLoansEndingAsTheyAreReported(t *testing.T) {
	// Loans end while the watch reports them
	// (LeakAfter a nanosecond: every loan is a leak by the next tick): each
	// report is claimed under the lock, so a return is reported only after
	// a leak report of the same loan, and never twice. -race checks the
	// stack record's hand-over.
	var (
		mu               sync.Mutex
		leaked, returned int
	)
	d := &dialer{}
	k, err := NewKeeper(Config[*res]{
		Limits:    pool.Limits{Size: 4},
		Dial:      d.Dial,
		Close:     d.Close,
		LeakAfter: time.Nanosecond,
		OnLeak: func(l Leak[*res]) {
			mu.Lock()
			defer mu.Unlock()
			if l.Returned {
				returned++
			} else {
				leaked++
			}
			if returned > leaked {
				t.Errorf("a return reported before its leak: %d returns, %d leaks", returned, leaked)
			}
		},
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				l, err := k.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if g == 0 && i%200 == 0 {
					// Hold this one until the watch has reported it, so
					// that reports are certain to race the others.
					deadline := time.Now().Add(10 * time.Second)
					for !reported(k, l) {
						if time.Now().After(deadline) {
							k.mu.Lock()
							t.Errorf("a loan held past LeakAfter was not reported in 10s: told %d armed %v at %v",
								l.e.lw.told, k.alarm.armed, k.alarm.at)
							k.mu.Unlock()
							break
						}
						runtime.Gosched()
					}
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if s := k.Stats(); int(s.Leaks) != leaked || returned > leaked {
		t.Fatalf("Stats.Leaks %d, %d leak reports, %d return reports", s.Leaks, leaked, returned)
	}
	if leaked < 10 {
		t.Fatalf("%d leaks reported, want at least the 10 held until reported", leaked)
	}
}

// reported reports whether the leak watch has reported l's loan.
func reported(k *Keeper[*res], l Loan[*res]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return l.e.lw.reported
}
