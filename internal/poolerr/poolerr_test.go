package poolerr

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/wardpool/wardpool"
)

// A network error keeps being a net.Error through the name, so code that
// asserts err.(net.Error) to ask Timeout (go-redis's suite does) still
// can, and errors.As finds both the *wardpool.PoolError and the
// *net.OpError.
func TestWrapKeepsANetErrorOne(t *testing.T) {
	op := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	err := Wrap("sessions", op)
	ne, ok := err.(net.Error)
	if !ok || !ne.Timeout() {
		t.Fatalf("Wrap(%v) = %T, want a net.Error that is a timeout", op, err)
	}
	var pe *wardpool.PoolError
	var oe *net.OpError
	if !errors.As(err, &pe) || pe.Pool != "sessions" || pe.Err != op || !errors.As(err, &oe) || oe != op {
		t.Fatalf("errors.As through %v", err)
	}
	if err.Error() != "sessions: "+op.Error() || errors.Unwrap(err) != op {
		t.Fatalf("Error %q, Unwrap %v", err, errors.Unwrap(err))
	}
	if Wrap("sessions", err) != err {
		t.Fatal("named twice")
	}
	plain := Wrap("sessions", errors.New("refused"))
	if _, ok := plain.(net.Error); ok {
		t.Fatal("a plain error became a net.Error")
	}
	if Wrap("sessions", context.Canceled) != context.Canceled {
		t.Fatal("a context's error was wrapped")
	}
}

// An error Wrap made names its pool already: wrapped again for the same
// pool it is returned as it is, for another pool it is named again.
func TestWrapNamesOnce(t *testing.T) {
	plain := Wrap("sessions", errors.New("refused"))
	if _, ok := plain.(*wardpool.PoolError); !ok {
		t.Fatalf("Wrap(plain) = %T, want a *wardpool.PoolError", plain)
	}
	if again := Wrap("sessions", plain); again != plain {
		t.Errorf("named twice: %v", again)
	}
	if other := Wrap("orders", plain); other.Error() != "orders: sessions: refused" {
		t.Errorf("another pool's name: %v", other)
	}
	if Wrap("sessions", nil) != nil || Wrap("sessions", context.DeadlineExceeded) != context.DeadlineExceeded {
		t.Error("nil or a context's error was wrapped")
	}
}
