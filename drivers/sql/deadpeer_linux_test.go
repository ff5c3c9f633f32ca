package sqlward

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/drivers/internal/deadpeer/deadpeertest"
)

// TestDeadPeerDialer holds that DeadPeerDialer's connections carry the
// bound as TCP_USER_TIMEOUT, and that a bound of zero leaves it unset.
func TestDeadPeerDialer(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		want    int // ms
	}{{DefaultDeadPeerTimeout, int(DefaultDeadPeerTimeout.Milliseconds())}, {1500 * time.Millisecond, 1500}, {0, 0}} {
		if got := deadpeertest.Dial(t, DeadPeerDialer(c.timeout)).UserTimeout; got != c.want {
			t.Errorf("DeadPeerDialer(%v): TCP_USER_TIMEOUT %d ms, want %d", c.timeout, got, c.want)
		}
	}
}
