package pool_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// The driver's checks (see pool_model_driver_test.go): after each call,
// that nothing was lost or doubled, that the Pool and the model agree on
// the books, the loans and what comes next, and at the end that everything
// comes back.

// checkFlow checks that nothing was lost or doubled by one call: every item
// that left the books was handed to the caller exactly once, nothing handed
// out is still on the books, and nothing joined the books but the call's own
// item.
func (d *driver) checkFlow(before map[int]bool, handed []int, arg int, hasArg bool) {
	d.t.Helper()
	after := d.m.heldSet()
	count := map[int]int{}
	for _, h := range handed {
		count[h]++
		if count[h] > 1 {
			d.fail("item %d handed out to close twice by one call", h)
		}
		if after[h] {
			d.fail("item %d handed out to close but still on the books", h)
		}
		if !before[h] && !(hasArg && h == arg) {
			d.fail("item %d handed out to close but was never on the books", h)
		}
	}
	for item := range before {
		if !after[item] && count[item] != 1 {
			d.fail("item %d left the books without being handed out to close", item)
		}
	}
	for item := range after {
		if !before[item] && !(hasArg && item == arg) {
			d.fail("item %d joined the books from nowhere", item)
		}
	}
}

// check compares the books and checks the invariants after a call.
func (d *driver) check() {
	d.t.Helper()
	p, m := d.p, d.m
	b := p.Books()
	if want := m.booksNow(); b != want {
		d.fail("Books (-model +pool):\n%s", cmp.Diff(want, b))
	}
	if b.Live != p.Books().Live || b.Idle != p.Books().Idle || b.Busy != p.Books().Busy {
		d.fail("Books gauges %d/%d/%d differ from Live/Idle/Busy %d/%d/%d", b.Live, b.Idle, b.Busy, p.Books().Live, p.Books().Idle, p.Books().Busy)
	}
	if b.Live != b.Idle+b.Busy {
		d.fail("live %d != idle %d + busy %d", b.Live, b.Idle, b.Busy)
	}
	// Above a Size that SetLimits lowered, only loans still out keep the
	// pool over it: nothing is idle.
	if l := m.lim; l.Size > 0 && b.Live > l.Size && (b.Idle > 0 || !d.lowered) {
		d.fail("live %d > size %d with %d idle", b.Live, l.Size, b.Idle)
	}
	if l := m.lim; l.Idle > 0 && b.Idle > l.Idle {
		d.fail("idle %d > idle ceiling %d", b.Idle, l.Idle)
	}
	if b.Idle < 0 || b.Busy < 0 || p.Making() < 0 || p.Making() > b.Busy {
		d.fail("gauges out of range: %+v, making %d", b, p.Making())
	}
	if int(b.Made) != b.Live-p.Making()+int(b.Retired)+int(b.Dropped) {
		d.fail("Made %d != Live %d - making %d + Retired %d + Dropped %d", b.Made, b.Live, p.Making(), b.Retired, b.Dropped)
	}
	if b.IdleRetired+b.LifeRetired > b.Retired || b.Reused > b.Loans {
		d.fail("counters inconsistent: %+v", b)
	}
	pc, bc := counters(d.prev), counters(b)
	for i := range pc {
		if bc[i] < pc[i] {
			d.fail("a counter fell: was %+v, now %+v", d.prev, b)
		}
	}
	d.prev = b
	if p.Making() != m.making {
		d.fail("Making() = %d, want %d", p.Making(), m.making)
	}
	if p.IsClosed() != m.closed {
		d.fail("IsClosed() = %v, want %v", p.IsClosed(), m.closed)
	}
	// Every item the model holds is held, and every item the last call
	// touched is held exactly when the model holds it; with the counts
	// equal, the real pool holds nothing else.
	for _, s := range m.idle {
		if !p.Holds(s.item) {
			d.fail("Holds(%d) = false for an idle item", s.item)
		}
	}
	for _, s := range m.lent {
		if !p.Holds(s.item) {
			d.fail("Holds(%d) = false for a lent item", s.item)
		}
	}
	for _, item := range d.touched {
		if got, want := p.Holds(item), m.holds(item); got != want {
			d.fail("Holds(%d) = %v, want %v", item, got, want)
		}
	}
	d.touched = d.touched[:0]
	if held := len(m.idle) + len(m.lent); held != b.Idle+b.Busy-p.Making() {
		d.fail("%d items held, want idle %d + lent %d", held, b.Idle, b.Busy-p.Making())
	}
	gotAt, gotOK := p.Next()
	wantAt, wantOK := m.next()
	if gotOK != wantOK || !gotAt.Equal(wantAt) {
		d.fail("Next() = %v %v, want %v %v", gotAt, gotOK, wantAt, wantOK)
	}
	if m.started {
		// Loans at the latest instant: it moves nothing.
		d.checkLoans("Loans at the latest instant", p.Loans(m.at()), m.loans(m.at()))
		if err := d.checkLoansDisjoint(p.Loans(m.at())); err != "" {
			d.fail("%s", err)
		}
	}
	if d.w.Limiter != nil && d.w.Limiter.Inflight() != b.Busy {
		d.fail("limiter has %d leases out, want one per busy resource: %d", d.w.Limiter.Inflight(), b.Busy)
	}
	if d.w.Shedder != nil && d.w.Shedder.Flying() != b.Busy {
		d.fail("shedder has %d calls in flight, want one per busy resource: %d", d.w.Shedder.Flying(), b.Busy)
	}
}

