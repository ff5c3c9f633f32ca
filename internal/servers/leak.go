package servers

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// VerifyTestMain runs the package's tests, then fails the run when any
// goroutine they started is left, as goleak.VerifyTestMain does, except that
// it first waits, up to five seconds, for go-redis's redial probers to end.
// A go-redis pool that failed a dial starts one (it retries every second
// until a dial succeeds or the pool is closed), so after a test has stopped
// or killed a server of its own, the prober of a client already closed may
// live on for a second more: go-redis's, bounded, and no leak of ours.
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		WaitRedisProbers(5 * time.Second)
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// WaitRedisProbers waits, up to limit, until no go-redis redial prober
// (internal/pool.(*ConnPool).tryDial) is running, and reports whether none
// is.
func WaitRedisProbers(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), "tryDial") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
