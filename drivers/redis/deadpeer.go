package redisward

import (
	"net"
	"time"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer"
)

// DefaultDeadPeerTimeout is Config.DeadPeerTimeout's default: a connection
// to a server that stopped answering at the TCP level is closed by the
// kernel at most this long, plus a second, after the last packet it got
// from it. go-redis's ReadTimeout (3 s by default) already ends a command
// in flight; this bound is what finds an idle connection dead before it
// is lent, and ends a dial whose SYN goes unanswered. TCP_USER_TIMEOUT is
// set on Linux only; elsewhere three unanswered keepalive probes, 2 s
// after the last packet and 1 s apart, close an idle connection.
const DefaultDeadPeerTimeout = deadpeer.DefaultTimeout

// netDialer is the net.Dialer of a pool that dials for itself: connect
// timeout connect, connections found dead within deadPeer (zero:
// DefaultDeadPeerTimeout), or go-redis's own dialer when deadPeer is
// negative.
func netDialer(connect, deadPeer time.Duration) *net.Dialer {
	switch {
	case deadPeer < 0:
		return &net.Dialer{Timeout: connect, KeepAlive: 5 * time.Minute}
	case deadPeer == 0:
		deadPeer = DefaultDeadPeerTimeout
	}
	return deadpeer.Dialer(connect, deadPeer)
}
