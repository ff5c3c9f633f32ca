//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisward

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// alive peeks at c's socket without blocking and without consuming
// anything. It returns io.EOF when the peer has closed the connection, the
// socket's error when it has failed, and nil when nothing is waiting or
// something is (RESP3 push messages may arrive on an idle connection;
// go-redis reads them before the next command).
func alive(c net.Conn) error {
	for {
		nc, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = nc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var buf [1]byte
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n == 0 && err == nil:
			perr = io.EOF
		case err == nil:
			// Data is waiting: leave it to the client.
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
			// Nothing waiting: the connection is open.
		default:
			perr = err
		}
		return true
	})
	if err != nil {
		return err
	}
	return perr
}
