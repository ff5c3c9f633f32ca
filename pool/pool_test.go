package pool

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardpool/wardpool/ward"
)

// t0 is an arbitrary origin: the pool only looks at differences.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// conn is a resource handle; pointers are what real pools hold.
type conn struct{ n int }

func (c *conn) String() string { return fmt.Sprintf("c%d", c.n) }

func mustNew(t testing.TB, l Limits) *Pool[*conn] {
	t.Helper()
	p, err := New[*conn](l, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one call in a table: op names the method, the rest its inputs and
// what it must answer.
type step struct {
	ms   int    // now, in ms after t0
	op   string // take made unmade give drop evict close
	c    int    // the conn for made/give/drop; the conn expected for Ready/Stale
	want string // the answer: Kind name for take, true/false, or items for evict/close
	live int    // Live after the step
	idle int    // Idle after the step
}

func run(t *testing.T, p *Pool[*conn], steps []step) {
	t.Helper()
	conns := map[int]*conn{}
	get := func(n int) *conn {
		if conns[n] == nil {
			conns[n] = &conn{n}
		}
		return conns[n]
	}
	names := func(cs []*conn) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.String())
		}
		return strings.Join(s, " ")
	}
	for i, s := range steps {
		now := at(s.ms)
		var got string
		switch s.op {
		case "take":
			tk := p.Take(now, 0.5, 0)
			got = tk.Kind.String()
			if tk.Kind == Ready || tk.Kind == Stale {
				got += " " + tk.Item.String()
				if s.c != 0 && tk.Item != get(s.c) {
					t.Fatalf("step %d %s: got item %v, want c%d", i, s.op, tk.Item, s.c)
				}
			}
			if s.c != 0 {
				got = strings.Fields(got)[0]
			}
		case "made":
			got = fmt.Sprint(p.Made(get(s.c), p.Gen(), now, 0))
		case "unmade":
			p.Unmade(now, 0.5, ward.GuardNone)
			got = ""
		case "give":
			got = fmt.Sprint(p.Give(get(s.c), now))
		case "drop":
			got = fmt.Sprint(p.Drop(get(s.c), now))
		case "evict":
			got = names(p.Evict(now))
		case "close":
			got = names(p.Close())
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if got != s.want {
			t.Fatalf("step %d %s at %dms: got %q, want %q", i, s.op, s.ms, got, s.want)
		}
		if p.Books().Live != s.live || p.Books().Idle != s.idle {
			t.Fatalf("step %d %s at %dms: live %d idle %d, want live %d idle %d",
				i, s.op, s.ms, p.Books().Live, p.Books().Idle, s.live, s.idle)
		}
		checkBooks(t, p)
	}
}

// checkBooks asserts the identities Books documents.
func checkBooks(t testing.TB, p *Pool[*conn]) {
	t.Helper()
	b := p.Books()
	if b.Live != b.Idle+b.Busy {
		t.Fatalf("live %d != idle %d + busy %d", b.Live, b.Idle, b.Busy)
	}
	if got := uint64(b.Live-p.making) + b.Retired + b.Dropped; got != b.Made {
		t.Fatalf("made %d != live-making %d + retired %d + dropped %d", b.Made, b.Live-p.making, b.Retired, b.Dropped)
	}
	if b.Reused > b.Loans {
		t.Fatalf("reused %d > loans %d", b.Reused, b.Loans)
	}
}

func TestTakeMakeWaitReady(t *testing.T) {
	p := mustNew(t, Limits{Size: 2})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{1, "made", 1, "true", 1, 0},
		{2, "take", 0, "Make", 2, 0},
		{3, "made", 2, "true", 2, 0},
		{4, "take", 0, "Wait", 2, 0}, // ceiling: every live slot in use
		{5, "give", 1, "true", 2, 1},
		{6, "give", 2, "true", 2, 2},
		{7, "take", 2, "Ready", 2, 1}, // LIFO: the last given back
		{8, "take", 1, "Ready", 2, 0},
		{9, "take", 0, "Wait", 2, 0},
	})
	want := Books{Live: 2, Busy: 2, Made: 2, Loans: 4, Reused: 2, Waited: 2}
	if diff := cmp.Diff(want, p.Books()); diff != "" {
		t.Fatalf("books (-want +got):\n%s", diff)
	}
}

