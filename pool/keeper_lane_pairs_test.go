package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// The lane with a shedder or a limiter: it opens only while the pool says
// pairs pass them unasked (Pool.LanePairs), and the guards hear of every
// pair, in order, before the pool answers anything else.

// guardCounts reads the guards' counts under the Keeper's lock, after the
// lane's pairs are reported.
func guardCounts(k *Keeper[*res], w ward.Ward) (flying, inflight, limit int) {
	k.lock()
	defer k.unlock()
	if w.Shedder != nil {
		flying = w.Shedder.Flying()
	}
	if w.Limiter != nil {
		inflight, limit = w.Limiter.Inflight(), w.Limiter.Limit()
	}
	return
}

func TestLanePairsReachTheGuardsInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    func(Clock) ward.Ward
	}{
		{"shedder", func(c Clock) ward.Ward { return shedderWard(c) }},
		{"limiter", func(Clock) ward.Ward { return ward.Ward{Limiter: ward.NewLimiter(ward.DefaultAimd)} }},
		{"both", func(c Clock) ward.Ward {
			return ward.Ward{Shedder: shedderWard(c).Shedder, Limiter: ward.NewLimiter(ward.DefaultAimd)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dialer{}
			c := newFakeClock()
			w := tc.w(c)
			k, _ := newTestKeeper(t, d, Config[*res]{Limits: Limits{Size: 4}, Clock: c, Ward: w, CPU: func() int { return 0 }})
			makeParked(t, k)
			// More loans than the log holds: it is reported when full,
			// and the lane opens again.
			before := k.Stats().Books.Loans
			const n = 3*pairsLen + 7
			held := mustAcquire(t, k) // one loan out all along: the guards count it
			for range n {
				c.Advance(time.Millisecond)
				mustAcquire(t, k).Release()
			}
			if k.laneTakes == 0 {
				t.Fatal("the lane lent nothing with the guards cold")
			}
			flying, inflight, limit := guardCounts(k, w)
			if w.Shedder != nil && flying != 1 {
				t.Fatalf("the shedder counts %d in flight, want the 1 loan out", flying)
			}
			if w.Limiter != nil && (inflight != 1 || limit < 1) {
				t.Fatalf("the limiter counts %d leases out under %d, want 1", inflight, limit)
			}
			if got := k.Stats().Books.Loans - before; got != n+1 {
				t.Fatalf("the books count %d loans, want %d", got, n+1)
			}
			held.Release()
			if flying, inflight, _ := guardCounts(k, w); flying != 0 || inflight != 0 {
				t.Fatalf("after every loan ended: %d in flight, %d leases", flying, inflight)
			}
			checkBalanced(t, k, d)
		})
	}
}

// The same loans through the lane and through the lock leave the guards
// alike: the lane's pairs are the pool's own Give and Take.
func TestLanePairsLeaveTheGuardsAsTheLockWould(t *testing.T) {
	run := func(lock bool) (*ward.Shedder, *ward.Limiter, int) {
		d := &dialer{}
		c := newFakeClock()
		sh := ward.NewShedder(ward.DefaultShed, c.Now())
		lim := ward.NewLimiter(ward.Aimd{Initial: 2, Min: 1, Max: 50, Slow: time.Second, Backoff: 0.5})
		k, _ := newTestKeeper(t, d, Config[*res]{Limits: Limits{Size: 4}, Clock: c, LockEveryLoan: lock,
			Ward: ward.Ward{Shedder: sh, Limiter: lim}, CPU: func() int { return 0 }})
		a := mustAcquire(t, k)
		for i := range 40 {
			l := mustAcquire(t, k)
			c.Advance(time.Duration(i%7) * 100 * time.Millisecond) // some past Slow
			l.Release()
			c.Advance(time.Duration(i%3) * time.Millisecond)
		}
		a.Release()
		k.lock() // reports what the lane holds
		k.unlock()
		lane := int(k.laneTakes)
		checkBalanced(t, k, d)
		return sh, lim, lane
	}
	sh1, lim1, lane := run(false)
	sh2, lim2, locked := run(true)
	if lane == 0 || locked != 0 {
		t.Fatalf("lane loans %d and %d: want some, then none", lane, locked)
	}
	if *lim1 != *lim2 {
		t.Fatalf("limiter after the lane %+v, after the lock %+v", lim1, lim2)
	}
	if !reflect.DeepEqual(sh1, sh2) {
		t.Fatalf("shedder after the lane %+v, after the lock %+v", sh1, sh2)
	}
}

