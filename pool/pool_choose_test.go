package pool

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tests of the pickers (choose.go): Pick over several pools, round
// robin, and smooth weighted choice with its edge cases.

func TestPick(t *testing.T) {
	mk := func(busy int) *Pool[*conn] {
		p := mustNew(t, Limits{})
		for i := 0; i < busy; i++ {
			p.Take(at(0), 0, 0)
		}
		return p
	}
	pools := []*Pool[*conn]{mk(3), mk(1), mk(2)}
	cases := []struct {
		first, second float64
		want          int
	}{
		{0, 0, 1},       // 0 and (0 → 1 after skipping 0): fewer busy wins
		{0.5, 0.9, 1},   // 1 and 2
		{0.9, 0, 0 + 2}, // 2 and 0: 2 has fewer busy
		{math.NaN(), math.Inf(1), 2},
		{-3, 7, 2},
	}
	for _, c := range cases {
		if got := Pick(pools, at(0), c.first, c.second); got != c.want {
			t.Errorf("Pick(%v, %v) = %d, want %d", c.first, c.second, got, c.want)
		}
	}
	if got := Pick[*conn](nil, at(0), 0, 0); got != -1 {
		t.Errorf("Pick(nil) = %d", got)
	}
	if got := Pick(pools[:1], at(0), 0.7, 0.7); got != 0 {
		t.Errorf("Pick of one = %d", got)
	}
	closed := mk(0)
	closed.Close()
	if got := Pick([]*Pool[*conn]{closed, nil, pools[0]}, at(0), 0, 0.1); got != 2 {
		t.Errorf("Pick with closed and nil drawn = %d, want the open one", got)
	}
	if got := Pick([]*Pool[*conn]{closed, nil}, at(0), 0, 0); got != -1 {
		t.Errorf("Pick with none open = %d", got)
	}
}

func TestRoundRobin(t *testing.T) {
	var r RoundRobin
	var got []int
	for range 5 {
		got = append(got, r.Pick(3))
	}
	got = append(got, r.Pick(2), r.Pick(2), r.Pick(0), r.Pick(-1), r.Pick(1))
	want := []int{0, 1, 2, 0, 1, 0, 1, -1, -1, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("picks (-want +got):\n%s", diff)
	}
}

func TestWeightedSmooth(t *testing.T) {
	var w Weighted
	targets := []Target{{"a", 5}, {"b", 1}, {"c", 1}}
	var got string
	for range 14 {
		got += targets[w.Pick(targets)].Name
	}
	if want := "aabacaaaabacaa"; got != want { // nginx's interleaving, twice
		t.Fatalf("sequence %q, want %q", got, want)
	}
}

func TestWeightedEdges(t *testing.T) {
	var w Weighted
	if got := w.Pick(nil); got != -1 {
		t.Fatalf("empty = %d", got)
	}
	if got := w.Pick([]Target{{"a", 0}, {"b", -4}}); got != -1 {
		t.Fatalf("no positive weight = %d", got)
	}
	// Credit is by name: reordering the list does not change who is next.
	w2 := Weighted{}
	w2.Pick([]Target{{"a", 2}, {"b", 1}})
	if got := w2.Pick([]Target{{"b", 1}, {"a", 2}}); got != 0 {
		t.Fatalf("after reorder picked %d, want b (index 0)", got)
	}
	// A repeated name takes part once.
	w3 := Weighted{}
	counts := map[int]int{}
	for range 30 {
		counts[w3.Pick([]Target{{"a", 1}, {"a", 100}, {"b", 1}})]++
	}
	if counts[1] != 0 || counts[0] != 15 || counts[2] != 15 {
		t.Fatalf("counts with repeated name %v", counts)
	}
	// A target that leaves loses its credit.
	w4 := Weighted{}
	w4.Pick([]Target{{"a", 1}, {"b", 1}})
	w4.Pick([]Target{{"b", 1}})
	if _, ok := w4.credit["a"]; ok {
		t.Fatal("credit of a departed target kept")
	}
}
