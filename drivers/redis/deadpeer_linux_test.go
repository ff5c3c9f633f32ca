package redisward

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer/deadpeertest"
)

// TestDialerFindsDeadPeers holds that a pool dialling for itself sets
// TCP_USER_TIMEOUT to Config.DeadPeerTimeout (DefaultDeadPeerTimeout when
// zero) and leaves it unset when DeadPeerTimeout is negative.
func TestDialerFindsDeadPeers(t *testing.T) {
	for _, c := range []struct {
		deadPeer time.Duration
		want     int // ms
	}{{0, int(DefaultDeadPeerTimeout.Milliseconds())}, {1500 * time.Millisecond, 1500}, {-time.Millisecond, 0}} {
		dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialer(&redis.Options{Addr: addr}, c.deadPeer)(ctx)
		}
		if got := deadpeertest.Dial(t, dial).UserTimeout; got != c.want {
			t.Errorf("DeadPeerTimeout %v: TCP_USER_TIMEOUT %d ms, want %d", c.deadPeer, got, c.want)
		}
	}
}
