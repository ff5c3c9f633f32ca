package wardpool

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// The one path under stress: from every side at once, racing releases of
// one loan, and counters that never go down.

// TestPathStressNeverLendsOneResourceTwice hammers the Keeper from every
// side at once: acquires and try-acquires, releases (some
// twice, from two goroutines at once), destroys, cancellations, and, beside
// them, Stats, Loans, Reset and the timer. Each resource carries a flag that
// its borrower sets and clears: finding it set means it was lent twice. At
// the end nothing is lost and Close closes everything once.
func TestPathStressNeverLendsOneResourceTwice(t *testing.T) {
	d := &dialer{}
	k, err := NewKeeper(Config[*res]{Limits: pool.Limits{Size: 3, Keep: time.Millisecond}, Dial: d.Dial, Close: d.Close})
	if err != nil {
		t.Fatal(err)
	}
	var lent sync.Map // *res → *atomic.Bool
	flag := func(r *res) *atomic.Bool {
		f, _ := lent.LoadOrStore(r, new(atomic.Bool))
		return f.(*atomic.Bool)
	}
	const workers, rounds = 16, 400
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(1)
	go func() { // readers and resetters beside the traffic
		defer side.Done()
		var last Stats
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := k.Stats()
			if s.Live != s.Idle+s.Busy {
				t.Errorf("books: %+v", s.Books)
			}
			if s.Loans < last.Loans || s.Reused < last.Reused || s.Acquires < last.Acquires {
				t.Errorf("counters went down: loans %d → %d, reused %d → %d, acquires %d → %d",
					last.Loans, s.Loans, last.Reused, s.Reused, last.Acquires, s.Acquires)
			}
			last = s
			_ = k.Loans()
			if i%50 == 0 {
				k.Reset()
			}
			runtime.Gosched()
		}
	}()
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				ctx, cancel := context.WithCancel(bg)
				if r.IntN(8) == 0 {
					cancel()
				}
				var l Loan[*res]
				var err error
				if r.IntN(4) == 0 {
					l, err = k.TryAcquire(ctx)
				} else {
					l, err = k.Acquire(ctx)
				}
				cancel()
				if err != nil {
					continue
				}
				f := flag(l.Value())
				if f.Swap(true) {
					t.Errorf("resource %d lent twice at once", l.Value().id)
				}
				if l.Value().closed.Load() {
					t.Errorf("resource %d lent after it was closed", l.Value().id)
				}
				runtime.Gosched()
				f.Store(false)
				switch r.IntN(10) {
				case 0:
					l.Destroy()
				case 1: // two releases racing: one counts, one is a no-op
					var both sync.WaitGroup
					both.Add(2)
					go func() { defer both.Done(); l.Release() }()
					go func() { defer both.Done(); l.Release() }()
					both.Wait()
				default:
					l.Release()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	side.Wait()
	// At rest once the Keeper's own goroutines are done: a dial for a caller
	// who gave up lands in idle, and the eviction timer (Keep is 1 ms) closes
	// what it retired just after letting the lock go.
	clocktest.Eventually(t, "the Keeper at rest", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.bg == 0 && d.open() == k.p.Books().Live
	})
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Busy: 0, Live: s.Idle + s.Busy}, Waiting: 0}, Stats{Books: pool.Books{Busy: s.Busy, Live: s.Live}, Waiting: s.Waiting}); diff != "" {
		t.Errorf("at rest: %+v, dialer holds %d open (-want +got):\n%s", s, d.open(), diff)
	}
	if err := k.Close(bg); err != nil {
		t.Fatal(err)
	}
	if open := d.open(); open != 0 || d.double != 0 {
		t.Errorf("after Close %d open, %d closed twice", open, d.double)
	}
	t.Logf("%d acquires, %d made, %d double releases", s.Acquires, s.Made, s.DoubleReleases)
}

func TestPathRacingReleasesOfOneLoanLendItOnce(t *testing.T) {
	// Two goroutines release the same loan at once, many times over: on one
	// resource, two try-acquires after each race must not both succeed.
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	mustAcquire(t, k).Release()
	for i := range 5000 {
		l, err := k.TryAcquire(bg)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		start := make(chan struct{})
		var both sync.WaitGroup
		both.Add(2)
		for range 2 {
			go func() { defer both.Done(); <-start; l.Release() }()
		}
		close(start)
		both.Wait()
		x, err1 := k.TryAcquire(bg)
		_, err2 := k.TryAcquire(bg)
		if err1 != nil || err2 == nil {
			t.Fatalf("round %d: after a doubled release, try-acquires answered %v and %v: want one resource, once", i, err1, err2)
		}
		x.Release()
	}
	if s := k.Stats(); s.DoubleReleases != 5000 {
		t.Fatalf("%d double releases counted, want 5000", s.DoubleReleases)
	}
}

func TestPathCountersNeverGoDown(t *testing.T) {
	// A loan is counted as it is made, and a Destroy after it moves
	// neither Loans, Reused nor Acquires.
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	makeParked(t, k)
	l := mustAcquire(t, k)
	s1 := k.Stats()
	l.Destroy()
	s2 := k.Stats()
	if s2.Loans != s1.Loans || s2.Reused != s1.Reused || s2.Acquires != s1.Acquires {
		t.Fatalf("counters moved: loans %d → %d, reused %d → %d, acquires %d → %d",
			s1.Loans, s2.Loans, s1.Reused, s2.Reused, s1.Acquires, s2.Acquires)
	}
	if diff := cmp.Diff(Stats{Books: pool.Books{Loans: 3, Reused: 2}, Acquires: 3}, Stats{Books: pool.Books{Loans: s1.Loans, Reused: s1.Reused}, Acquires: s1.Acquires}); diff != "" {
		t.Fatalf("after three acquires, two of them reuses (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}
