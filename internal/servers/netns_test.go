package servers

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shortTimeout dials with TCP_USER_TIMEOUT of one second.
var shortTimeout = net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 1000)
	})
	return errors.Join(err, serr)
}}

func ping(c net.Conn, r *bufio.Reader) error {
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	_, err := r.ReadString('\n')
	return err
}

// TestNetnsSilence holds that Silence is a black hole the kernel sees:
// a connection with bytes in flight ends with ETIMEDOUT by
// TCP_USER_TIMEOUT (never a reset), a dial times out (never "no route to
// host"), Established stops listing the connection the kernel gave up,
// while one without the option lives through the silence and works after
// Restore.
func TestNetnsSilence(t *testing.T) {
	ns := StartNetns(t, 1)
	srv := StartRedisIn(t, ns)
	_, portS, _ := net.SplitHostPort(srv.Addr)
	port, _ := strconv.Atoi(portS)
	ctx := context.Background()
	short, err := shortTimeout.DialContext(ctx, "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	plain, err := (&net.Dialer{}).DialContext(ctx, "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	rs, rp := bufio.NewReader(short), bufio.NewReader(plain)
	if err := errors.Join(ping(short, rs), ping(plain, rp)); err != nil {
		t.Fatal(err)
	}
	before, err := Established(ns.Addrs[0], port)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 2 {
		t.Fatalf("Established lists %d connections to %s, want the test's 2", len(before), srv.Addr)
	}

	if err := ns.Silence(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = ping(short, rs)
	took := time.Since(start)
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Errorf("PING on a silent link with TCP_USER_TIMEOUT 1 s: %v after %v, want ETIMEDOUT", err, took)
	}
	if took < 900*time.Millisecond || took > 5*time.Second {
		t.Errorf("the silent link was found dead after %v, want about 1 s", took)
	}
	_, err = shortTimeout.DialContext(ctx, "tcp", srv.Addr)
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Errorf("a dial over the silent link: %v, want ETIMEDOUT", err)
	}
	now, err := Established(ns.Addrs[0], port)
	if err != nil {
		t.Fatal(err)
	}
	if local := short.LocalAddr().(*net.TCPAddr).Port; now[local] {
		t.Errorf("the connection the kernel gave up is still listed as established")
	}
	if _, err := plain.Write([]byte("PING\r\n")); err != nil {
		t.Fatalf("a write on the silent link failed at once: %v", err)
	}

	if err := ns.Restore(); err != nil {
		t.Fatal(err)
	}
	_ = plain.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := rp.ReadString('\n'); err != nil {
		t.Errorf("the connection without TCP_USER_TIMEOUT did not live through the silence: %v", err)
	}
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", srv.Addr)
	if err != nil {
		t.Fatalf("dial after Restore: %v", err)
	}
	c.Close()
}
