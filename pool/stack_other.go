//go:build !amd64

package pool

// framePCs is not used where there is no frame-pointer walk of ours:
// capture calls runtime.Callers instead.
func framePCs([]uintptr) int { return 0 }

const walkFrames = false
