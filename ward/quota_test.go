package ward

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedPeriodIsOneQuotaAcrossReplicas(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)} // on a minute
	store := NewMemStore(clock.Now)
	a := NewSharedPeriod(store, "pay", 3, time.Minute)
	b := NewSharedPeriod(store, "pay", 3, time.Minute)
	ctx := context.Background()
	now := clock.Now()
	for i, step := range []struct {
		p    *SharedPeriod
		want Quota
	}{{a, Under}, {b, Under}, {a, Hit}, {b, Over}, {a, Over}} {
		got, err := step.p.Take(ctx, now.Add(time.Duration(i)*time.Second))
		if err != nil || got != step.want {
			t.Fatalf("take %d: %v %v, want %v", i, got, err, step.want)
		}
	}
	if left, err := b.Left(ctx, now); left != 0 || err != nil {
		t.Fatalf("Left = %d %v, want 0", left, err)
	}
	// The next aligned period starts afresh, for both.
	next := now.Add(a.Next(now.Add(30*time.Second)) + 30*time.Second)
	if !next.Equal(now.Add(time.Minute)) {
		t.Fatalf("next period at %v, want the next minute", next)
	}
	if got, err := b.Take(ctx, next); got != Under || err != nil {
		t.Fatalf("first take of the next period: %v %v", got, err)
	}
	if left, _ := a.Left(ctx, next); left != 2 {
		t.Fatalf("Left in the next period = %d, want 2", left)
	}
	// A period's count expires on the store's clock, after the period.
	clock.Add(3 * time.Minute)
	if _, ok, _ := store.Get(ctx, a.keyAt(now)); ok {
		t.Fatal("an old period's count was left in the store")
	}
}

func TestSharedPeriodAlignsOnTheEpoch(t *testing.T) {
	p := NewSharedPeriod(NewMemStore(nil), "k", 1, time.Hour)
	at := time.Date(2026, 5, 6, 7, 59, 59, 0, time.UTC)
	if d := p.Next(at); d != time.Second {
		t.Fatalf("Next at 07:59:59 = %v, want 1s", d)
	}
	if p.keyAt(at) == p.keyAt(at.Add(time.Second)) {
		t.Fatal("07:59:59 and 08:00:00 named the same period")
	}
	if p.keyAt(at) != p.keyAt(at.Add(-59*time.Minute)) {
		t.Fatal("07:00:59 and 07:59:59 named different periods")
	}
	// Other time zones name the same instant, and so the same period.
	if p.keyAt(at) != p.keyAt(at.In(time.FixedZone("x", 5*3600+1800))) {
		t.Fatal("the zone changed the period")
	}
	// Before 1970 too.
	old := time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC)
	if d := p.Next(old); d != 30*time.Minute {
		t.Fatalf("Next before the epoch = %v, want 30m", d)
	}
}

func TestSharedPeriodAdmitsExactlyTheQuotaUnderConcurrency(t *testing.T) {
	store := NewMemStore(nil)
	const replicas, each, quota = 8, 50, 123
	now := time.Now()
	var admitted, hits atomic.Int64
	var wg sync.WaitGroup
	for range replicas {
		p := NewSharedPeriod(store, "k", quota, time.Hour)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				q, err := p.Take(context.Background(), now)
				if err != nil {
					t.Error(err)
				}
				if q != Over {
					admitted.Add(1)
				}
				if q == Hit {
					hits.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != quota || hits.Load() != 1 {
		t.Fatalf("admitted %d with %d hits, want %d and 1", admitted.Load(), hits.Load(), quota)
	}
}

func TestSharedPeriodFailsOpen(t *testing.T) {
	p := NewSharedPeriod(brokenStore{}, "k", 1, time.Minute)
	ctx := context.Background()
	for range 3 {
		if q, err := p.Take(ctx, time.Now()); q != Under || err == nil {
			t.Fatalf("Take with the store down: %v %v, want admitted with the error", q, err)
		}
	}
	if left, err := p.Left(ctx, time.Now()); left != 1 || err == nil {
		t.Fatalf("Left with the store down: %d %v", left, err)
	}
}

func TestSharedPeriodEdges(t *testing.T) {
	store := NewMemStore(nil)
	ctx := context.Background()
	none := NewSharedPeriod(store, "none", 0, time.Minute)
	if q, err := none.Take(ctx, time.Now()); q != Over || err != nil {
		t.Fatalf("quota 0: %v %v, want Over", q, err)
	}
	if neg := NewSharedPeriod(store, "neg", -5, time.Minute); neg.Quota() != 0 {
		t.Fatalf("negative quota read as %d", neg.Quota())
	}
	if tiny := NewSharedPeriod(store, "tiny", 1, time.Nanosecond); tiny.Period() != time.Millisecond {
		t.Fatalf("a sub-millisecond period read as %v", tiny.Period())
	}
	// A key that holds something else: Left says so.
	if _, err := store.SetIfAbsent(ctx, NewSharedPeriod(store, "bad", 1, time.Minute).keyAt(time.Unix(0, 0)), "x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSharedPeriod(store, "bad", 1, time.Minute).Left(ctx, time.Unix(0, 0)); err == nil {
		t.Fatal("Left of a key holding text: no error")
	}
}
