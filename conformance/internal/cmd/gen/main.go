// Command gen draws conformance traces from a seed and writes them as step
// files, one per family (trace.Families: seats, drops, life, idle,
// gaps, and the idle ceiling's ceiling, ceiling-drops, ceiling-gaps), into a
// directory.
//
//	go run ./conformance/internal/cmd/gen -seed 7 -count 50 -out DIR
//
// The same seed and count give the same files on every machine.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wardpool/wardpool/conformance/internal/trace"
)

func main() {
	seed := flag.Uint64("seed", 1, "the seed the traces are drawn from")
	count := flag.Int("count", 25, "how many traces of each family")
	out := flag.String("out", ".", "the directory to write the step files into")
	flag.Parse()
	if flag.NArg() != 0 || *count < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := trace.WriteGenerated(*out, *seed, *count); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
