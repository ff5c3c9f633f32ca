package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

func classStats() []wardpool.ClassStats {
	return []wardpool.ClassStats{
		{ClassBooks: pool.ClassBooks{Name: "interactive", Held: 2, Taken: 40}, Reserve: 2, Waiting: 1},
		{ClassBooks: pool.ClassBooks{Name: "batch", Held: 6, Taken: 7, HeldBack: 3}, Waiting: 9},
		{ClassBooks: pool.ClassBooks{Name: ""}},
	}
}

// TestCollectorClasses: a pool with classes has the class series, one
// sample per class (the default class labelled "(default)"); one without
// has none.
func TestCollectorClasses(t *testing.T) {
	st := sampleStats()
	st.Classes = classStats()
	c := NewCollector(&fixed{st: st}, Options{})
	const want = `
# HELP wardpool_class_acquires_total Takes of a class that lent an idle resource or started making one.
# TYPE wardpool_class_acquires_total counter
wardpool_class_acquires_total{class="(default)"} 0
wardpool_class_acquires_total{class="batch"} 7
wardpool_class_acquires_total{class="interactive"} 40
# HELP wardpool_class_held_back_total Takes of a class the class rule made wait: at its ceiling, or one more would have eaten into another present class's reserve.
# TYPE wardpool_class_held_back_total counter
wardpool_class_held_back_total{class="(default)"} 0
wardpool_class_held_back_total{class="batch"} 3
wardpool_class_held_back_total{class="interactive"} 0
# HELP wardpool_class_held_resources Resources a class of callers holds now: lent to its callers, or being made for them.
# TYPE wardpool_class_held_resources gauge
wardpool_class_held_resources{class="(default)"} 0
wardpool_class_held_resources{class="batch"} 6
wardpool_class_held_resources{class="interactive"} 2
# HELP wardpool_class_waiting_acquires Callers of a class queued for a resource now.
# TYPE wardpool_class_waiting_acquires gauge
wardpool_class_waiting_acquires{class="(default)"} 0
wardpool_class_waiting_acquires{class="batch"} 9
wardpool_class_waiting_acquires{class="interactive"} 1
`
	names := []string{"wardpool_class_acquires_total", "wardpool_class_held_back_total", "wardpool_class_held_resources", "wardpool_class_waiting_acquires"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	st.Classes = nil
	if n := testutil.CollectAndCount(NewCollector(&fixed{st: st}, Options{}), names...); n != 0 {
		t.Fatalf("%d class samples without classes", n)
	}
}

func TestObserveClasses(t *testing.T) {
	st := sampleStats()
	st.Classes = classStats()
	r, m := newMeter()
	if _, err := Observe(m, &fixed{st: st}, Options{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range collect(t, r) {
		if strings.HasPrefix(p.name, "wardpool.class.") {
			got = append(got, p.String())
		}
	}
	want := []string{
		"wardpool.class.held[{resource}] updown {class=interactive} = 2",
		"wardpool.class.held_back[{acquire}] counter {class=batch} = 3",
		"wardpool.class.acquires[{acquire}] counter {class=(default)} = 0",
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no %s among\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != 12 {
		t.Errorf("%d class points, want 12 (4 series × 3 classes)", len(got))
	}
	if _, err := Observe(m, &fixed{st: st}, Options{Labels: map[string]string{"class": "x"}}); err == nil {
		t.Error("Observe with a class label: no error")
	}
}
