//go:build !race

package pool_test

// xRace reports whether the tests run under the race detector (see
// exhaustive_race_test.go).
const xRace = false
