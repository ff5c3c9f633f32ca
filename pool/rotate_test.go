package pool

import (
	"slices"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// TestRotationPaces: Reset with a window of 4 s over four resources (two
// idle, two lent) retires one at once and one more every second: idle ones
// by Evict when Next says, idle longest first, lent ones on their return
// when their turn is due, kept (and lent again) otherwise. New makes are of
// the new generation and kept; by the end of the window none of the old is
// left, and Books.Rotating counts them down.
func TestRotationPaces(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p, _ := New[string](Limits{Size: 6}, ward.Ward{})
	for _, v := range []string{"a", "b", "c", "d"} {
		tk := p.Take(t0, 0, 0)
		p.Made(v, tk.Gen, t0, 0)
	}
	p.Give("a", at(1)) // idle longest
	p.Give("b", at(2))
	// c and d stay lent.
	gone := p.Reset(at(10), 4*time.Second)
	if !slices.Equal(gone, []string{"a"}) {
		t.Fatalf("Reset with a window retired %v at once, want [a] (idle longest)", gone)
	}
	if r := p.Books().Rotating; r != 3 {
		t.Fatalf("Rotating = %d, want 3", r)
	}
	next, ok := p.Next()
	if !ok || !next.Equal(at(1010)) {
		t.Fatalf("Next = %v %v, want the next turn at 1.01s", next.Sub(t0), ok)
	}
	if got := p.Evict(at(1009)); len(got) != 0 {
		t.Fatalf("Evict before the turn retired %v", got)
	}
	// c comes back before its turn: kept, and lent again.
	if !p.Give("c", at(500)) {
		t.Fatal("an old resource given back before its turn was not kept")
	}
	if tk := p.Take(at(600), 0, 0); tk.Kind != Ready || tk.Item != "c" {
		t.Fatalf("Take = %+v, want c lent again before its turn", tk)
	}
	if got := p.Evict(at(1010)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Evict at the turn = %v, want [b]", got)
	}
	// d comes back at its turn (2.01s): retired.
	if p.Give("d", at(2010)) {
		t.Fatal("an old resource given back at its turn was kept")
	}
	// A new one is of the new generation: kept.
	tk := p.Take(at(2100), 0, 0)
	if tk.Kind != Make || !p.Made("e", tk.Gen, at(2100), 0) || !p.Give("e", at(2200)) {
		t.Fatal("a resource of the new generation was not kept")
	}
	// c, lent, comes back after the window: retired.
	if p.Give("c", at(5000)) {
		t.Fatal("an old resource given back after the window was kept")
	}
	b := p.Books()
	if b.Rotating != 0 || b.Live != 1 || b.Retired != 4 {
		t.Fatalf("books %+v: want nothing rotating, e live, four retired", b)
	}
	if _, ok := p.Next(); ok {
		t.Fatal("Next still has a turn due with nothing old left")
	}
}

// TestRotationWindowEnds: an old resource idle when the window ends is not
// lent (Take answers Stale), and a Reset during a rotation retires what is
// left of it at once.
func TestRotationWindowEnds(t *testing.T) {
	t0 := time.Unix(100, 0)
	p, _ := New[int](Limits{Size: 4}, ward.Ward{})
	for i := 1; i <= 3; i++ {
		tk := p.Take(t0, 0, 0)
		p.Made(i, tk.Gen, t0, 0)
	}
	for i := 1; i <= 3; i++ {
		p.Give(i, t0)
	}
	p.Reset(t0, time.Minute) // 1 at once, one every 20 s
	if tk := p.Take(t0.Add(2*time.Minute), 0, 0); tk.Kind != Stale {
		t.Fatalf("Take after the window = %v, want Stale", tk.Kind)
	}
	p2, _ := New[int](Limits{Size: 4}, ward.Ward{})
	for i := 1; i <= 3; i++ {
		tk := p2.Take(t0, 0, 0)
		p2.Made(i, tk.Gen, t0, 0)
	}
	for i := 1; i <= 3; i++ {
		p2.Give(i, t0)
	}
	if got := p2.Reset(t0, time.Hour); len(got) != 1 {
		t.Fatalf("first turn retired %v", got)
	}
	if got := p2.Reset(t0.Add(time.Second), 0); len(got) != 2 {
		t.Fatalf("Reset during a rotation retired %v, want the two left", got)
	}
	if b := p2.Books(); b.Rotating != 0 || b.Live != 0 {
		t.Fatalf("books %+v", b)
	}
}