func TestReservationCountsAsLive(t *testing.T) {
	p := mustNew(t, Limits{Size: 1})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "take", 0, "Wait", 1, 0}, // the reservation holds the only slot
		{1, "unmade", 0, "", 0, 0},
		{2, "take", 0, "Make", 1, 0},
	})
	if b := p.Books(); b.Failed != 1 || b.Made != 0 {
		t.Fatalf("books %+v, want failed 1 made 0", b)
	}
}

func TestKeepRetiresIdleTooLong(t *testing.T) {
	p := mustNew(t, Limits{Size: 3, Keep: 10 * time.Millisecond})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "give", 1, "true", 1, 1},
		{10, "take", 1, "Ready", 1, 0}, // exactly Keep idle: still fresh
		{10, "give", 1, "true", 1, 1},
		{21, "take", 1, "Stale", 0, 0}, // 11 ms idle: past Keep, off the books
		{21, "take", 0, "Make", 1, 0},
	})
	if b := p.Books(); b.Retired != 1 || b.IdleRetired != 1 || b.LifeRetired != 0 {
		t.Fatalf("books %+v", b)
	}
}

func TestLifeRetiresOldEvenIfBusy(t *testing.T) {
	// Give keeps the birth: a resource reused all along still ages.
	p := mustNew(t, Limits{Size: 1, Life: 100 * time.Millisecond})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{40, "give", 1, "true", 1, 1},
		{50, "take", 1, "Ready", 1, 0},
		{90, "give", 1, "true", 1, 1},
		{100, "take", 1, "Ready", 1, 0}, // exactly Life old: fresh
		{101, "give", 1, "true", 1, 1},  // past Life but kept: the next look retires it
		{101, "take", 1, "Stale", 0, 0},
	})
	if b := p.Books(); b.LifeRetired != 1 || b.IdleRetired != 0 {
		t.Fatalf("books %+v", b)
	}
}

func TestMadeJitterExtendsLife(t *testing.T) {
	p := mustNew(t, Limits{Life: 100 * time.Millisecond})
	a, b := &conn{1}, &conn{2}
	p.Take(at(0), 0, 0)
	p.Made(a, p.Gen(), at(0), 50*time.Millisecond)
	p.Take(at(0), 0, 0)
	p.Made(b, p.Gen(), at(0), 0)
	p.Give(a, at(1))
	p.Give(b, at(1))
	got := p.Evict(at(120))
	if len(got) != 1 || got[0] != b {
		t.Fatalf("evict at 120ms = %v, want only c2 (c1's life is 150ms)", got)
	}
	if next, ok := p.Next(); !ok || !next.Equal(at(150).Add(time.Nanosecond)) {
		t.Fatalf("next = %v %v, want just after 150ms", next, ok)
	}
	if got := p.Evict(at(151)); len(got) != 1 || got[0] != a {
		t.Fatalf("evict at 151ms = %v, want c1", got)
	}
}

func TestOnlyTheTopIsLookedAt(t *testing.T) {
	// Take examines the most recently returned resource only: an older one
	// below it past Life waits for Evict (as SQLAlchemy's recycle does).
	p := mustNew(t, Limits{Life: 100 * time.Millisecond})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{50, "take", 0, "Make", 2, 0},
		{50, "made", 2, "true", 2, 0},
		{60, "give", 1, "true", 2, 1},
		{61, "give", 2, "true", 2, 2},
		{120, "take", 2, "Ready", 2, 1}, // c2 is 70 ms old; c1 (120 ms) sits below
		{120, "evict", 0, "c1", 1, 0},
	})
}

