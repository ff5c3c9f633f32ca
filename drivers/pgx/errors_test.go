package pgxward

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAcquireErrorText: the message names what the pool was doing, and the
// error is still the context's for errors.Is.
func TestAcquireErrorText(t *testing.T) {
	dial := errors.New("pgxward: connect: refused")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		e    AcquireError
		want string
	}{
		{AcquireError{Err: context.DeadlineExceeded, Busy: 8, Max: 8, Waiting: 3},
			"pgxward: acquire: context deadline exceeded: 8 of 8 connections busy, 3 waiting"},
		{AcquireError{Err: context.Canceled, Busy: 2, Max: 4, Dialing: 1, Leaked: 1, DialErr: dial, DialAt: at},
			"pgxward: acquire: context canceled: 2 of 4 connections busy (1 dialing), 0 waiting, 1 held past LeakAfter; last dial failed at 2026-01-02T03:04:05Z: pgxward: connect: refused"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
		if !errors.Is(&c.e, c.e.Err) {
			t.Errorf("%v is not %v", &c.e, c.e.Err)
		}
	}
}

// TestAcquireErrorOnAHangingServer: against a server that accepts and never
// answers (a listener on loopback that reads nothing), an acquire whose
// context ends says that the pool was dialling. No PostgreSQL is needed.
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
	if ae.Busy != 1 || ae.Dialing != 1 || ae.Max != 2 || ae.DialErr != nil {
		t.Errorf("%+v", ae)
	}
	if !strings.Contains(err.Error(), "1 of 2 connections busy (1 dialing)") {
		t.Errorf("message %q", err)
	}
}
