package servers

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo starts a line echo server on loopback, closed when the test ends.
func echo(t *testing.T, prefix string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(prefix + line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, wait time.Duration) (string, error) {
	t.Helper()
	if _, err := c.Write([]byte("x\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	return r.ReadString('\n')
}

// TestProxySwitchBlackHoleCut holds the proxy's promises: it forwards, a
// switch moves new connections only, a black hole holds bytes without
// closing and Lift delivers them, and Cut closes what is open.
func TestProxySwitchBlackHoleCut(t *testing.T) {
	a, b := echo(t, "a"), echo(t, "b")
	p := StartProxy(t, a)
	c1, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	r1 := bufio.NewReader(c1)
	if got, err := roundTrip(t, c1, r1, 5*time.Second); err != nil || got != "ax\n" {
		t.Fatalf("through the proxy: %q %v, want \"ax\\n\"", got, err)
	}
	p.Switch(b)
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	if got, err := roundTrip(t, c2, r2, 5*time.Second); err != nil || got != "bx\n" {
		t.Fatalf("after Switch, a new connection: %q %v, want \"bx\\n\"", got, err)
	}
	if got, err := roundTrip(t, c1, r1, 5*time.Second); err != nil || got != "ax\n" {
		t.Fatalf("after Switch, the old connection: %q %v, want \"ax\\n\"", got, err)
	}
	if p.Accepted() != 2 || p.Open() != 2 {
		t.Fatalf("Accepted %d Open %d, want 2 2", p.Accepted(), p.Open())
	}

	p.BlackHole()
	if got, err := roundTrip(t, c1, r1, 100*time.Millisecond); err == nil {
		t.Fatalf("a black hole answered %q", got)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("in a black hole: %v, want a timeout (nothing closed)", err)
	}
	p.Lift()
	// The held line comes through, then its echo.
	_ = c1.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r1.ReadString('\n'); err != nil || got != "ax\n" {
		t.Fatalf("after Lift: %q %v, want the held \"ax\\n\"", got, err)
	}

	p.Cut()
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r2.ReadString('\n'); err == nil {
		t.Fatal("read on a cut connection succeeded")
	}
}
