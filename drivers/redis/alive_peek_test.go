//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisward

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
)

// peekable reports whether data is waiting on c.
func peekable(c net.Conn) bool {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	var n int
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	})
	return n > 0
}

// TestAlive checks the peek on a loopback TCP pair with no Redis: open and
// quiet, open with data waiting (not consumed), and closed by the peer.
func TestAlive(t *testing.T) {
	c, s := loopbackPair(t)
	if err := alive(c); err != nil {
		t.Fatalf("quiet open connection: %v", err)
	}
	if _, err := s.Write([]byte("+x\r\n")); err != nil {
		t.Fatal(err)
	}
	// The byte is on its way through loopback; read it only after the peek.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	clocktest.Eventually(t, "the condition", func() bool { return peekable(c) })
	if err := alive(c); err != nil {
		t.Fatalf("open connection with data waiting: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+x\r\n" {
		t.Fatalf("the peek consumed data: %q %v", buf, err)
	}
	s.Close()
	clocktest.Eventually(t, "the condition", func() bool { return alive(c) != nil })
	if err := alive(c); !errors.Is(err, io.EOF) {
		t.Fatalf("closed by peer: %v, want io.EOF", err)
	}
}

// TestAliveAfterDeadline peeks at a connection whose read deadline has
// passed, as go-redis leaves one idle longer than its ReadTimeout: the
// connection is open, and the peek must say so rather than fail with the
// deadline's timeout (which would drop and redial every connection idle
// for more than 3 s).
func TestAliveAfterDeadline(t *testing.T) {
	c, s := loopbackPair(t)
	defer s.Close()
	if err := c.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := alive(c); err != nil {
		t.Fatalf("open connection past its read deadline: %v", err)
	}
	s.Close()
	clocktest.Eventually(t, "the condition", func() bool { return alive(c) != nil })
	if err := alive(c); !errors.Is(err, io.EOF) {
		t.Fatalf("closed by peer past its read deadline: %v, want io.EOF", err)
	}
}
