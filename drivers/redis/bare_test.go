package redisward

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestBare checks what a connection's client sees of a bare connection: no
// socket (so go-redis skips its own look at it), a SetDeadline that ignores
// the clear go-redis sends before that look, and every other deadline
// passed through.
func TestBare(t *testing.T) {
	c, s := loopbackPair(t)
	defer s.Close()

	var b net.Conn = bare{c}
	if _, ok := b.(syscall.Conn); ok {
		t.Fatal("a bare connection shows its socket")
	}
	if _, ok := b.(interface{ NetConn() net.Conn }); ok {
		t.Fatal("a bare connection can be unwrapped")
	}

	// A deadline in the past makes a read fail at once; the clear that
	// go-redis sends is ignored, so it still does.
	if err := b.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := b.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the ignored clear: %v, want the deadline's error", err)
	}
	// The deadlines go-redis sets for each command pass through.
	if err := b.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("+")); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Read(buf); n != 1 || err != nil {
		t.Fatalf("read after the read deadline was cleared: %d %v", n, err)
	}
}

// loopbackPair returns the two ends of a TCP connection on 127.0.0.1, no
// Redis behind it: the client's and the server's. Both are closed when the
// test ends (closing one early, to play a peer that left, is fine).
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
