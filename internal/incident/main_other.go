//go:build !unix

package main

import (
	"fmt"
	"os"
)

// main says why there is nothing to run: the harness stops and starts a
// PostgreSQL server with Unix signals (SIGSTOP, SIGCONT).
func main() {
	fmt.Fprintln(os.Stderr, "incident: needs a Unix system: it freezes PostgreSQL with SIGSTOP")
	os.Exit(2)
}