func TestIdleCeiling(t *testing.T) {
	p := mustNew(t, Limits{Size: 3, Idle: 1})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "take", 0, "Make", 2, 0},
		{0, "made", 2, "true", 2, 0},
		{1, "give", 1, "true", 2, 1},
		{2, "give", 2, "false", 1, 1}, // one idle already: the caller closes c2
	})
	if b := p.Books(); b.Retired != 1 {
		t.Fatalf("retired %d, want 1", b.Retired)
	}
}

func TestZeroMeansNoLimit(t *testing.T) {
	p := mustNew(t, Limits{})
	for i := 1; i <= 1000; i++ {
		if k := p.Take(at(0), 0, 0).Kind; k != Make {
			t.Fatalf("take %d = %v, want Make with no Size limit", i, k)
		}
		p.Made(&conn{i}, p.Gen(), at(0), 0)
	}
	if p.Books().Live != 1000 {
		t.Fatalf("live %d", p.Books().Live)
	}
	if got := p.Evict(at(1 << 30)); got != nil {
		t.Fatalf("evict with no ages = %v", got)
	}
	if _, ok := p.Next(); ok {
		t.Fatal("Next with no ages should say never")
	}
}

func TestDoubleGiveNeverSeatsTwice(t *testing.T) {
	p := mustNew(t, Limits{Size: 2})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{1, "give", 1, "true", 1, 1},
		// A second give of a handle already idle: the pool cannot tell which
		// holder is right, so it lets go of it altogether for closing.
		{2, "give", 1, "false", 0, 0},
		{3, "take", 0, "Make", 1, 0}, // never hands out the doubled handle
	})
}

func TestMadeTwiceKeepsOneLoan(t *testing.T) {
	p := mustNew(t, Limits{Size: 3})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "take", 0, "Make", 2, 0},
		{0, "made", 1, "true", 1, 0}, // same handle: reservation settled, one loan stands
		{1, "give", 1, "true", 1, 1},
		{2, "give", 1, "false", 0, 0},
	})
	if b := p.Books(); b.Made != 1 || b.Loans != 1 {
		t.Fatalf("books %+v, want made 1 loans 1", b)
	}
}

func TestMadeWithoutReservation(t *testing.T) {
	p := mustNew(t, Limits{Size: 1})
	run(t, p, []step{
		{0, "made", 1, "true", 1, 0},  // room under Size: taken on as lent
		{0, "made", 2, "false", 1, 0}, // no room: refused, the caller closes it
		{1, "give", 1, "true", 1, 1},
	})
}

func TestGiveUnknownFillsReservation(t *testing.T) {
	p := mustNew(t, Limits{Size: 1, Life: 10 * time.Millisecond})
	run(t, p, []step{
		{0, "give", 9, "false", 0, 0}, // foreign, nothing reserved: not kept
		{0, "take", 0, "Make", 1, 0},
		{5, "give", 1, "true", 1, 1},   // made without Made: fills the reservation, born now
		{15, "take", 1, "Ready", 1, 0}, // born at 5 ms, so 10 ms old: fresh
	})
	if b := p.Books(); b.Made != 1 || b.Loans != 2 || b.Reused != 1 {
		t.Fatalf("books %+v", b)
	}
}

func TestDrop(t *testing.T) {
	p := mustNew(t, Limits{Size: 2})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "take", 0, "Make", 2, 0},
		{0, "made", 2, "true", 2, 0},
		{0, "take", 0, "Wait", 2, 0},
		{1, "drop", 1, "true", 1, 0}, // broken: its slot is free again
		{1, "take", 0, "Make", 2, 0},
		{2, "drop", 7, "false", 2, 0}, // unknown: nothing happens
		{3, "give", 2, "true", 2, 1},
		{4, "drop", 2, "true", 1, 0}, // idle ones can be dropped too
		{5, "drop", 2, "false", 1, 0},
	})
	if b := p.Books(); b.Dropped != 2 {
		t.Fatalf("dropped %d", b.Dropped)
	}
}

