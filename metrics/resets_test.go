package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// TestResetsByCause: the resets series has one sample per cause, in both
// exporters; before the first reset only cause="manual", at 0 (a known
// label value is in the scrape from the start); none for a books-only
// Source.
func TestResetsByCause(t *testing.T) {
	st := sampleStats()
	src := &fixed{st: st}
	c := NewCollector(src, Options{Labels: map[string]string{"pool": "a"}})
	before := `# HELP wardpool_resets_total ` + resets.help + `
# TYPE wardpool_resets_total counter
wardpool_resets_total{cause="manual",pool="a"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(before), "wardpool_resets_total"); err != nil {
		t.Fatalf("before any reset: %v", err)
	}
	st.Resets = 3
	st.ResetCauses = map[string]uint64{"25006": 2, wardpool.CauseManual: 1}
	src.set(st)
	want := `# HELP wardpool_resets_total ` + resets.help + `
# TYPE wardpool_resets_total counter
wardpool_resets_total{cause="25006",pool="a"} 2
wardpool_resets_total{cause="manual",pool="a"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "wardpool_resets_total"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("a pedantic registry refuses the scrape: %v", err)
	}

	r, m := newMeter()
	if _, err := Observe(m, src, Options{Labels: map[string]string{"pool": "a"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range collect(t, r) {
		if p.name == "wardpool.resets" {
			got = append(got, p.String())
		}
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "cause=25006,pool=a") || !strings.Contains(strings.Join(got, "\n"), "cause=manual,pool=a") {
		t.Errorf("OpenTelemetry resets points:\n%s", strings.Join(got, "\n"))
	}

	books := FromBooks(func() pool.Books { return st.Books })
	if n := testutil.CollectAndCount(NewCollector(books, Options{}), "wardpool_resets_total"); n != 0 {
		t.Errorf("a books-only Source exported %d resets samples", n)
	}
	if _, err := Observe(m, src, Options{Labels: map[string]string{"cause": "x"}}); err == nil {
		t.Error(`Observe took a "cause" label, the resets series' own`)
	}
}
