package pgxward

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAcquireErrorOnAHangingServer: against a server that accepts and never
// answers (a listener on loopback that reads nothing), an acquire whose
// context ends is pgxward's AcquireError (the Keeper's), saying what the
// pool was doing. No PostgreSQL is needed.
func TestAcquireErrorOnAHangingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := ParseConfig("postgres://app@" + ln.Addr().String() + "/app?sslmode=disable&pool_max_conns=2&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx)
	var ae *AcquireError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
		t.Fatalf("Acquire = %v (%T), want an *AcquireError wrapping DeadlineExceeded", err, err)
	}
	if ae.Busy != 1 || ae.Size != 2 || ae.LastDialError != nil {
		t.Errorf("%+v", ae)
	}
	if !strings.Contains(err.Error(), "1 of 2 resources busy") {
		t.Errorf("message %q", err)
	}
}
