//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisward

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// peeker looks at one connection's socket without blocking and without
// consuming anything. It is built once per connection so that a look
// allocates nothing; it is used by one goroutine at a time (the borrower's,
// before the connection is lent).
type peeker struct {
	rc  syscall.RawConn // nil when the connection has no socket to look at
	buf [1]byte
	err error
	fn  func(fd uintptr) // p.look, bound once
}

// newPeeker returns a peeker for c, unwrapping TLS (NetConn) to reach the
// socket. A connection with no socket of its own gets a peeker that finds
// every connection open.
func newPeeker(c net.Conn) *peeker {
	p := new(peeker)
	for {
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = nc.NetConn()
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc = rc
		}
	}
	p.fn = p.look
	return p
}

// alive returns io.EOF when the peer has closed the connection, the
// socket's error when it has failed, and nil when nothing is waiting or
// something is (RESP3 push messages may arrive on an idle connection;
// go-redis reads them before the next command).
//
// The look runs through RawConn.Control, not RawConn.Read: Read first
// checks the connection's read deadline, and go-redis leaves each
// command's deadline (ReadTimeout, 3 s by default) set on the connection
// after the reply, so on a connection idle longer than that Read fails
// with a timeout before looking, and a sound connection would be dropped
// and redialled. The recvfrom below never blocks, so it needs neither the
// deadline nor the poller; Control only holds the descriptor open.
func (p *peeker) alive() error {
	if p.rc == nil {
		return nil
	}
	p.err = nil
	if err := p.rc.Control(p.fn); err != nil {
		return err
	}
	return p.err
}

func (p *peeker) look(fd uintptr) {
	n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case n == 0 && err == nil:
		p.err = io.EOF
	case err == nil:
		// Data is waiting: leave it to the client.
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		// Nothing waiting: the connection is open.
	default:
		p.err = err
	}
}

// alive is a one-off newPeeker(c).alive().
func alive(c net.Conn) error { return newPeeker(c).alive() }
