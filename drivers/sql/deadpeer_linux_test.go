package sqlward

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDeadPeerDialer holds that DeadPeerDialer's connections carry the
// bound as TCP_USER_TIMEOUT, and that a bound of zero leaves it unset.
func TestDeadPeerDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		timeout time.Duration
		want    int // ms
	}{{DefaultDeadPeerTimeout, int(DefaultDeadPeerTimeout.Milliseconds())}, {1500 * time.Millisecond, 1500}, {0, 0}} {
		conn, err := DeadPeerDialer(c.timeout)(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		rc, err := conn.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		conn.Close()
		if got != c.want {
			t.Errorf("DeadPeerDialer(%v): TCP_USER_TIMEOUT %d ms, want %d", c.timeout, got, c.want)
		}
	}
}
