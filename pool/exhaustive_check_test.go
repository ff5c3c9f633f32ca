package pool_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// A run of the exhaustive walk (see exhaustive_test.go): a real Pool and
// the model given the same call, and every answer and the whole state
// compared.

// xRun is a pool with what the walk needs beside it.
type xRun struct {
	p   *pool.Pool[int]
	lim *ward.Limiter
	buf []pool.Lent[int]
}

func newRun(t testing.TB, c xConfig) *xRun {
	var w ward.Ward
	r := &xRun{}
	if c.leases > 0 {
		r.lim = ward.NewLimiter(ward.Aimd{Initial: c.leases, Min: c.leases, Max: c.leases})
		w.Limiter = r.lim
	}
	if c.backoff {
		b := xBackoff
		w.Backoff = &b
	}
	p, err := pool.New[int](c.lim, w)
	if err != nil {
		t.Fatalf("New(%+v): %v", c.lim, err)
	}
	r.p = p
	return r
}

// xAnswer is what a call answered, in one comparable form.
type xAnswer struct {
	taken pool.Taken[int]
	ok    bool
	items []int
}

func (a xAnswer) String() string {
	return fmt.Sprintf("{%v item %d idle %v delay %v guard %v} %v %v",
		a.taken.Kind, a.taken.Item, a.taken.Idle, a.taken.Delay, a.taken.Guard, a.ok, a.items)
}

// apply makes call c on the real pool at the walk's clock now (after a step,
// the new now), then reads the clock as every check does, so that a replay
// feeds the pool exactly what the checked run fed it.
func (r *xRun) apply(c xCall, now time.Time) xAnswer {
	var a xAnswer
	p := r.p
	switch c.op {
	case opTake:
		a.taken = seatless(p, p.Take(now, c.roll, c.cpu))
	case opTakeEarlier:
		a.taken = seatless(p, p.Take(now.Add(-1), 0, 0))
	case opMade:
		gen := p.Gen()
		if c.old {
			gen-- // any generation but the current one; 0-1 wraps to one
		}
		a.ok = p.Made(c.id, gen, now, c.extra)
	case opUnmade:
		a.ok = p.Unmade(now, 0.5, ward.GuardNone)
	case opResetFor:
		a.items, a.ok = p.ResetFor(c.id, now, xHold)
	case opUnmadeFull:
		a.ok = p.Unmade(now, 0.5, ward.GuardFull)
	case opGive:
		a.ok = p.Give(c.id, now)
	case opGiveEarlier:
		a.ok = p.Give(c.id, now.Add(-1))
	case opDrop:
		a.ok = p.Drop(c.id, now)
	case opEvict:
		a.items = p.Evict(now)
	case opClose:
		a.items = p.Close()
	case opFarFirst:
		a.items = p.Evict(time.Time{})
	case opReset:
		a.items = p.Reset(now, 0)
	case opReserve:
		a.ok = p.Reserve(now, 0, 0).Kind == pool.Make
	case opStep:
	}
	r.buf = p.Loans(now)
	return a
}

// ---------------------------------------------------------------- checks

