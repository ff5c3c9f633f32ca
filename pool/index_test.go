package pool

import (
	"math"
	"testing"

	"github.com/wardpool/wardpool/ward"
	"pgregory.net/rapid"
)

// The index against a map: seats added and removed at random, every
// lookup answered as the map answers, and the table holding exactly the
// seats on the books, each reachable from its hash.
func TestIndexIsAMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var z seats[int]
		z.init(rapid.IntRange(0, 20).Draw(rt, "capacity"), false)
		model := map[int]int32{}
		// Few distinct items, so lookups hit and miss alike, and many
		// removals, so slots are marked gone, reused and rebuilt away.
		item := rapid.IntRange(-30, 30)
		for range rapid.IntRange(1, 300).Draw(rt, "steps") {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				v := item.Draw(rt, "add")
				if _, held := model[v]; held {
					continue // a pool never seats an item twice
				}
				model[v] = z.add(v, 0, 0)
			case 1:
				if len(model) == 0 {
					continue
				}
				v := item.Draw(rt, "remove")
				i, held := model[v]
				if !held {
					continue
				}
				z.remove(i)
				delete(model, v)
			}
			v := item.Draw(rt, "find")
			i, ok := z.find(v)
			want, wantOK := model[v]
			if ok != wantOK || (ok && i != want) {
				rt.Fatalf("find(%d) = %d, %v; the map says %d, %v", v, i, ok, want, wantOK)
			}
			checkIndex(rt, &z, len(model))
		}
	})
}

// checkIndex holds the table to its invariants: n seats in it, each a seat
// on the books, each found from its item, no seat twice, the marks
// counted, live slots and marks at most three quarters of the table.
func checkIndex[T comparable](t interface{ Fatalf(string, ...any) }, z *seats[T], n int) {
	seen, gone := map[int32]bool{}, 0
	for _, v := range z.slots {
		if v == -1 {
			gone++
		}
		if v <= 0 {
			continue
		}
		i := v - 1
		if seen[i] {
			t.Fatalf("seat %d is in the index twice", i)
		}
		seen[i] = true
		if st := z.s[i].st(); st != idle && st != lent {
			t.Fatalf("the index names seat %d, which is %v", i, st)
		}
		if got, ok := z.find(z.s[i].item); z.s[i].item == z.s[i].item && (!ok || got != i) {
			t.Fatalf("seat %d is in the index but not found from its item (%d, %v)", i, got, ok)
		}
	}
	if len(seen) != n || z.indexed != n {
		t.Fatalf("the index holds %d seats (counts %d), want %d", len(seen), z.indexed, n)
	}
	if gone != z.gone {
		t.Fatalf("the index has %d slots marked gone, and counts %d", gone, z.gone)
	}
	if (z.indexed+z.gone)*4 > len(z.slots)*3 {
		t.Fatalf("%d seats and %d marks in %d slots: over three quarters full", z.indexed, z.gone, len(z.slots))
	}
}

// Items equal to nothing, not even themselves (NaN), are never found, as
// in a map, but leave the index with their seats, while equal items that
// are not the same bits (0 and -0) find each other.
func TestIndexOddFloats(t *testing.T) {
	var z seats[float64]
	z.init(0, false)
	nan := math.NaN()
	var seatsOfNaN []int32
	for range 20 {
		seatsOfNaN = append(seatsOfNaN, z.add(nan, 0, 0))
	}
	zero := z.add(0, 0, 0)
	if i, ok := z.find(math.Copysign(0, -1)); !ok || i != zero {
		t.Fatalf("-0 not found as 0: %d, %v", i, ok)
	}
	if _, ok := z.find(nan); ok {
		t.Fatal("found a NaN")
	}
	checkIndex(t, &z, 21)
	for _, i := range seatsOfNaN {
		z.remove(i)
	}
	checkIndex(t, &z, 1)
	if i, ok := z.find(0); !ok || i != zero {
		t.Fatalf("0 lost among the NaNs' removals: %d, %v", i, ok)
	}
}

// A struct and an interface as items: hashed by value, as a map would.
func TestIndexOtherKinds(t *testing.T) {
	type addr struct {
		host string
		port int
	}
	var z seats[addr]
	z.init(0, false)
	for n := range 100 {
		z.add(addr{"db", n}, 0, 0)
	}
	for n := range 100 {
		if i, ok := z.find(addr{"db", n}); !ok || z.s[i].item.port != n {
			t.Fatalf("addr %d: %d, %v", n, i, ok)
		}
	}
	var w seats[any]
	w.init(0, false)
	a, b := w.add(1, 0, 0), w.add("1", 0, 0)
	if i, ok := w.find(1); !ok || i != a {
		t.Fatal("the int 1 not found")
	}
	if i, ok := w.find("1"); !ok || i != b {
		t.Fatal(`the string "1" not found`)
	}
	if _, ok := w.find(int64(1)); ok {
		t.Fatal("an int64 1 found as the int 1")
	}
}

// Removals and insertions at a steady count rebuild the index now and then,
// not at every step: a rebuild allocates the new table, so the allocations
// per step say how often it happens.
func TestIndexRebuildsSeldom(t *testing.T) {
	// 90 resources in a table of 128: over half of what it may hold, so
	// the first rebuild must double it, or it would fill up again at once.
	var z seats[int]
	z.init(64, false)
	live := make([]int32, 0, 90)
	for n := range 90 {
		live = append(live, z.add(n, 0, 0))
	}
	next := 90
	step := func() {
		i := live[next%len(live)]
		z.remove(i)
		live[next%len(live)] = z.add(next, 0, 0)
		next++
	}
	for range 1000 {
		step() // past the first rebuilds
	}
	if a := testing.AllocsPerRun(2000, step); a > 0.05 {
		t.Fatalf("%.2f allocations a step: the index is rebuilt every few steps", a)
	}
	if len(z.slots) != 256 {
		t.Fatalf("%d slots for 90 resources, want 256: a rebuild with live slots over half of three quarters doubles", len(z.slots))
	}
	checkIndex(t, &z, 90)
}

// A NaN resource is made and lent like any other, but never recognised on
// its way back, as the Pool documents: Give and Drop answer false and the
// books still count it lent.
func TestPoolNeverRecognisesANaN(t *testing.T) {
	p, err := New[float64](Limits{Size: 2}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	if tk := p.Take(at(0), 0.5, 0); tk.Kind != Make {
		t.Fatalf("Take = %+v, want Make", tk)
	}
	if !p.Made(nan, at(0)) {
		t.Fatal("Made(NaN) refused")
	}
	if p.Give(nan, at(1)) || p.Drop(nan, at(1)) || p.Holds(nan) {
		t.Fatal("a NaN was recognised")
	}
	if p.Live() != 1 || p.Idle() != 0 {
		t.Fatalf("%d live, %d idle: the NaN should still count as lent", p.Live(), p.Idle())
	}
}
