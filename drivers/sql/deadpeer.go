package sqlward

import (
	"context"
	"net"
	"time"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer"
)

// DefaultDeadPeerTimeout is the bound DeadPeerDialer is meant to be used
// with, the one pgxward and redisward set by default: a connection to a
// server that stopped answering at the TCP level is closed by the kernel
// at most this long, plus a second, after the last packet it got.
const DefaultDeadPeerTimeout = deadpeer.DefaultTimeout

// DeadPeerDialer returns a dial function whose TCP connections are closed
// by the kernel within timeout (plus a second) of the server's last packet
// when the server stops answering without a reset (its host gone, a link
// or firewall dropping packets): TCP_USER_TIMEOUT (Linux) for a query in
// flight or a dial's SYN, keepalive probes 2 s after the last packet and
// 1 s apart for an idle connection. A timeout of zero or less dials as a
// plain net.Dialer does.
//
// sqlward does not dial: the driver behind the Connector does. Give this
// function to a driver that takes a dialer, for example pgx's stdlib
// (pgconn.DialFunc) or go-sql-driver/mysql (RegisterDialContext):
//
//	cc, _ := pgx.ParseConfig(dsn)
//	cc.DialFunc = sqlward.DeadPeerDialer(sqlward.DefaultDeadPeerTimeout)
//	db, c, err := sqlward.OpenDB(stdlib.GetConnector(*cc), cfg)
func DeadPeerDialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return deadpeer.Dialer(0, timeout).DialContext
}
