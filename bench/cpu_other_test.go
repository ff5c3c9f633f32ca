//go:build !unix

package bench

import "time"

// processCPU reports false: this system's CPU time is not read here.
func processCPU() (time.Duration, bool) { return 0, false }
