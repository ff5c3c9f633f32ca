// Command replay runs the traces of a step file against wardpool's
// pool.Pool and writes the recording to standard output, in the same format
// as the reference runners.
//
//	go run ./conformance/internal/cmd/replay STEPS > STEPS-BASE.wardpool.rec
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardpool/wardpool/conformance/internal/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: replay STEPS > RECORDING")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	traces, err := trace.ParseSteps(f, filepath.Base(name))
	if err != nil {
		return err
	}
	recs := make([]trace.Recording, 0, len(traces))
	for _, t := range traces {
		r, err := trace.Replay(t)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	w := bufio.NewWriter(os.Stdout)
	if err := trace.WriteRecording(w, recs); err != nil {
		return err
	}
	return w.Flush()
}
