// Command tally compares the recordings beside every step file of the
// directories it is given — each reference's (NAME.sqlalchemy.rec,
// NAME.generic-pool.rec, NAME.commons-pool.rec) against wardpool's
// (NAME.wardpool.rec) for the traces whose compare line names that
// reference — prints every difference and the table, and exits 1 when
// anything compared differs. A trace that
// trace.NotCompared keeps from being compared whole, on the evidence
// of the reference's own recording, is counted in a table row that gives the
// reason (for deliberate difference 3: compared up to it, the step itself
// checked, the rest held to the model of SQLAlchemy's rule).
//
//	go run ./conformance/internal/cmd/tally [-replay] DIR...
//
// With -replay, wardpool's recording is made afresh by replaying the steps
// instead of being read from NAME.wardpool.rec.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wardpool/wardpool/conformance/internal/trace"
)

func main() {
	replay := flag.Bool("replay", false, "replay the steps against the pool instead of reading NAME.wardpool.rec")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: tally [-replay] DIR...")
		os.Exit(2)
	}
	var all []trace.Row
	failed := false
	for _, dir := range flag.Args() {
		rows, diffs, err := trace.Tally(dir, *replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tally:", err)
			os.Exit(1)
		}
		for _, d := range diffs {
			fmt.Println(d.String())
			failed = true
		}
		all = append(all, rows...)
	}
	fmt.Println()
	if err := trace.WriteTable(os.Stdout, append(all, trace.Totals(all)...)); err != nil {
		fmt.Fprintln(os.Stderr, "tally:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}
