// Command tally compares the recordings beside every step file of the
// directories it is given — each reference's (NAME.sqlalchemy.rec,
// NAME.generic-pool.rec) against wardpool's (NAME.wardpool.rec) for the
// traces whose compare line names that reference — prints every difference
// and the table, and exits 1 when anything differs.
//
//	go run ./scripts/reference/tally [-replay] DIR...
//
// With -replay, wardpool's recording is made afresh by replaying the steps
// instead of being read from NAME.wardpool.rec.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wardpool/wardpool/conformance"
)

func main() {
	replay := flag.Bool("replay", false, "replay the steps against the pool instead of reading NAME.wardpool.rec")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: tally [-replay] DIR...")
		os.Exit(2)
	}
	total := make([]conformance.Row, len(conformance.References))
	failed := false
	for _, dir := range flag.Args() {
		rows, diffs, err := conformance.Tally(dir, *replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tally:", err)
			os.Exit(1)
		}
		for _, d := range diffs {
			fmt.Println(d)
			failed = true
		}
		for i, r := range rows {
			t := &total[i]
			t.Reference = r.Reference
			for _, v := range r.Ran {
				if !contains(t.Ran, v) {
					t.Ran = append(t.Ran, v)
				}
			}
			t.Files += r.Files
			t.Traces += r.Traces
			t.Steps += r.Steps
			t.Handouts += r.Handouts
			t.Refusals += r.Refusals
			t.Differ += r.Differ
		}
	}
	if err := conformance.WriteTable(os.Stdout, total); err != nil {
		fmt.Fprintln(os.Stderr, "tally:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