func TestUnmadeWithoutReservation(t *testing.T) {
	p := mustNew(t, Limits{Size: 1})
	p.Unmade(at(0), 0.5, ward.GuardNone)
	if b := p.Books(); b.Failed != 0 || b.Live != 0 {
		t.Fatalf("books %+v, want nothing counted", b)
	}
}

func TestEvictKeepAndLife(t *testing.T) {
	p := mustNew(t, Limits{Keep: 30 * time.Millisecond, Life: 100 * time.Millisecond})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "take", 0, "Make", 2, 0},
		{0, "made", 2, "true", 2, 0},
		{0, "take", 0, "Make", 3, 0},
		{0, "made", 3, "true", 3, 0},
		{10, "give", 1, "true", 3, 1},
		{20, "give", 2, "true", 3, 2},
		{30, "give", 3, "true", 3, 3},
		{40, "evict", 0, "", 3, 3},   // 30 ms idle exactly: nothing
		{41, "evict", 0, "c1", 2, 2}, // oldest returned goes first
		{55, "evict", 0, "c2", 1, 1},
		{55, "take", 3, "Ready", 1, 0},
		{95, "give", 3, "true", 1, 1},
		{101, "evict", 0, "c3", 0, 0}, // 6 ms idle but 101 ms old
	})
	if b := p.Books(); b.IdleRetired != 2 || b.LifeRetired != 1 {
		t.Fatalf("books %+v", b)
	}
}

func TestNextSaysWhenToEvict(t *testing.T) {
	p := mustNew(t, Limits{Keep: 30 * time.Millisecond})
	if _, ok := p.Next(); ok {
		t.Fatal("empty pool has nothing to expire")
	}
	p.Take(at(0), 0, 0)
	p.Made(&conn{1}, p.Gen(), at(0), 0)
	p.Give(&conn{1}, at(0)) // a different handle: unknown, no reservation
	c := &conn{2}
	p.Take(at(0), 0, 0)
	p.Made(c, p.Gen(), at(0), 0)
	p.Give(c, at(5))
	next, ok := p.Next()
	if !ok || !next.Equal(at(35).Add(time.Nanosecond)) {
		t.Fatalf("next = %v, %v; want 35ms+1ns", next, ok)
	}
	if got := p.Evict(next.Add(-time.Nanosecond)); got != nil {
		t.Fatalf("evict just before next = %v", got)
	}
	if got := p.Evict(next); len(got) != 1 {
		t.Fatalf("evict at next = %v", got)
	}
}

func TestClose(t *testing.T) {
	p := mustNew(t, Limits{Size: 3})
	run(t, p, []step{
		{0, "take", 0, "Make", 1, 0},
		{0, "made", 1, "true", 1, 0},
		{0, "take", 0, "Make", 2, 0},
		{0, "made", 2, "true", 2, 0},
		{0, "take", 0, "Make", 3, 0},
		{1, "give", 1, "true", 3, 1},
		{2, "close", 0, "c1", 2, 0},
		{3, "take", 0, "Closed", 2, 0},
		{4, "give", 2, "false", 1, 0}, // a loan coming home is closed by its holder
		{5, "made", 3, "false", 0, 0}, // the open reservation settles, refused
		{6, "close", 0, "", 0, 0},
		{7, "give", 9, "false", 0, 0},
	})
	if !p.closed {
		t.Fatal("IsClosed false after Close")
	}
	if b := p.Books(); b.Retired != 3 || b.Made != 3 {
		t.Fatalf("books %+v", b)
	}
}

func TestClockGoingBackwardsAgesNothing(t *testing.T) {
	p := mustNew(t, Limits{Keep: 10 * time.Millisecond})
	c := &conn{1}
	p.Take(at(100), 0, 0)
	p.Made(c, p.Gen(), at(100), 0)
	p.Give(c, at(100))
	// The clock steps back 50 ms, then forward again: the pool reads every
	// earlier instant as 100 ms, so c has sat idle 0 ms, then 10 ms.
	if tk := p.Take(at(50), 0, 0); tk.Kind != Ready || tk.Idle != 0 {
		t.Fatalf("take at 50ms = %+v", tk)
	}
	p.Give(c, at(40))
	if got := p.Loans(at(0)); len(got) != 0 {
		t.Fatalf("loans %v", got)
	}
	if tk := p.Take(at(110), 0, 0); tk.Kind != Ready || tk.Idle != 10*time.Millisecond {
		t.Fatalf("take at 110ms = %+v (given back at 100ms as the clock read)", tk)
	}
}

