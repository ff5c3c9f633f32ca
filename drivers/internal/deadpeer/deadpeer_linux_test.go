package deadpeer

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer/deadpeertest"
)

// sockopts dials a loopback listener with d and reads back the options
// that bound a dead peer.
func sockopts(t *testing.T, d *net.Dialer) (userTimeout, keepalive, idle, interval int) {
	t.Helper()
	o := deadpeertest.Dial(t, d.DialContext)
	return o.UserTimeout, o.Keepalive, o.Idle, o.Interval
}

func TestDialerSetsTheBound(t *testing.T) {
	ut, ka, idle, intvl := sockopts(t, Dialer(time.Second, DefaultTimeout))
	if ut != int(DefaultTimeout.Milliseconds()) {
		t.Errorf("TCP_USER_TIMEOUT = %d ms, want %d", ut, DefaultTimeout.Milliseconds())
	}
	if ka != 1 || idle != int(Idle.Seconds()) || intvl != int(Interval.Seconds()) {
		t.Errorf("keepalive = %d, idle %d s, interval %d s; want 1, %v, %v", ka, idle, intvl, Idle, Interval)
	}
}

func TestDialerShortBoundShortensKeepalive(t *testing.T) {
	_, _, idle, intvl := sockopts(t, Dialer(0, time.Second))
	if idle != 1 || intvl != 1 {
		t.Errorf("keepalive idle %d s, interval %d s under a 1 s bound; want 1 and 1", idle, intvl)
	}
}

func TestDialerOff(t *testing.T) {
	ut, _, _, _ := sockopts(t, Dialer(0, 0))
	if ut != 0 {
		t.Errorf("TCP_USER_TIMEOUT = %d ms with the bound off, want 0 (the kernel's default)", ut)
	}
}

// TestUnixSocketUntouched holds that a dial to a Unix socket (PostgreSQL's
// local socket) does not fail on a TCP option.
func TestUnixSocketUntouched(t *testing.T) {
	path := t.TempDir() + "/s"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dialer(0, DefaultTimeout).DialContext(context.Background(), "unix", path)
	if err != nil {
		t.Fatalf("dial a Unix socket: %v", err)
	}
	c.Close()
}
