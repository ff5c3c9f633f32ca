package pool

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/wardpool/wardpool/ward"
)

// The index against a model: seats added and removed at random, every
// lookup answered as the model answers, and nothing left behind.
func TestIndexFindsWhatIsSeated(t *testing.T) {
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
			if len(z.index) != len(model) {
				rt.Fatalf("the index holds %d seats, want %d", len(z.index), len(model))
			}
		}
	})
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
	if !p.Made(nan, p.Gen(), at(0), 0) {
		t.Fatal("Made(NaN) refused")
	}
	if p.Give(nan, at(1)) || p.Drop(nan, at(1)) || (p.SeatOf(nan) >= 0) {
		t.Fatal("a NaN was recognised")
	}
	if p.Books().Live != 1 || p.Books().Idle != 0 {
		t.Fatalf("%d live, %d idle: the NaN should still count as lent", p.Books().Live, p.Books().Idle)
	}
}

// A NaN seated and then removed leaves nothing in the index behind it.
func TestIndexForgetsANaN(t *testing.T) {
	var z seats[float64]
	z.init(4, false)
	for range 100 {
		z.remove(z.add(math.NaN(), 0, 0))
	}
	if len(z.index) != 0 {
		t.Fatalf("the index kept %d entries for NaNs removed", len(z.index))
	}
}
