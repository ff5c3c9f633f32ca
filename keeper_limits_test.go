package wardpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// SetLimits on a running Keeper: the pool decides, the Keeper carries it out.

func TestSetLimitsLowersSize(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4, Idle: 4}})
	var ls []Loan[*res]
	for range 4 {
		ls = append(ls, mustAcquire(t, k))
	}
	ls[0].Release()
	ls[1].Release() // two idle, two lent
	if err := k.SetLimits(pool.Limits{Size: 1, Idle: 4}); err != nil {
		t.Fatal(err)
	}
	if got := k.Limits(); got.Size != 1 {
		t.Fatalf("Limits() = %+v after SetLimits", got)
	}
	// Both idle ones are closed at once; the two lent stay lent.
	if !closedSoon(t, k, ls[0].Value()) || !closedSoon(t, k, ls[1].Value()) {
		t.Fatal("idle resources above the lowered Size were not closed")
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Live: 2, Idle: 0, Busy: 2}, pool.Books{Live: s.Live, Idle: s.Idle, Busy: s.Busy}); diff != "" {
			t.Fatalf("stats after lowering Size with two lent (-want +got):\n%s", diff)
		}
	}
	ls[2].Release() // live 2 > 1: closed on return
	if !closedSoon(t, k, ls[2].Value()) {
		t.Fatal("a loan above the lowered Size was kept on return")
	}
	ls[3].Release() // live 1 = Size: kept
	if closedSoon(t, k, ls[3].Value()) {
		t.Fatal("a loan at the lowered Size was closed on return")
	}
	l := mustAcquire(t, k)
	if l.Value() != ls[3].Value() {
		t.Fatal("the kept resource was not lent again")
	}
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryAcquire at the lowered Size = %v, want ErrWouldWait", err)
	}
	l.Release()
	checkBalanced(t, k, d)
}

func TestSetLimitsRaisedSizeServesWaiters(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)
	got := make(chan Loan[*res], 2)
	for range 2 {
		go func() {
			l, err := k.Acquire(bg)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	clocktest.Eventually(t, "two waiters", func() bool { return k.Stats().Waiting == 2 })
	if err := k.SetLimits(pool.Limits{Size: 3}); err != nil {
		t.Fatal(err)
	}
	a, b := <-got, <-got // both served by dials, while the first loan is out
	if a.Value() == held.Value() || b.Value() == held.Value() || d.open() != 3 {
		t.Fatalf("waiters not served by new dials (open %d)", d.open())
	}
	a.Release()
	b.Release()
	held.Release()
	checkBalanced(t, k, d)
}

func TestSetLimitsKeepAppliesToTheLane(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2, Keep: time.Hour}})
	r := makeParked(t, k)
	if err := k.SetLimits(pool.Limits{Size: 2, Keep: time.Second}); err != nil {
		t.Fatal(err)
	}
	c.Step(2 * time.Second) // no timer runs
	l := mustAcquire(t, k)
	if l.Value() == r || !closedSoon(t, k, r) {
		t.Fatal("a resource past the shortened Keep was lent")
	}
	l.Release()
	if s := k.Stats(); s.IdleRetired != 1 {
		t.Fatalf("stats %+v", s.Books)
	}
	checkBalanced(t, k, d)
}

func TestSetLimitsRefused(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4, Idle: 4}, MinIdle: 2})
	for _, l := range []pool.Limits{{Size: -1}, {Size: 1}, {Size: 4, Idle: 1}, {Keep: -time.Second}} {
		if err := k.SetLimits(l); !errors.Is(err, ErrConfig) {
			t.Errorf("SetLimits(%+v) = %v, want ErrConfig", l, err)
		}
	}
	if got := k.Limits(); got != (pool.Limits{Size: 4, Idle: 4}) {
		t.Fatalf("a refused SetLimits changed the limits: %+v", got)
	}
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	if err := k.SetLimits(pool.Limits{Size: 2}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetLimits after Close = %v, want ErrClosed", err)
	}
}

// TestSetLimitsUnderLoad resizes a Keeper whose callers go through the lane
// and the lock at once (run it with -race: the lane reads the limits
// without the lock). In each phase no more loans are out at once than the
// phase's Size, counted by the callers themselves, and the books stay
// honest.
func TestSetLimitsUnderLoad(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 8, Idle: 8, Keep: time.Minute}})
	for _, size := range []int{8, 1, 3, 2, 6, 1} {
		if err := k.SetLimits(pool.Limits{Size: size, Idle: size, Keep: time.Minute}); err != nil {
			t.Fatal(err)
		}
		var out, most atomic.Int64
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 300 {
					ctx, cancel := context.WithTimeout(bg, 5*time.Second)
					l, err := k.Acquire(ctx)
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					n := out.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					out.Add(-1)
					l.Release()
				}
			}()
		}
		wg.Wait()
		if m := most.Load(); m > int64(size) {
			t.Fatalf("Size %d: %d loans out at once", size, m)
		}
		if s := k.Stats(); s.Live > size {
			t.Fatalf("Size %d: %d live once every loan came back", size, s.Live)
		}
		checkBalanced(t, k, d)
	}
}
