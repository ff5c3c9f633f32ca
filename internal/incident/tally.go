package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// A sample is one call of the load: how long it took and whether it
// succeeded. done is false for a call still running when the harness gave
// up waiting; took is then how long it had been running.
type sample struct {
	took time.Duration
	ok   bool
	done bool
}

// summary is what the harness reports for one pool in one scenario. An
// overrun is how far past its context's deadline a call returned: took
// minus the timeout, or zero for a call that returned in time.
type summary struct {
	calls, ok, errors int
	late              int           // returned more than lateBy after the deadline
	lateLong          int           // returned more than a second after it
	stuck             int           // had not returned at all
	maxOverrun        time.Duration // the largest overrun, stuck calls included
	p99Overrun        time.Duration // the 99th percentile of the overruns
}

// lateBy is the overrun counted as late: more than scheduling noise on a
// small, busy machine.
const lateBy = 20 * time.Millisecond

// summarize reduces the samples of one pool in one scenario, taken with
// calls bounded by timeout.
func summarize(samples []sample, timeout time.Duration) summary {
	var s summary
	over := make([]time.Duration, 0, len(samples))
	for _, x := range samples {
		s.calls++
		o := max(x.took-timeout, 0)
		over = append(over, o)
		s.maxOverrun = max(s.maxOverrun, o)
		switch {
		case !x.done:
			s.stuck++
		case x.ok:
			s.ok++
		default:
			s.errors++
		}
		if o > lateBy {
			s.late++
		}
		if o > time.Second {
			s.lateLong++
		}
	}
	if len(over) > 0 {
		slices.Sort(over)
		// The smallest overrun at least 99% of the calls did not exceed.
		s.p99Overrun = over[(len(over)*99+99)/100-1]
	}
	return s
}

// ratio formats a/b for the report, or "-" when b is zero.
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", float64(a)/float64(b))
}

// row is one line of the report: a scenario, a pool and its summary.
type row struct {
	scenario, pool string
	s              summary
}

// writeTable prints the rows and, for each scenario, the ratio of the max
// overruns of the first pool to the second's.
func writeTable(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%-9s %-8s %6s %6s %6s %9s %7s %5s %11s %11s\n",
		"scenario", "pool", "calls", "ok", "errors", "late>20ms", "late>1s", "stuck", "p99 overrun", "max overrun")
	for _, r := range rows {
		fmt.Fprintf(w, "%-9s %-8s %6d %6d %6d %9d %7d %5d %11s %11s\n",
			r.scenario, r.pool, r.s.calls, r.s.ok, r.s.errors, r.s.late, r.s.lateLong, r.s.stuck,
			round(r.s.p99Overrun), round(r.s.maxOverrun))
	}
	var ratios []string
	for i := 0; i+1 < len(rows); i += 2 {
		a, b := rows[i], rows[i+1]
		ratios = append(ratios, fmt.Sprintf("%s %s/%s %s", a.scenario, a.pool, b.pool, ratio(a.s.maxOverrun, b.s.maxOverrun)))
	}
	fmt.Fprintf(w, "max overrun ratio: %s\n", strings.Join(ratios, ", "))
}

// round keeps a duration's report to a millisecond.
func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
