//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

func start() {
	if err := cli(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sim:", err)
		os.Exit(2)
	}
}