// check compares the real pool after call c with the model, and the pool's
// books with their own identities. prev is the books before the call.
func (r *xRun) check(w *xWorld, c xCall, want, got xAnswer, prev pool.Books) string {
	p, m := r.p, &w.m
	slices.Sort(want.items)
	slices.Sort(got.items)
	// Each check tests with ==, cheap on a walk of millions of calls, and
	// calls cmp.Diff only to print a failure.
	if got.taken != want.taken || got.ok != want.ok || !slices.Equal(got.items, want.items) {
		return fmt.Sprintf("%v answered (-model +pool):\n%s", c,
			cmp.Diff(want, got, cmp.AllowUnexported(xAnswer{}), cmpopts.EquateEmpty()))
	}
	b, wb := p.Books(), m.booksNow()
	if b != wb {
		return fmt.Sprintf("after %v the books (-model +pool):\n%s", c, cmp.Diff(wb, b))
	}
	switch {
	case b.Live != b.Idle+b.Busy:
		return fmt.Sprintf("after %v Live %d != Idle %d + Busy %d", c, b.Live, b.Idle, b.Busy)
	case int64(b.Made) != int64(b.Live-p.Making())+int64(b.Retired)+int64(b.Dropped):
		return fmt.Sprintf("after %v Made %d != Live %d - making %d + Retired %d + Dropped %d",
			c, b.Made, b.Live, p.Making(), b.Retired, b.Dropped)
	case b.IdleRetired+b.LifeRetired > b.Retired || b.Reused > b.Loans:
		return fmt.Sprintf("after %v the books contradict themselves: %+v", c, b)
	case b.Made < prev.Made || b.Failed < prev.Failed || b.Loans < prev.Loans || b.Reused < prev.Reused ||
		b.Retired < prev.Retired || b.IdleRetired < prev.IdleRetired || b.LifeRetired < prev.LifeRetired ||
		b.Dropped < prev.Dropped || b.Waited < prev.Waited || b.Deferred < prev.Deferred || b.Shed < prev.Shed:
		return fmt.Sprintf("after %v a counter fell: %+v, before %+v", c, b, prev)
	case p.Books().Live != b.Live || p.Books().Idle != b.Idle || p.Books().Busy != b.Busy:
		return fmt.Sprintf("after %v Live/Idle/Busy = %d/%d/%d, books say %d/%d/%d",
			c, p.Books().Live, p.Books().Idle, p.Books().Busy, b.Live, b.Idle, b.Busy)
	case p.Making() != m.making || p.IsClosed() != m.closed:
		return fmt.Sprintf("after %v Making %d closed %v, want %d %v", c, p.Making(), p.IsClosed(), m.making, m.closed)
	}
	if r.lim != nil && r.lim.Inflight() != m.busy() {
		return fmt.Sprintf("after %v the limiter holds %d leases for %d busy", c, r.lim.Inflight(), m.busy())
	}
	// Loans: every lent resource with its held time, longest first.
	for i := 1; i < len(r.buf); i++ {
		if r.buf[i].Held > r.buf[i-1].Held {
			return fmt.Sprintf("after %v Loans is not longest first: %v", c, r.buf)
		}
	}
	wantLoans := make([]pool.Lent[int], len(m.lent))
	for i, x := range m.lent {
		wantLoans[i] = pool.Lent[int]{Item: x.id, Held: time.Duration(x.since)}
	}
	gotLoans := slices.Clone(r.buf)
	byItem := func(a, b pool.Lent[int]) int { return a.Item - b.Item }
	slices.SortFunc(wantLoans, byItem)
	slices.SortFunc(gotLoans, byItem)
	if !slices.Equal(gotLoans, wantLoans) {
		return fmt.Sprintf("after %v Loans, by item (-model +pool):\n%s", c, cmp.Diff(wantLoans, gotLoans, cmpopts.EquateEmpty()))
	}
	// Next: exact, or decades away when an extreme extra decides it.
	at, ok := p.Next()
	wat, wok, far := m.next(w.now)
	const decades = 30 * 365 * 24 * time.Hour
	switch {
	case ok != wok:
		return fmt.Sprintf("after %v Next = %v %v, want ok %v", c, at, ok, wok)
	case far == 0 && wok && !at.Equal(wat):
		return fmt.Sprintf("after %v Next = %v, want %v (now %v)", c, at, wat, w.now)
	case far > 0 && !at.Before(w.now.Add(-decades)):
		return fmt.Sprintf("after %v Next = %v, want decades before now %v", c, at, w.now)
	case far < 0 && !at.After(w.now.Add(decades)):
		return fmt.Sprintf("after %v Next = %v, want decades after now %v", c, at, w.now)
	}
	for id := range w.nextID + 1 {
		if p.Holds(id) != m.holds(id) {
			return fmt.Sprintf("after %v Holds(%d) = %v, want %v", c, id, p.Holds(id), m.holds(id))
		}
	}
	return ""
}

// seatless is t without its seat, which the walk's model does not number,
// once the seat is checked against the pool's own SeatOf (a mismatch
// panics, which the walk reports with its path).
func seatless(p *pool.Pool[int], t pool.Taken[int]) pool.Taken[int] {
	if t.Kind == pool.Ready {
		if s := p.SeatOf(t.Item); s != t.Seat {
			panic(fmt.Sprintf("Take lent %d from seat %d, but SeatOf says %d", t.Item, t.Seat, s))
		}
		t.Seat = 0
	}
	// A Stale answer names the seat it left, a Make the generation of its
	// reservation: the walk's model keeps neither (the rapid model checks
	// both).
	t.Seat, t.Gen = 0, 0
	return t
}
