package wardpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestKeeper64On4WithRandomCancels runs 64 goroutines against 4 slots on the
// real (cached) clock, each cancelling some of its acquires at random moments,
// some destroying what they got. At the end nothing is lost: the books
// balance, every resource the dialer opened is either idle in the pool or
// closed, and every acquire ended as a loan or a cancellation.
func TestKeeper64On4WithRandomCancels(t *testing.T) {
	d := &dialer{}
	k, err := NewKeeper(Config[*res]{Limits: pool.Limits{Size: 4}, Dial: d.Dial, Close: d.Close})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 64, 150
	var got, cancelled, inUse, most atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				ctx, cancel := context.WithCancel(bg)
				if r.IntN(4) == 0 {
					spins := r.IntN(50)
					go func() {
						for range spins {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				l, err := k.Acquire(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("Acquire: %v", err)
					}
					cancelled.Add(1)
					cancel()
					continue
				}
				got.Add(1)
				n := inUse.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				inUse.Add(-1)
				if r.IntN(20) == 0 {
					l.Destroy()
				} else {
					l.Release()
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	// A dial for a caller who gave up may still be landing: it goes idle.
	clocktest.Eventually(t, "dials to land", func() bool { return settled(k) })
	s := k.Stats()
	if most.Load() > 4 {
		t.Errorf("%d loans out at once on 4 slots", most.Load())
	}
	if got.Load()+cancelled.Load() != workers*rounds {
		t.Errorf("%d loans + %d cancelled != %d acquires", got.Load(), cancelled.Load(), workers*rounds)
	}
	if s.Acquires != uint64(got.Load()) || s.Canceled != uint64(cancelled.Load()) {
		t.Errorf("stats say %d acquires, %d cancelled; callers saw %d, %d",
			s.Acquires, s.Canceled, got.Load(), cancelled.Load())
	}
	if diff := cmp.Diff(Stats{Books: pool.Books{Busy: 0, Live: s.Idle + s.Busy}, Waiting: 0}, Stats{Books: pool.Books{Busy: s.Busy, Live: s.Live}, Waiting: s.Waiting}); diff != "" {
		t.Errorf("at rest (-want +got):\n%s", diff)
	}
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	if open := d.open(); open != 0 || d.double != 0 {
		t.Errorf("after Close %d open, %d closed twice", open, d.double)
	}
	t.Logf("%d loans, %d cancelled, %d made", got.Load(), cancelled.Load(), s.Made)
}

// TestKeeperServesInArrivalOrderDespiteCancels queues 60 callers behind a
// busy slot in a known order, cancels a random third of them, and then lets
// the loan flow from each to the next: the survivors are served strictly in
// the order they came. (One slot, so that the order of the handoffs is the
// order in which the callers can record it.)
func TestKeeperServesInArrivalOrderDespiteCancels(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)
	const n = 60
	var mu sync.Mutex
	var order []int
	cancels := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, cancel := context.WithCancel(bg)
		cancels[i] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := k.Acquire(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			l.Release() // straight on to the next in line
		}()
		clocktest.Eventually(t, "arrival", func() bool { return k.Stats().Waiting == i+1 })
	}
	r := rand.New(rand.NewPCG(7, 7))
	dropped := map[int]bool{}
	for len(dropped) < n/3 {
		i := r.IntN(n)
		if !dropped[i] {
			dropped[i] = true
			cancels[i]()
		}
	}
	clocktest.Eventually(t, "the cancelled to leave", func() bool { return k.Stats().Waiting == n-n/3 })
	held.Release()
	wg.Wait()
	for _, c := range cancels {
		c()
	}
	if len(order) != n-n/3 {
		t.Fatalf("served %d, want %d", len(order), n-n/3)
	}
	for j, i := range order {
		if dropped[i] {
			t.Fatalf("a cancelled caller %d was served", i)
		}
		if j > 0 && i < order[j-1] {
			t.Fatalf("caller %d served after %d, who came later: %v", i, order[j-1], order)
		}
	}
	checkBalanced(t, k, d)
}
