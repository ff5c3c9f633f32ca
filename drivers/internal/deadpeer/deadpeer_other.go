//go:build !linux

package deadpeer

import (
	"syscall"
	"time"
)

// control does nothing where TCP_USER_TIMEOUT is not set: keepalive's
// probe count bounds an idle connection, the caller's deadline one with
// bytes in flight.
func control(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
