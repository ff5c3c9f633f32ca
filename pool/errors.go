package pool

import (
	"errors"
	"fmt"

	"github.com/wardpool/wardpool/ward"
)

// ErrClosed is returned by Acquire, TryAcquire and AcquireFunc once Close
// has been called, and to callers waiting when it is.
var ErrClosed = errors.New("wardpool: pool closed")

// ErrShed is what a *ShedError unwraps to: the ward refused the acquire.
var ErrShed = errors.New("wardpool: shed")

// ErrWouldWait is returned by TryAcquire when no resource can be lent
// without waiting.
var ErrWouldWait = errors.New("wardpool: no resource available now")

// ErrConfig is wrapped by the error NewKeeper returns for a Config it cannot
// run with.
var ErrConfig = errors.New("wardpool: invalid config")

// ShedError is the error of an acquire the ward refused at once. It unwraps
// to ErrShed.
type ShedError struct {
	// Guard is the guard that refused: ward.GuardBreaker (the backend has
	// been failing; no new connection) or ward.GuardShedder (the host is hot
	// and the pool full).
	Guard ward.Guard
	// Ratio is the share of new connections the breaker refused at the
	// time, in [0, 1]; zero for other guards.
	Ratio float64
}

// Error says which guard refused and why.
func (e *ShedError) Error() string {
	switch e.Guard {
	case ward.GuardBreaker:
		return fmt.Sprintf("wardpool: shed by the breaker: the backend has been failing and %.0f%% of new connections are refused", 100*e.Ratio)
	case ward.GuardShedder:
		return "wardpool: shed by the shedder: the host's CPU is hot and every resource is busy"
	}
	return "wardpool: shed by the " + e.Guard.String()
}

// Unwrap returns ErrShed.
func (e *ShedError) Unwrap() error { return ErrShed }
