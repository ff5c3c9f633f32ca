// Package deadpeer makes the net.Dialer every wardpool driver dials with
// by default: one whose connections are found dead, by the kernel, within
// a bound when the server stops answering at the TCP level (its host gone,
// a link or a firewall silently dropping packets, no RST ever sent).
//
// Two socket options carry the bound, both set before the connect:
//
//   - TCP_USER_TIMEOUT (Linux): bytes sent and not acknowledged for Timeout
//     end the connection with ETIMEDOUT. This covers a query or command in
//     flight, and the SYN of a dial, however long the caller's context.
//     A server that is slow to answer but alive acknowledges what it gets,
//     so a long query is not cut.
//   - TCP keepalive, Idle and Interval below: a connection with nothing in
//     flight (idle in the pool, or waiting on a long query) is probed once
//     it has been quiet for Idle, and on Linux TCP_USER_TIMEOUT ends it
//     once probes have gone unanswered for Timeout since the last word
//     from the server. Elsewhere, Count unanswered probes end it.
//
// So a connection to a vanished server is closed by the kernel at most
// Timeout + Interval after the last packet it got from it, whether it was
// lent or idle. The pool learns it when it next uses the connection: the
// liveness check before a loan (a ping, or a peek at the socket) fails at
// once, and the connection is replaced without the caller seeing it.
package deadpeer

import (
	"net"
	"time"
)

// DefaultTimeout is the bound the drivers use unless told otherwise.
const DefaultTimeout = 5 * time.Second

// The keepalive schedule under a Timeout: the first probe after Idle of
// silence, then one every Interval. Count is used only where there is no
// TCP_USER_TIMEOUT; Idle + Count*Interval is then the bound.
const (
	Idle     = 2 * time.Second
	Interval = time.Second
	Count    = 3
)

// Dialer returns a net.Dialer with connect timeout connect (zero: none but
// the context's) whose TCP connections are found dead within timeout (see
// the package doc). A timeout of zero or less returns a plain net.Dialer
// with Go's keepalive defaults, as most drivers dial.
func Dialer(connect, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connect}
	if timeout <= 0 {
		return d
	}
	d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: min(Idle, timeout), Interval: min(Interval, timeout), Count: Count}
	d.Control = control(timeout)
	return d
}