func TestLoansLongestFirst(t *testing.T) {
	p := mustNew(t, Limits{Size: 3})
	a, b := &conn{1}, &conn{2}
	p.Take(at(0), 0, 0)
	p.Made(a, p.Gen(), at(0), 0)
	p.Take(at(200), 0, 0)
	p.Made(b, p.Gen(), at(200), 0)
	got := p.Loans(at(500))
	want := []Lent[*conn]{{a, 500 * time.Millisecond}, {b, 300 * time.Millisecond}}
	// The same *conn, not an equal one: compare the pointers, as == did.
	samePtr := cmp.Comparer(func(x, y *conn) bool { return x == y })
	if diff := cmp.Diff(want, got, samePtr); diff != "" {
		t.Fatalf("loans (-want +got):\n%s", diff)
	}
	p.Give(a, at(600))
	if got := p.Loans(at(700)); len(got) != 1 || got[0].Item != b || got[0].Held != 500*time.Millisecond {
		t.Fatalf("loans after give %v", got)
	}
}

func TestNegativeLimitsRefused(t *testing.T) {
	for _, l := range []Limits{{Size: -1}, {Idle: -1}, {Keep: -1}, {Life: -time.Second}} {
		p, err := New[int](l, ward.Ward{})
		if p != nil || !errors.Is(err, ErrLimits) {
			t.Errorf("New(%+v) = %v, %v; want ErrLimits", l, p, err)
		}
	}
	if err := DefaultLimits.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultLimits(t *testing.T) {
	want := Limits{Size: 10, Idle: 10, Keep: 30 * time.Minute, Life: 0}
	if diff := cmp.Diff(want, DefaultLimits); diff != "" {
		t.Fatalf("DefaultLimits (-want +got):\n%s", diff)
	}
	l := DefaultLimits
	l.Size = 32
	if DefaultLimits.Size != 10 || l.Idle != 10 {
		t.Fatal("a preset must be a value")
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Ready: "Ready", Stale: "Stale", Make: "Make", Wait: "Wait", Later: "Later", Shed: "Shed", Closed: "Closed", 0: "Kind(0)", 99: "Kind(?)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestEvictLargeIdleIsProportionalToExpired(t *testing.T) {
	// 100k idle, none expired: Evict answers from the bottom of the list and
	// the top of the heap without walking the rest. Measured in allocations
	// and in seats visited is not possible from outside, so the check is
	// that nothing expired costs no allocation and that exactly the expired
	// ones come out.
	const n = 100_000
	p := mustNew(t, Limits{Keep: time.Second, Life: time.Hour})
	cs := make([]*conn, n)
	for i := range cs {
		cs[i] = &conn{i}
		p.Take(at(0), 0, 0)
		p.Made(cs[i], p.Gen(), at(0), 0)
	}
	for i, c := range cs {
		p.Give(c, at(i/1000)) // 1000 given back each ms, over 100 ms
	}
	if a := testing.AllocsPerRun(100, func() { p.Evict(at(1000)) }); a != 0 {
		t.Fatalf("evict with nothing expired allocates %v", a)
	}
	if got := p.Evict(at(1002)); len(got) != 2000 {
		t.Fatalf("evict at 1002ms = %d, want the 2000 given back in the first 2 ms", len(got))
	}
}

func TestTakeGiveAllocatesNothing(t *testing.T) {
	p := mustNew(t, Limits{Size: 4, Keep: time.Minute, Life: time.Hour})
	c := &conn{1}
	p.Take(at(0), 0, 0)
	p.Made(c, p.Gen(), at(0), 0)
	p.Give(c, at(0))
	now := at(1)
	if a := testing.AllocsPerRun(1000, func() {
		tk := p.Take(now, 0.5, 0)
		p.Give(tk.Item, now)
	}); a != 0 {
		t.Fatalf("Take+Give allocates %v per run", a)
	}
}

// A Give that reaches the pool after it was asked at a later instant is
// judged by its own return: the smallest case, where the clamp to
// the latest instant lent a resource idle 10 s + 1 ns with Keep 10 s.
func TestLateGiveIsIdleSinceItsOwnReturn(t *testing.T) {
	s := time.Second
	p := mustNew(t, Limits{Size: 4, Keep: 10 * s})
	c1, c2, c3 := &conn{1}, &conn{2}, &conn{3}
	p.Take(t0, 0, 0)
	p.Made(c1, p.Gen(), t0, 0)
	p.Take(t0, 0, 0)
	p.Made(c3, p.Gen(), t0, 0)
	p.Take(t0.Add(35*s), 0, 0)
	p.Made(c2, p.Gen(), t0.Add(35*s), 0)
	if !p.Give(c1, t0.Add(25*s)) { // late: the pool has seen 35 s
		t.Fatal("late Give refused")
	}
	if next, ok := p.Next(); !ok || !next.Equal(t0.Add(35*s+1)) {
		t.Fatalf("Next = %v, %v; want 35s+1ns", next.Sub(t0), ok)
	}
	if tk := p.Take(t0.Add(35*s+1), 0, 0); tk.Kind != Stale || tk.Item != c1 {
		t.Fatalf("Take at 35s+1ns = %v %v, want Stale c1", tk.Kind, tk.Item)
	}
	// The same by Evict, below a resource given back on time.
	p.Give(c2, t0.Add(36*s))
	p.Give(c3, t0.Add(26*s)) // late again
	if gone := p.Evict(t0.Add(36*s + 1)); len(gone) != 1 || gone[0] != c3 {
		t.Fatalf("Evict = %v, want [c3]", gone)
	}
}

// A late Give takes its place among the idle by its instant: a resource
// given back at 2 s, learned of after one given back at 3 s, is lent after
// it, and evicted before it.
func TestLateGiveKeepsReturnOrder(t *testing.T) {
	s := time.Second
	p := mustNew(t, Limits{Size: 3, Keep: 10 * s})
	a, b, c := &conn{1}, &conn{2}, &conn{3}
	for _, x := range []*conn{a, b, c} {
		p.Take(t0, 0, 0)
		p.Made(x, p.Gen(), t0, 0)
	}
	p.Give(a, t0.Add(1*s))
	p.Give(c, t0.Add(3*s))
	p.Give(b, t0.Add(2*s)) // late: below c, above a
	if gone := p.Evict(t0.Add(11*s + 1)); len(gone) != 1 || gone[0] != a {
		t.Fatalf("Evict at 11s+1ns = %v, want [a]", gone)
	}
	if tk := p.Take(t0.Add(12*s), 0, 0); tk.Item != c {
		t.Fatalf("Take = %v, want c (the latest return)", tk.Item)
	}
	if tk := p.Take(t0.Add(12*s+1), 0, 0); tk.Kind != Stale || tk.Item != b {
		t.Fatalf("Take = %v %v, want Stale b (idle since 2s)", tk.Kind, tk.Item)
	}
	// A Give earlier than the loan's own start counts from the start.
	p.Take(t0.Add(20*s), 0, 0) // Make
	d := &conn{4}
	p.Made(d, p.Gen(), t0.Add(20*s), 0)
	p.Give(d, t0.Add(5*s))
	if tk := p.Take(t0.Add(30*s), 0, 0); tk.Kind != Ready || tk.Item != d || tk.Idle != 10*s {
		t.Fatalf("Take = %+v, want Ready d idle 10s (since its loan began)", tk)
	}
}
