// Package bench holds wardpool's benchmarks against other Go pools, run side
// by side in one process: see keeper_test.go and the results in README.md.
// It has no API.
package bench
