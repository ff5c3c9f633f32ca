package redisward

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// TestDialerFindsDeadPeers holds that a pool dialling for itself sets
// TCP_USER_TIMEOUT to Config.DeadPeerTimeout (DefaultDeadPeerTimeout when
// zero) and leaves it unset when DeadPeerTimeout is negative.
func TestDialerFindsDeadPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		deadPeer int64 // ms
		want     int
	}{{0, int(DefaultDeadPeerTimeout.Milliseconds())}, {1500, 1500}, {-1, 0}} {
		dial := dialer(&redis.Options{Addr: ln.Addr().String()}, msDuration(c.deadPeer))
		nc, err := dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rc, err := nc.(*net.TCPConn).SyscallConn()
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
		nc.Close()
		if got != c.want {
			t.Errorf("DeadPeerTimeout %d ms: TCP_USER_TIMEOUT %d ms, want %d", c.deadPeer, got, c.want)
		}
	}
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
