//go:build linux

package pool

import (
	"syscall"
	"time"
)

// On Linux the recording benchmarks also report the CPU time their own
// thread spent per operation (cpu-ns/op): on a shared machine the wall
// time of a loop this short swings with whatever else runs, its CPU time
// much less.
func init() {
	threadCPU = func() time.Duration {
		var ru syscall.Rusage
		const rusageThread = 1 // RUSAGE_THREAD
		if err := syscall.Getrusage(rusageThread, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
}
