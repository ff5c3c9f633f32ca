//go:build race

package pool_test

// xRace reports whether the tests run under the race detector, which makes
// TestExhaustivePool several times slower: it walks less deep by default.
const xRace = true
