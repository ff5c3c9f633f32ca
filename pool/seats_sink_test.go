package pool

import (
	"github.com/wardpool/wardpool/ward"
	"testing"
	"time"
)

// giveSeatAt puts a resource that came back earlier (it sat in the Keeper's
// hot slots) where a Give at that instant would have: eviction by Keep and
// Next read its true return time, and LIFO order is by return time.
func TestGiveSeatAtKeepsReturnOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	p, err := New[string](Limits{Keep: 10 * time.Second}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		if !p.Made(name, at(0)) {
			t.Fatal("Made refused")
		}
	}
	p.Give("a", at(1))
	p.Give("b", at(3))
	p.Give("c", at(5))
	// d came back at 2 but reaches the pool at 6.
	if !p.giveSeatAt(p.seatOf("d"), "d", at(2), at(6)) {
		t.Fatal("giveSeatAt refused")
	}
	if next, ok := p.Next(); !ok || !next.Equal(at(11).Add(1)) {
		t.Fatalf("Next %v, want just after 11s (a's Keep)", next)
	}
	got := p.Evict(at(12).Add(time.Nanosecond))
	if len(got) != 2 || got[0] != "a" || got[1] != "d" {
		t.Fatalf("evicted %v at 12s, want [a d]: d came back at 2s", got)
	}
	// LIFO among the rest: c, then b.
	for _, want := range []string{"c", "b"} {
		if tk := p.Take(at(13), 0, 0); tk.Kind != Ready || tk.Item != want {
			t.Fatalf("Take %+v, want %s", tk, want)
		}
	}
	// A return time after now is read as now; one before the loan began
	// as the loan's start.
	p.giveSeatAt(p.seatOf("b"), "b", at(99), at(14))
	p.giveSeatAt(p.seatOf("c"), "c", at(-5), at(14))
	if next, _ := p.Next(); !next.Equal(at(23).Add(1)) {
		t.Fatalf("Next %v, want just after 23s (c lent at 13)", next)
	}
	if tk := p.Take(at(14), 0, 0); tk.Item != "b" {
		t.Fatalf("Take %+v, want b on top", tk)
	}
}