// checkLoans compares Loans with the model's: the same loans, the longest
// held first.
func (d *driver) checkLoans(what string, got, want []pool.Lent[int]) {
	d.t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].Held > got[i-1].Held {
			d.fail("%s not longest first: %v", what, got)
		}
	}
	key := func(a, b pool.Lent[int]) int {
		if a.Item != b.Item {
			return a.Item - b.Item
		}
		return int(a.Held - b.Held)
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.SortFunc(g, key)
	slices.SortFunc(w, key)
	if !slices.Equal(g, w) {
		d.fail("%s, sorted (-model +pool):\n%s", what, cmp.Diff(w, g, cmpopts.EquateEmpty()))
	}
}

// checkLoansDisjoint checks no lent handle is also idle or lent twice.
func (d *driver) checkLoansDisjoint(loans []pool.Lent[int]) string {
	seen := map[int]bool{}
	for _, l := range loans {
		if seen[l.Item] {
			return fmt.Sprintf("item %d lent twice: %v", l.Item, loans)
		}
		seen[l.Item] = true
		if !d.p.Holds(l.Item) {
			return fmt.Sprintf("item %d lent but not held", l.Item)
		}
	}
	if idle := d.p.Books().Live - d.p.Making() - len(loans); idle != d.p.Books().Idle {
		return fmt.Sprintf("held minus lent is %d, Idle() is %d", idle, d.p.Books().Idle)
	}
	return ""
}

// finish winds the pool down: close it, bring every loan home, settle every
// reservation; then nothing may be left and everything that entered must
// have been handed out.
func (d *driver) finish() {
	d.t.Helper()
	d.now = d.now.Add(time.Second)
	before := d.m.heldSet()
	got, want := d.c.Close(), d.m.close()
	d.logf("Close() = %v", got)
	if !sameItems(got, want) {
		d.fail("final Close(), in any order (-model +pool):\n%s", diffItems(want, got))
	}
	d.checkFlow(before, got, 0, false)
	for len(d.m.lent) > 0 {
		item := d.m.lent[0].item
		before := d.m.heldSet()
		g, w := d.c.Give(item, d.now), d.m.give(item, d.now)
		d.logf("Give(%d) = %v", item, g)
		if g || w {
			d.fail("Give(%d) after Close: got %v, want false", item, g)
		}
		d.checkFlow(before, []int{item}, item, true)
		d.check()
	}
	for d.m.making > 0 {
		d.c.Unmade(d.now, 0, ward.GuardNone)
		d.m.unmade(d.now, ward.GuardNone)
		d.logf("Unmade")
		d.check()
	}
	if b := d.p.Books(); b.Live != 0 || b.Idle != 0 || b.Busy != 0 {
		d.fail("after winding down: %+v", b)
	}
}

func counters(b pool.Books) []uint64 {
	return []uint64{b.Made, b.Failed, b.Loans, b.Reused, b.Retired, b.IdleRetired, b.LifeRetired, b.Dropped, b.Waited, b.Deferred, b.Shed}
}

// diffItems renders how two lists sameItems calls different differ, both
// sorted. The driver tests with sameItems, which is cheap, and calls
// cmp.Diff only to print a failure.
func diffItems(want, got []int) string {
	return cmp.Diff(want, got, cmpopts.SortSlices(func(a, b int) bool { return a < b }), cmpopts.EquateEmpty())
}

func sameItems(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
