package pgxward

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer"
)

// DefaultDeadPeerTimeout is the bound ParseConfig's dialer sets on each
// connection: when the server stops answering at the TCP level (its host
// gone, a link or firewall dropping packets without a reset), the kernel
// closes the connection at most this long after the last packet it got,
// plus a second: through TCP_USER_TIMEOUT for a query in flight or a
// dial's SYN, through keepalive probes for an idle connection. The pool
// then finds it closed at its next use (the ping before the loan fails at
// once) and replaces it. A caller without a deadline is held no longer
// than this by a server that vanished (without it, Linux retransmits for
// about 15 minutes). A server that is alive acknowledges every packet,
// however slow its answer, so a long query is not cut.
const DefaultDeadPeerTimeout = deadpeer.DefaultTimeout

// DeadPeerDialer returns a pgconn.DialFunc whose TCP connections are closed
// by the kernel within timeout (plus a second) of the server's last packet
// when it stops answering, as DefaultDeadPeerTimeout describes.
// ParseConfig puts DeadPeerDialer(DefaultDeadPeerTimeout) in
// ConnConfig.DialFunc; set it again for another bound:
//
//	c.ConnConfig.DialFunc = pgxward.DeadPeerDialer(30 * time.Second)
//
// A timeout of zero or less dials as pgx does (Go's keepalive defaults,
// about 15 s of idleness then 9 probes 15 s apart, and no TCP_USER_TIMEOUT).
// TCP_USER_TIMEOUT is set on Linux only; elsewhere three unanswered
// keepalive probes, 2 s after the last packet and 1 s apart, close an idle
// connection and the caller's deadline bounds a query in flight.
func DeadPeerDialer(timeout time.Duration) pgconn.DialFunc {
	return deadpeer.Dialer(0, timeout).DialContext
}
