// Package poolname names the drivers' pools in their errors until the
// runtime names them itself: the error type the drivers re-export as
// PoolError, and the default names ("sqlward-1", "pgxward-2@host:port").
package poolname

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
)

// Error is the error of an acquire a named pool refused or could not
// serve: the pool's name, and the runtime's error, which errors.Is and
// errors.As reach through Unwrap.
type Error struct {
	// Pool is the pool's name.
	Pool string
	// Err is the runtime's error.
	Err error
}

// Error is the runtime's error after the driver and the pool's name.
func (e *Error) Error() string { return e.Pool + ": " + e.Err.Error() }

// Unwrap returns the runtime's error.
func (e *Error) Unwrap() error { return e.Err }

// Wrap wraps err in an *Error naming the pool, except nil and a context's
// own error as it is, which callers may compare with ==.
func Wrap(pool string, err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if n, ok := err.(interface{ PoolName() string }); ok && n.PoolName() == pool {
		return err // it names the pool already
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return &netError{&Error{Pool: pool, Err: err}, ne}
	}
	return &Error{Pool: pool, Err: err}
}

// netError is an *Error around a network error (a dial's *net.OpError, a
// timeout) that is a net.Error itself, as the bare error was: code written
// for the driver's peer that asserts err.(net.Error) to ask Timeout keeps
// working. errors.As finds the *Error in it.
type netError struct {
	e  *Error
	ne net.Error // the net.Error in e.Err's chain
}

func (e *netError) Error() string    { return e.e.Error() }
func (e *netError) Unwrap() error    { return e.e.Err }
func (e *netError) PoolName() string { return e.e.Pool }

// Timeout reports whether the network error is a timeout.
func (e *netError) Timeout() bool { return e.ne.Timeout() }

// Temporary reports what the network error's Temporary does: it is in
// net.Error's method set.
func (e *netError) Temporary() bool {
	//lint:ignore SA1019 net.Error's method set has it; we pass it on
	return e.ne.Temporary()
}

// As sets target to the *Error when it is an **Error.
func (e *netError) As(target any) bool {
	if t, ok := target.(**Error); ok {
		*t = e.e
		return true
	}
	return false
}

// pools counts the pools named by default in this process, across drivers.
var pools atomic.Int64

// Default returns the next default name: driver, "-", a number counting the
// pools of the process from 1, and "@"+addr when addr is not empty, as
// HikariCP names its pools HikariPool-1.
func Default(driver, addr string) string {
	s := driver + "-" + strconv.FormatInt(pools.Add(1), 10)
	if addr != "" {
		s += "@" + addr
	}
	return s
}
