// Command rounds reads the output of several runs of the Keeper benchmarks
// (each run a round that measures every pool once, back to back) and prints
// the table bench/README.md gives: per benchmark and pool, the median ns/op
// with allocs/op, and the ratio to the reference pool computed within each
// round, as the median and quartiles of those ratios.
//
//	go test -c -o bench.test ./bench
//	for i in $(seq 20); do
//	  ./bench.test -test.run '^$' -test.bench '^Benchmark(Uncontended|Contended|Handoff)$' -test.benchtime 200000x
//	done > rounds.txt
//	go run ./bench/rounds < rounds.txt
//
// A ratio within a round compares two figures taken seconds apart; on a
// shared machine that is the only comparison that carries over.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line matches one result: name, pool, ns/op, allocs/op (other metrics
// may stand between the two).
var line = regexp.MustCompile(`^Benchmark(\S+)/pool=([\w.-]+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:.*?\s(\d+) allocs/op)?`)

type result struct {
	ns     []float64 // one per round, in order
	allocs []float64 // the same; NaN where a run did not report them
}

func main() {
	ref := flag.String("ref", "puddle", "the pool the others are divided by")
	bars := flag.Bool("bars", false, "after the table, a text chart of the median ns/op of every row")
	flag.Parse()
	if err := runChart(os.Stdin, os.Stdout, *ref, *bars); err != nil {
		fmt.Fprintln(os.Stderr, "rounds:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, ref string) error { return runChart(in, out, ref, false) }

// runChart is run, followed by chart when bars is set.
func runChart(in io.Reader, out io.Writer, ref string, bars bool) error {
	var benches, pools []string
	res := map[[2]string]*result{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return err
		}
		allocs := math.NaN()
		if m[4] != "" {
			allocs, _ = strconv.ParseFloat(m[4], 64)
		}
		key := [2]string{m[1], m[2]}
		r := res[key]
		if r == nil {
			r = &result{}
			res[key] = r
			if !slices.Contains(benches, m[1]) {
				benches = append(benches, m[1])
			}
			if !slices.Contains(pools, m[2]) {
				pools = append(pools, m[2])
			}
		}
		r.ns = append(r.ns, ns)
		r.allocs = append(r.allocs, allocs)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(res) == 0 {
		return fmt.Errorf("no benchmark results on the input")
	}
	others := slices.DeleteFunc(slices.Clone(pools), func(p string) bool { return p == ref })

	fmt.Fprintf(out, "| benchmark | rounds |")
	for _, p := range pools {
		fmt.Fprintf(out, " %s |", p)
	}
	for _, p := range others {
		fmt.Fprintf(out, " %s ÷ %s |", p, ref)
	}
	fmt.Fprintln(out)
	fmt.Fprint(out, "| --- | ---: |", strings.Repeat(" ---: |", len(pools)), strings.Repeat(" --- |", len(others)), "\n")
	for _, b := range benches {
		base := res[[2]string{b, ref}]
		rounds := 0 // the reference's, or the most of any pool's without it
		if base != nil {
			rounds = len(base.ns)
		} else {
			for _, p := range pools {
				if r := res[[2]string{b, p}]; r != nil {
					rounds = max(rounds, len(r.ns))
				}
			}
		}
		fmt.Fprintf(out, "| %s | %d |", b, rounds)
		for _, p := range pools {
			if r := res[[2]string{b, p}]; r != nil {
				fmt.Fprintf(out, " %.0f (%s) |", quantile(r.ns, 0.5), allocs(r.allocs))
			} else {
				fmt.Fprint(out, " – |")
			}
		}
		for _, p := range others {
			r := res[[2]string{b, p}]
			if r == nil || base == nil {
				fmt.Fprint(out, " – |")
				continue
			}
			n := min(len(r.ns), len(base.ns))
			ratios := make([]float64, n)
			for i := range n {
				ratios[i] = r.ns[i] / base.ns[i]
			}
			fmt.Fprintf(out, " %.2f (%.2f–%.2f) |", quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75))
		}
		fmt.Fprintln(out)
	}
	if bars {
		chart(out, benches, pools, res)
	}
	return nil
}

// chartWidth is the length of the longest bar of a chart, in characters.
const chartWidth = 40

// chart prints, as a fenced text block, one bar per benchmark and pool whose
// length is in proportion to the median ns/op (the longest is chartWidth
// characters; every bar at least one), so that a line of rows reads flat
// where the bars are alike. A text chart rather than a picture: it reads
// in a terminal and in a diff, and it is made from the same rounds as the
// table beside it.
func chart(out io.Writer, benches, pools []string, res map[[2]string]*result) {
	top, bw, pw := 0.0, 0, 0
	for k, r := range res {
		top = max(top, quantile(r.ns, 0.5))
		bw, pw = max(bw, len(k[0])), max(pw, len(k[1]))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "```text")
	for _, b := range benches {
		for _, p := range pools {
			r := res[[2]string{b, p}]
			if r == nil {
				continue
			}
			m := quantile(r.ns, 0.5)
			n := 1
			if top > 0 {
				n = max(1, int(math.Round(chartWidth*m/top)))
			}
			fmt.Fprintf(out, "%-*s  %-*s  %s %.0f ns\n", bw, b, pw, p, strings.Repeat("█", n), m)
		}
	}
	fmt.Fprintln(out, "```")
}

// quantile is the q-th quantile of xs by linear interpolation between the
// closest ranks; xs is not changed.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// allocs is the median allocs/op, or "?" when the runs did not report them.
func allocs(xs []float64) string {
	known := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(known) == 0 {
		return "?"
	}
	return strconv.FormatFloat(quantile(known, 0.5), 'f', -1, 64)
}
