package shared

import (
	"context"
	"errors"
	"github.com/wardpool/wardpool/ward"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedPeriodIsOneQuotaAcrossReplicas(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)} // on a minute
	store := NewMemStore(clock.Now)
	a := NewPeriod(Link{Store: store}, "pay", 3, time.Minute, 0)
	b := NewPeriod(Link{Store: store}, "pay", 3, time.Minute, 0)
	ctx := context.Background()
	now := clock.Now()
	for i, step := range []struct {
		p    *Period
		want ward.Quota
	}{{a, ward.Under}, {b, ward.Under}, {a, ward.Hit}, {b, ward.Over}, {a, ward.Over}} {
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
	if got, err := b.Take(ctx, next); got != ward.Under || err != nil {
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
	p := NewPeriod(Link{Store: NewMemStore(nil)}, "k", 1, time.Hour, 0)
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
		p := NewPeriod(Link{Store: store, Timeout: time.Minute}, "k", quota, time.Hour, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				q, err := p.Take(context.Background(), now)
				if err != nil {
					t.Error(err)
				}
				if q != ward.Over {
					admitted.Add(1)
				}
				if q == ward.Hit {
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

// TestSharedPeriodFallsBackToTheLocalQuota: with the store down, a local
// aligned quota decides (here 2 a minute), the error is returned beside,
// and every decision is counted; a negative local quota admits everything.
func TestSharedPeriodFallsBackToTheLocalQuota(t *testing.T) {
	p := NewPeriod(Link{Store: brokenStore{}}, "k", 10, time.Minute, 2)
	ctx := context.Background()
	now := time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)
	for i, want := range []ward.Quota{ward.Under, ward.Hit, ward.Over} {
		if q, err := p.Take(ctx, now); q != want || !errors.Is(err, errBroken) {
			t.Fatalf("take %d with the store down: %v %v, want %v with the error", i, q, err, want)
		}
	}
	if st := p.Stats(); st.Fallbacks != 3 || st.StoreErrors != 3 || st.Trips != 3 {
		t.Fatalf("stats %+v, want 3 trips, errors and fallbacks", st)
	}
	if left, err := p.Left(ctx, now); left != 10 || err == nil {
		t.Fatalf("Left with the store down: %d %v", left, err)
	}
	open := NewPeriod(Link{Store: brokenStore{}}, "k", 1, time.Minute, -1)
	for range 3 {
		if q, err := open.Take(ctx, now); q != ward.Under || err == nil {
			t.Fatalf("fail-open Take: %v %v", q, err)
		}
	}
}

func TestSharedPeriodEdges(t *testing.T) {
	store := NewMemStore(nil)
	ctx := context.Background()
	none := NewPeriod(Link{Store: store}, "none", 0, time.Minute, 0)
	if q, err := none.Take(ctx, time.Now()); q != ward.Over || err != nil {
		t.Fatalf("quota 0: %v %v, want ward.Over", q, err)
	}
	if neg := NewPeriod(Link{Store: store}, "neg", -5, time.Minute, 0); neg.Quota() != 0 {
		t.Fatalf("negative quota read as %d", neg.Quota())
	}
	if tiny := NewPeriod(Link{Store: store}, "tiny", 1, time.Nanosecond, 0); tiny.Period() != time.Millisecond {
		t.Fatalf("a sub-millisecond period read as %v", tiny.Period())
	}
	// A key that holds something else: Left says so.
	if _, err := store.SetIfAbsent(ctx, NewPeriod(Link{Store: store}, "bad", 1, time.Minute, 0).keyAt(time.Unix(0, 0)), "x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPeriod(Link{Store: store}, "bad", 1, time.Minute, 0).Left(ctx, time.Unix(0, 0)); err == nil {
		t.Fatal("Left of a key holding text: no error")
	}
}
