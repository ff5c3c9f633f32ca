package deadpeer

import (
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// control sets TCP_USER_TIMEOUT to timeout on TCP sockets before they
// connect, so that it bounds the SYN's retransmissions as well.
func control(timeout time.Duration) func(network, address string, c syscall.RawConn) error {
	ms := int(min(timeout.Milliseconds(), 1<<31-1))
	return func(network, _ string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		}); err != nil {
			return err
		}
		return serr
	}
}
