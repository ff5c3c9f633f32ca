package wardpool

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// Keeper's dials, timers and sampler must end by Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
