package pgxward

import (
	"context"
	"net"
	"testing"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer/deadpeertest"
)

// userTimeout dials a loopback listener with dial and returns the
// connection's TCP_USER_TIMEOUT in milliseconds.
func userTimeout(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) int {
	t.Helper()
	return deadpeertest.Dial(t, dial).UserTimeout
}

// TestParseConfigFindsDeadPeers holds that a user who only calls
// ParseConfig dials with DefaultDeadPeerTimeout, whatever connect_timeout
// says, and that DeadPeerDialer(0) dials as pgx does.
func TestParseConfigFindsDeadPeers(t *testing.T) {
	for _, s := range []string{base, base + "&connect_timeout=3"} {
		cfg, err := ParseConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := userTimeout(t, cfg.ConnConfig.DialFunc), int(DefaultDeadPeerTimeout.Milliseconds()); got != want {
			t.Errorf("%s: TCP_USER_TIMEOUT %d ms, want %d", s, got, want)
		}
	}
	if got := userTimeout(t, DeadPeerDialer(0)); got != 0 {
		t.Errorf("DeadPeerDialer(0): TCP_USER_TIMEOUT %d ms, want 0", got)
	}
}
