package main

import (
	"strings"
	"testing"
)

func TestRoundsTable(t *testing.T) {
	in := `goos: linux
BenchmarkUncontended/pool=wardpool-2   	  200000	        30.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=puddle-2     	  200000	       150.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandoff/pool=wardpool-2       	  200000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandoff/pool=puddle-2         	  200000	       400.0 ns/op	      80 B/op	       1 allocs/op
PASS
BenchmarkUncontended/pool=wardpool-2   	  200000	        40.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkUncontended/pool=puddle-2     	  200000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandoff/pool=wardpool-2       	  200000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandoff/pool=puddle-2         	  200000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHandoff/pool=puddle-2         	  200000	       200.0 ns/op	      90 B/op	       2 allocs/op
BenchmarkHandoff/pool=wardpool-2       	  200000	       100.0 ns/op	       0 B/op	       0 allocs/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out, "puddle"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| benchmark | rounds | wardpool | puddle | wardpool ÷ puddle |",
		// Ratios within each round: 0.2 and 0.4; median 0.3.
		"| Uncontended | 2 | 35 (0) | 125 (0) | 0.30 (0.25–0.35) |",
		// Ratios 0.25, 0.5, 0.5: the median 0.5; allocs the median of 1, 0, 2.
		"| Handoff | 3 | 100 (0) | 200 (1) | 0.50 (0.38–0.50) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if err := run(strings.NewReader("nothing here\n"), &out, "puddle"); err == nil {
		t.Error("no results: want an error")
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 2.5}, {1, 4}, {0.25, 1.75}} {
		if got := quantile(xs, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if xs[0] != 4 {
		t.Error("quantile sorted its input")
	}
}

func TestChart(t *testing.T) {
	in := `BenchmarkScale/size=1/pool=wardpool-2   	  200000	        10.0 ns/op
BenchmarkScale/size=1/pool=puddle-2     	  200000	        40.0 ns/op
BenchmarkScale/size=10/pool=wardpool-2  	  200000	        0.1 ns/op
`
	var out strings.Builder
	if err := runChart(strings.NewReader(in), &out, "puddle", true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"```text\n",
		// The longest bar is chartWidth; the others in proportion, and
		// never shorter than one character.
		"Scale/size=1   puddle    " + strings.Repeat("█", chartWidth) + " 40 ns\n",
		"Scale/size=1   wardpool  " + strings.Repeat("█", chartWidth/4) + " 10 ns\n",
		"Scale/size=10  wardpool  █ 0 ns\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	out.Reset()
	if err := run(strings.NewReader(in), &out, "puddle"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "```") {
		t.Errorf("a chart without -bars:\n%s", out.String())
	}
}
