package shared

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCounterSeedScenario is the two-window counter's worked scenario, with
// the events split between two replicas: a limit of 3 per 10 s window
// filled at 0, 1 and 2 s; at 15 s the previous window still weighs half, so
// two more pass (estimates 1.5 and 2.5) and the third is refused (3.5).
func TestCounterSeedScenario(t *testing.T) {
	store := NewMemStore(nil)
	link := Link{Store: store}
	a := NewCounter(link, "api", 3, 10*time.Second, 0)
	b := NewCounter(link, "api", 3, 10*time.Second, 0)
	ctx := context.Background()
	base := time.Unix(1_700_000_000, 0) // a multiple of 10 s
	for i, step := range []struct {
		c    *Counter
		at   time.Duration
		want bool
	}{
		{a, 0, true}, {b, time.Second, true}, {a, 2 * time.Second, true}, {b, 3 * time.Second, false},
		{a, 15 * time.Second, true}, {b, 15 * time.Second, true}, {a, 15 * time.Second, false},
	} {
		got, err := step.c.Take(ctx, base.Add(step.at))
		if err != nil || got != step.want {
			t.Fatalf("take %d at %v: %v %v, want %v", i, step.at, got, err, step.want)
		}
	}
	if a.Limit() != 3 || a.Window() != 10*time.Second {
		t.Fatalf("Limit %d Window %v", a.Limit(), a.Window())
	}
	// The refused takes added nothing: window 1 holds exactly 2.
	cur, _, _ := a.windows(base.Add(15 * time.Second))
	if v, _, _ := store.Get(ctx, cur); v != "2" {
		t.Fatalf("window 1 count %q, want 2", v)
	}
}

// TestCounterAdmitsExactlyTheLimitUnderConcurrency: many replicas taking at
// one instant admit the limit between them, not one more.
func TestCounterAdmitsExactlyTheLimitUnderConcurrency(t *testing.T) {
	store := NewMemStore(nil)
	const replicas, each, limit = 8, 40, 97
	now := time.Unix(1_700_000_000, 0)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range replicas {
		c := NewCounter(Link{Store: store, Timeout: time.Minute}, "k", limit, time.Hour, 0)
		wg.Go(func() {
			for range each {
				ok, err := c.Take(context.Background(), now)
				if err != nil {
					t.Error(err)
				}
				if ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if admitted.Load() != limit {
		t.Fatalf("admitted %d, want %d", admitted.Load(), limit)
	}
}

// TestCounterFallsBack: with the store down the local counter decides, and
// a negative local limit admits everything; a limit of 0 never asks.
func TestCounterFallsBack(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	c := NewCounter(Link{Store: brokenStore{}}, "k", 100, time.Minute, 2)
	var got []bool
	for range 3 {
		ok, err := c.Take(ctx, now)
		if !errors.Is(err, errBroken) {
			t.Fatalf("Take: %v, want the store's error", err)
		}
		got = append(got, ok)
	}
	if !got[0] || !got[1] || got[2] {
		t.Fatalf("local decisions %v, want two admitted then refused", got)
	}
	if st := c.Stats(); st.Fallbacks != 3 || st.StoreErrors != 3 {
		t.Fatalf("stats %+v", st)
	}
	open := NewCounter(Link{Store: brokenStore{}}, "k", 1, time.Minute, -1)
	for range 3 {
		if ok, _ := open.Take(ctx, now); !ok {
			t.Fatal("fail-open counter refused")
		}
	}
	zero := NewCounter(Link{Store: brokenStore{}}, "k", 0, 0, 0)
	if ok, err := zero.Take(ctx, now); ok || err != nil || zero.Stats().Trips != 0 {
		t.Fatalf("limit 0: %v %v, trips %d", ok, err, zero.Stats().Trips)
	}
	if zero.Window() != time.Millisecond {
		t.Fatalf("window 0 read as %v", zero.Window())
	}
	// Text where a count should be is an error, and falls back.
	store := NewMemStore(nil)
	bad := NewCounter(Link{Store: store}, "bad", 5, time.Minute, 1)
	cur, _, _ := bad.windows(now)
	store.SetIfAbsent(ctx, cur, "x", 0)
	if ok, err := bad.Take(ctx, now); !ok || !errors.Is(err, ErrNotInteger) {
		t.Fatalf("Take on text: %v %v", ok, err)
	}
}
