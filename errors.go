package wardpool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

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

// ErrAcquireTimeout is the Err of the *AcquireError of an Acquire that
// Config.AcquireTimeout ended: the pool's acquire timeout ran out while the
// caller's context had not ended (ctx.Err() is still nil, which tells the
// two apart). It is a deadline of the kind context.DeadlineExceeded is:
// errors.Is(err, context.DeadlineExceeded) holds for it, as it does for the
// context timeout that pgxpool users wrap their Acquire in, and it has a
// Timeout method that reports true; errors.Is(err, context.Canceled) does
// not hold.
var ErrAcquireTimeout error = acquireTimeout{}

// acquireTimeout is ErrAcquireTimeout's type: comparable, so that errors.Is
// finds the sentinel, and a context.DeadlineExceeded besides.
type acquireTimeout struct{}

func (acquireTimeout) Error() string { return "wardpool: the pool's acquire timeout ran out" }

// Is reports that the timeout is a context.DeadlineExceeded too.
func (acquireTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as context.DeadlineExceeded's does.
func (acquireTimeout) Timeout() bool { return true }

// Temporary reports true, as context.DeadlineExceeded's does.
func (acquireTimeout) Temporary() bool { return true }

// ErrConfig is wrapped by the error NewKeeper returns for a Config it cannot
// run with.
var ErrConfig = errors.New("wardpool: invalid config")

// ShedError is the error of an acquire the ward refused at once. It unwraps
// to ErrShed; Cause is reached through the field (or errors.As), not
// errors.Is, so that a shed after dials that timed out is not mistaken for
// the caller's own deadline.
type ShedError struct {
	// Pool is the name of the pool that refused (Config.Name).
	Pool string
	// Guard is the guard that refused: ward.GuardBreaker (the backend has
	// been failing; no new connection) or ward.GuardShedder (the host is hot
	// and the pool full).
	Guard ward.Guard
	// Ratio is the share of new connections the breaker refused at the
	// time, in [0, 1]; zero for other guards.
	Ratio float64
	// Cause is why the breaker opened, as far as the Keeper saw it: the
	// error of the latest failed dial. Nil for other guards, or when no
	// dial has failed.
	Cause error
}

// Error says which pool refused, which guard, and why.
func (e *ShedError) Error() string { return prefix(e.Pool) + e.message() }

func (e *ShedError) message() string {
	switch e.Guard {
	case ward.GuardBreaker:
		s := fmt.Sprintf("wardpool: shed by the breaker: the backend has been failing and %.0f%% of new connections are refused", 100*e.Ratio)
		if e.Cause != nil {
			s += "; last dial error: " + e.Cause.Error()
		}
		return s
	case ward.GuardShedder:
		return "wardpool: shed by the shedder: the host's CPU is hot and every resource is busy"
	}
	return "wardpool: shed by the " + e.Guard.String()
}

// Unwrap returns ErrShed.
func (e *ShedError) Unwrap() error { return ErrShed }

// PoolName returns the name of the pool that refused.
func (e *ShedError) PoolName() string { return e.Pool }

// LateError is the error of an acquire refused at once because the pool
// predicts it would wait longer than its context allows (Config.Admission,
// Pool.Admit): told now instead of failing at its deadline, and the
// callers behind it served sooner. errors.Is(err,
// context.DeadlineExceeded) holds, as it would had the caller waited its
// deadline out, and so does errors.Is(err, ErrShed): the pool refused it.
type LateError struct {
	// Pool is the name of the pool (Config.Name).
	Pool string
	// Predicted is the wait the pool predicted, from the holds it has
	// measured; Within is how long the caller's context allowed.
	Predicted, Within time.Duration
	// Ahead is how many callers were queued before this one.
	Ahead int
	// Class is the caller's class (Config.Classes), "" for the default
	// class and without classes.
	Class string
}

// Error says what was predicted against what was allowed.
func (e *LateError) Error() string {
	class := ""
	if e.Class != "" {
		class = fmt.Sprintf(" (a caller of class %q)", e.Class)
	}
	return fmt.Sprintf("%swardpool: refused at once%s: the predicted wait, %v behind %s, is longer than the %v the context allows",
		prefix(e.Pool), class, e.Predicted.Round(time.Microsecond), plural(e.Ahead, "caller", "callers"), e.Within.Round(time.Microsecond))
}

// Unwrap returns ErrShed and context.DeadlineExceeded.
func (e *LateError) Unwrap() []error { return []error{ErrShed, context.DeadlineExceeded} }

// PoolName returns the name of the pool that refused.
func (e *LateError) PoolName() string { return e.Pool }

// prefix is what an error of the pool named name starts with.
func prefix(name string) string {
	if name == "" {
		return ""
	}
	return name + ": "
}

// plural is n and the word, in the plural unless n is 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// AcquireError is the error of an Acquire whose context ended, or whose
// Config.AcquireTimeout ran out, before it got a resource. It unwraps to the
// context's error, or to ErrAcquireTimeout (errors.Is(err,
// context.DeadlineExceeded) holds for both), and says what the pool was doing: a
// timeout is a symptom, these are its causes. The latest dial error is in
// LastDialError, not in the chain errors.Is walks: a dial that timed out
// must not make a cancelled caller read as one whose deadline passed.
type AcquireError struct {
	// Pool is the name of the pool (Config.Name).
	Pool string
	// Err is the context's error, or ErrAcquireTimeout.
	Err error
	// Waited is how long the acquire waited.
	Waited time.Duration
	// Size is the pool's ceiling (zero: none); Busy how many resources were
	// lent or being made, Waiting how many callers were queued (this one
	// included), at the end.
	Size, Busy, Waiting int
	// Leaked is how many loans were out longer than Config.LeakAfter (zero
	// without the leak watch).
	Leaked int
	// Ceiling is the ceiling a fleet's budget set on the pool (see Shared),
	// and -1 without one: with Busy at it, the budget is what held the
	// caller back.
	Ceiling int
	// BudgetStoreErr is the latest error of the budget's store when it
	// did not answer the budget's latest call, and BudgetStoreDown how
	// long it had not: the Ceiling was then the replica's safe share,
	// decided without the store (see shared.Budget). Nil and zero while
	// the store answers, and without a budget.
	BudgetStoreErr  error
	BudgetStoreDown time.Duration
	// LastDialError is the error of the latest failed dial, and
	// LastDialAgo how long before the end it came; nil and zero when no
	// dial has failed.
	LastDialError error
	LastDialAgo   time.Duration
	// HeldBack is how much longer the ward's backoff held new dials back,
	// after failed ones; zero when it did not.
	HeldBack time.Duration
	// Class is the caller's class (Config.Classes), "" for the default
	// class and without classes.
	Class string
}

// Error says what the pool was doing when the acquire gave up.
func (e *AcquireError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%swardpool: acquire gave up after %v (%v): ", prefix(e.Pool), e.Waited.Round(time.Millisecond), e.Err)
	if e.Size > 0 {
		fmt.Fprintf(&b, "%d of %s busy", e.Busy, plural(e.Size, "resource", "resources"))
	} else {
		fmt.Fprintf(&b, "%s busy", plural(e.Busy, "resource", "resources"))
	}
	fmt.Fprintf(&b, ", %s waiting", plural(e.Waiting, "caller", "callers"))
	if e.Class != "" {
		fmt.Fprintf(&b, " (this one of class %q)", e.Class)
	}
	if e.Ceiling >= 0 {
		fmt.Fprintf(&b, ", the fleet's budget allowing %d here", e.Ceiling)
		if e.BudgetStoreErr != nil {
			fmt.Fprintf(&b, " (the budget's store has been unreachable for %v: %v)", e.BudgetStoreDown.Round(time.Millisecond), e.BudgetStoreErr)
		}
	}
	if e.Leaked > 0 {
		fmt.Fprintf(&b, ", %s held longer than LeakAfter", plural(e.Leaked, "loan", "loans"))
	}
	if e.HeldBack > 0 {
		fmt.Fprintf(&b, "; new dials held back %v by the backoff", e.HeldBack.Round(time.Millisecond))
	}
	if e.LastDialError != nil {
		fmt.Fprintf(&b, "; last dial failed %v ago: %v", e.LastDialAgo.Round(time.Millisecond), e.LastDialError)
	}
	return b.String()
}

// Unwrap returns the context's error, or ErrAcquireTimeout.
func (e *AcquireError) Unwrap() error { return e.Err }

// PoolName returns the name of the pool the acquire waited on.
func (e *AcquireError) PoolName() string { return e.Pool }

// PoolError is the error of a call that a driver's pool (pgxward,
// redisward, sqlward) refused or could not serve: the pool's name (the
// driver's Config.Name), and the error behind it (the Keeper's
// *AcquireError or *ShedError, ErrClosed, or the dial's), which errors.Is
// and errors.As reach through Unwrap. Every driver's PoolError is this
// type. When the error behind it is a network error, the driver returns
// a *PoolNetError instead, in which errors.As finds the *PoolError.
type PoolError struct {
	// Pool is the pool's name.
	Pool string
	// Err is the error behind it.
	Err error
}

// Error is the pool's name, ": " and Err's message.
func (e *PoolError) Error() string { return e.Pool + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *PoolError) Unwrap() error { return e.Err }

// PoolName returns the name of the pool.
func (e *PoolError) PoolName() string { return e.Pool }

// PoolNetError is a PoolError around a network error (a dial's
// *net.OpError, a timeout) that is a net.Error itself, as the bare error
// was: code written for the driver's peer that asserts err.(net.Error) to
// ask Timeout keeps working. errors.As(err, &pe) with pe a *PoolError
// finds the PoolError it is; test for that rather than for this type.
type PoolNetError PoolError

// Error is the pool's name, ": " and Err's message.
func (e *PoolNetError) Error() string { return (*PoolError)(e).Error() }

// Unwrap returns Err.
func (e *PoolNetError) Unwrap() error { return e.Err }

// PoolName returns the name of the pool.
func (e *PoolNetError) PoolName() string { return e.Pool }

// Timeout reports whether the network error in Err's chain is a
// timeout; false when there is none.
func (e *PoolNetError) Timeout() bool {
	var ne net.Error
	return errors.As(e.Err, &ne) && ne.Timeout()
}

// Temporary reports what the Temporary of the network error in Err's
// chain does (false when there is none): it is in net.Error's method set.
func (e *PoolNetError) Temporary() bool {
	var ne net.Error
	//lint:ignore SA1019 net.Error's method set has it; we pass it on
	return errors.As(e.Err, &ne) && ne.Temporary()
}

// As sets target to e as a *PoolError when target is a **PoolError.
func (e *PoolNetError) As(target any) bool {
	if t, ok := target.(**PoolError); ok {
		*t = (*PoolError)(e)
		return true
	}
	return false
}