// A loan held longer than the limiter's Slow is not parked: its Give
// lowers the limit, and the Take after it must be the pool's.
func TestLaneParksNoLoanLongerThanSlow(t *testing.T) {
	d := &dialer{}
	c := newFakeClock()
	lim := ward.NewLimiter(ward.Aimd{Initial: 2, Min: 1, Max: 2, Slow: time.Second, Backoff: 0.5})
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: Limits{Size: 4}, Clock: c, Ward: ward.Ward{Limiter: lim}})
	a := mustAcquire(t, k)
	makeParked(t, k)
	b := mustAcquire(t, k) // two leases of two out
	c.Advance(2 * time.Second)
	b.Release() // slow: the limit halves to 1, one lease out
	if k.laneCount() != 0 {
		t.Fatal("a loan held past Slow was parked")
	}
	if _, err := k.TryAcquire(bg); err != ErrWouldWait {
		t.Fatalf("TryAcquire with the limit out: %v, want ErrWouldWait", err)
	}
	a.Release()
	checkBalanced(t, k, d)
}

// A hot CPU reading shuts the lane at the sampler's next tick.
func TestLaneShutsWhenTheCPUTurnsHot(t *testing.T) {
	d := &dialer{}
	c := newFakeClock()
	var cpu atomic.Int64
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: Limits{Size: 2}, Clock: c, Ward: shedderWard(c),
		CPU: func() int { return int(cpu.Load()) }})
	makeParked(t, k)
	cpu.Store(950)
	c.Advance(cpuEvery)
	for range 3 {
		mustAcquire(t, k).Release()
		if k.laneCount() != 0 {
			t.Fatal("parked with the CPU hot")
		}
	}
	cpu.Store(0)
	c.Advance(cpuEvery)
	mustAcquire(t, k).Release()
	if k.laneCount() != 1 {
		t.Fatal("the lane stayed shut with the CPU cold again")
	}
	checkBalanced(t, k, d)
}

// 32 goroutines on the real clock against a shedder and a limiter, some
// loans held past the limiter's Slow, some destroyed (the limit shrinks),
// some acquires cancelled: the lane opens and shuts many times over. At
// rest the books balance, every acquire ended as a loan or a cancellation,
// and neither guard counts anything in flight.
func TestLanePairsUnderStress(t *testing.T) {
	d := &dialer{}
	sh := ward.NewShedder(ward.DefaultShed, time.Now())
	lim := ward.NewLimiter(ward.Aimd{Initial: 8, Min: 2, Max: 16, Slow: 200 * time.Microsecond, Backoff: 0.9})
	k, err := NewKeeper(Config[*res]{Limits: Limits{Size: 8}, Dial: d.Dial, Close: d.Close,
		Ward: ward.Ward{Shedder: sh, Limiter: lim}, CPU: func() int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 32, 400
	var got, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				ctx, cancel := context.WithCancel(bg)
				if r.IntN(8) == 0 {
					go cancel()
				}
				l, err := k.Acquire(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Acquire: %v", err)
					}
					cancelled.Add(1)
					continue
				}
				got.Add(1)
				switch x := r.IntN(100); {
				case x < 3:
					l.Destroy()
					continue
				case x < 8:
					time.Sleep(300 * time.Microsecond) // past Slow: no park
				default:
					runtime.Gosched()
				}
				l.Release()
			}
		}()
	}
	wg.Wait()
	eventually(t, "dials to land", func() bool { return settled(k) })
	s := k.Stats()
	if got.Load()+cancelled.Load() != workers*rounds || s.Acquires != uint64(got.Load()) {
		t.Errorf("%d loans + %d cancelled of %d; stats say %d acquires", got.Load(), cancelled.Load(), workers*rounds, s.Acquires)
	}
	// The pool counts a loan for a waiter that gave up as it was served
	// (the resource comes straight back): at most one a cancellation.
	if extra := int64(s.Books.Loans) - got.Load(); extra < 0 || extra > cancelled.Load() || s.Busy != 0 || s.Waiting != 0 {
		t.Errorf("at rest, %d loans taken and %d cancelled: %+v", got.Load(), cancelled.Load(), s)
	}
	if flying, inflight, _ := guardCounts(k, ward.Ward{Shedder: sh, Limiter: lim}); flying != 0 || inflight != 0 {
		t.Errorf("at rest the shedder counts %d in flight, the limiter %d leases", flying, inflight)
	}
	if k.laneTakes == 0 {
		t.Error("the lane lent nothing")
	}
	checkBalanced(t, k, d)
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d loans (%d from the lane), %d cancelled, limit %d", got.Load(), k.laneTakes, cancelled.Load(), lim.Limit())
}
