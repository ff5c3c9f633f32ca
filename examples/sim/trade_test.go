package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// Where the ward makes fewer dials to a dead backend and its callers fare
// worse, the comparison says so in one line with both numbers; the chart's
// footer carries the same line.
func TestOutageComparisonNamesTheTrade(t *testing.T) {
	s, _ := engine.Builtin("outage")
	a, err := engine.Run(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Breaker, s.Backoff = false, false
	b, err := engine.Run(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Sum.DeadDials >= b.Sum.DeadDials || a.Sum.P99 <= b.Sum.P99 {
		t.Fatalf("the outage no longer trades: ward %+v, none %+v", a.Sum, b.Sum)
	}
	want := fmt.Sprintf("trade: A's ward made %d dials to a dead backend where B made %d; its callers paid: p99 %v against %v",
		a.Sum.DeadDials, b.Sum.DeadDials, round(a.Sum.P99), round(b.Sum.P99))
	out := sim(t, "-scenario", "outage", "-compare", "ward=none")
	var lines []string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "trade:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("trade lines %q, want one starting %q", lines, want)
	}
	if chart := string(svg(t, "-scenario", "outage", "-compare", "ward=none")); !strings.Contains(chart, want) {
		t.Errorf("the chart's footer has no %q", want)
	}
	// No ward on either side, or a ward whose callers fare no worse: no
	// trade to name.
	for _, args := range [][]string{
		{"-scenario", "slowdown", "-compare", "size=24"},
		{"-scenario", "outage", "-ward", "none", "-compare", "size=24"},
	} {
		if out := sim(t, args...); strings.Contains(out, "trade:") {
			t.Errorf("%v names a trade:\n%s", args, out)
		}
	}
}
