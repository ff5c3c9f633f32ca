package pool_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// TestStateHoldsRoomAndHold: a pool read back from its state answers as
// the pool it was written from, with a full backend's room in force and
// then a failover's hold: the two take the same calls and give the same
// answers.
func TestStateHoldsRoomAndHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p, _ := pool.New[uint64](pool.Limits{Size: 6}, ward.Ward{})
	for i := uint64(1); i <= 3; i++ { // seats 0 to 2: the stand-ins read back are the same numbers
		tk := p.Take(t0, 0, 0)
		p.Made(i, tk.Gen, t0, 0)
	}
	p.Take(t0, 0, 0)
	if !p.Unmade(t0, 0, ward.GuardFull) {
		t.Fatal("a full backend with three lent: the caller does not wait")
	}
	read := func() *pool.Pool[uint64] {
		t.Helper()
		state, err := p.AppendState(nil, t0)
		if err != nil {
			t.Fatal(err)
		}
		q, _, n, err := pool.ReadState(state, t0)
		if err != nil || n != len(state) {
			t.Fatalf("ReadState: %v (read %d of %d)", err, n, len(state))
		}
		if diff := cmp.Diff(p.Books(), q.Books()); diff != "" {
			t.Fatalf("books (-written +read):\n%s", diff)
		}
		return q
	}
	// same takes at now on both; a Make is given back as refused by
	// (ward.GuardFull: the backend is full again).
	same := func(q *pool.Pool[uint64], now time.Time, want pool.Kind, guard, by ward.Guard) {
		t.Helper()
		a, b := p.Take(now, 0, 0), q.Take(now, 0, 0)
		if a != b || a.Kind != want || a.Guard != guard {
			t.Fatalf("Take at %v: written %+v, read %+v; want %v by %v", now.Sub(t0), a, b, want, guard)
		}
		if a.Kind == pool.Make {
			if p.Unmade(now, 0, by) != q.Unmade(now, 0, by) {
				t.Fatalf("Unmade at %v: the two differ", now.Sub(t0))
			}
		}
	}
	q := read()
	none, full := ward.GuardNone, ward.GuardFull
	same(q, at(2), pool.Wait, full, none)
	same(q, at(1001), pool.Make, none, full) // the room grew by one; still full
	same(q, at(1002), pool.Wait, full, none)

	hold := pool.Hold{For: 3 * time.Second, Every: 250 * time.Millisecond}
	for _, x := range []*pool.Pool[uint64]{p, q} {
		if _, ok := x.ResetFor(1, at(1003), hold); !ok {
			t.Fatal("no reset")
		}
	}
	q2 := read()
	if !q2.Books().Holding {
		t.Fatal("the hold did not survive the state")
	}
	hold2 := ward.GuardHold
	same(q2, at(3004), pool.Make, none, none) // the hold's first make, past the room's second
	same(q2, at(3005), pool.Wait, hold2, none)
	same(q2, at(3254), pool.Make, none, none)
}

// TestAppendStateUnstateable: a ward whose guard cannot be rebuilt from
// its state (a Breaker not built by NewBreaker) is refused with
// ErrUnstateable, naming it, and dst comes back as it was.
func TestAppendStateUnstateable(t *testing.T) {
	p, err := pool.New[int](pool.Limits{Size: 2}, ward.Ward{Breaker: &ward.Breaker{}})
	if err != nil {
		t.Skipf("a zero Breaker is refused by New already: %v", err)
	}
	dst := []byte("prefix")
	got, err := p.AppendState(dst, time.Unix(0, 0))
	if !errors.Is(err, pool.ErrUnstateable) {
		t.Fatalf("AppendState = %v, want ErrUnstateable", err)
	}
	if string(got) != "prefix" {
		t.Fatalf("dst came back as %q", got)
	}
}
