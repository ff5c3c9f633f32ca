package wardpool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// TestKeeperWaitersHeldBackByBackoffAreServedByTheTimer: room frees up while
// callers wait, the dial made for the first of them fails, and the backoff
// holds the next one back; the one timer serves it when the backoff ends.
func TestKeeperWaitersHeldBackByBackoffAreServedByTheTimer(t *testing.T) {
	d := &dialer{fail: func(n int) error {
		if n == 2 {
			return errDial
		}
		return nil
	}}
	b := ward.DefaultBackoff
	b.Jitter = ward.Jitter{}
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 1},
		Ward:   ward.Ward{Backoff: &b},
		Logger: quietLogger(),
	})
	a := mustAcquire(t, k)
	first := queued(t, k, bg, 1)
	second := queued(t, k, bg, 2)
	a.Destroy() // room: the first waiter's dial starts, and fails
	if r := <-first; !errors.Is(r.err, errDial) {
		t.Fatalf("first waiter: %v", r.err)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(Stats{Books: pool.Books{Deferred: 1}, Waiting: 1, Dialing: 0}, Stats{Books: pool.Books{Deferred: s.Deferred}, Waiting: s.Waiting, Dialing: s.Dialing}); diff != "" {
			t.Fatalf("during the backoff (-want +got):\n%s", diff)
		}
	}
	c.Advance(99 * time.Millisecond)
	if k.Stats().Dialing != 0 {
		t.Fatal("dialed before the backoff ended")
	}
	c.Advance(time.Millisecond)
	r := <-second
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
	checkBalanced(t, k, d)
}

// TestKeeperLimiterWaitIsServedOnRelease: the ward's limiter answers Wait
// though the pool has room; the waiter is served when the lease comes back.
func TestKeeperLimiterWaitIsServedOnRelease(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 4},
		Ward:   ward.Ward{Limiter: ward.NewLimiter(ward.Aimd{Initial: 1, Min: 1, Max: 1})},
	})
	a := mustAcquire(t, k)
	w := queued(t, k, bg, 1)
	{
		s := k.Stats()
		if diff := cmp.Diff(Stats{Books: pool.Books{Live: 1}, Dialing: 0}, Stats{Books: pool.Books{Live: s.Live}, Dialing: s.Dialing}); diff != "" {
			t.Fatalf("the limiter let a second loan start (-want +got):\n%s", diff)
		}
	}
	a.Release()
	r := <-w
	if r.err != nil || r.l.Value() != a.Value() {
		t.Fatalf("waiter got %v, %v", r.l.Value(), r.err)
	}
	r.l.Release()
	checkBalanced(t, k, d)
}

// TestKeeperWaiterHandedABadResourceGetsAnotherUnnoticed: a waiter handed a
// resource that fails its check is not sent to the back of the queue, and
// does not see the failure: the resource is dropped and one is dialed for it.
func TestKeeperWaiterHandedABadResourceGetsAnotherUnnoticed(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits:    pool.Limits{Size: 1},
		CheckIdle: -1,
		Check: func(_ context.Context, r *res) error {
			if r.id == 1 {
				return errors.New("broken")
			}
			return nil
		},
	})
	a := mustAcquire(t, k) // r1, fresh from Dial: not checked
	w := queued(t, k, bg, 1)
	a.Release()
	r := <-w
	if r.err != nil || r.l.Value().id != 2 {
		t.Fatalf("waiter got %v, %v; want r2", r.l.Value(), r.err)
	}
	r.l.Release()
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Dropped: 1}, CheckFailures: 1, Acquires: 2, EmptyAcquires: 2}, Stats{Books: pool.Books{Dropped: s.Dropped}, CheckFailures: s.CheckFailures, Acquires: s.Acquires, EmptyAcquires: s.EmptyAcquires}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	checkBalanced(t, k, d)
}
