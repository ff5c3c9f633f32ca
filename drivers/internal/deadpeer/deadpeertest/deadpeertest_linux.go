// Package deadpeertest reads back, for the drivers' tests, the socket
// options package deadpeer sets on the connections a dialer opens.
package deadpeertest

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// Opts are the options that bound a dead peer, as the kernel reports them:
// TCP_USER_TIMEOUT in milliseconds, SO_KEEPALIVE, and TCP_KEEPIDLE and
// TCP_KEEPINTVL in seconds.
type Opts struct {
	UserTimeout, Keepalive, Idle, Interval int
}

// Dial dials a loopback listener with dial, reads the connection's
// options and closes it; any error fails t.
func Dial(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) Opts {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var o Opts
	var errs [4]error
	if err := rc.Control(func(fd uintptr) {
		o.UserTimeout, errs[0] = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		o.Keepalive, errs[1] = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		o.Idle, errs[2] = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		o.Interval, errs[3] = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return o
}
