package sqlward

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// AcquireError is the error of a Connect (so of a query) whose context ended
// before the Keeper lent a connection: it says what the pool was doing at
// that moment, and unwraps to the context's error, so errors.Is(err,
// context.DeadlineExceeded) and errors.Is(err, context.Canceled) hold as
// they do without the pool.
type AcquireError struct {
	// Err is the context's error.
	Err error
	// Busy is how many connections were lent or being dialled, of Max (0
	// when Limits.Size is 0: no limit); Dialing how many were being dialled.
	Busy, Max, Dialing int
	// Waiting is how many callers were queued.
	Waiting int
	// Leaked is how many loans had been out longer than Config.LeakAfter.
	Leaked int
	// DialErr is the last dial's error and DialAt when it failed, when the
	// last dial failed; nil after a dial that succeeded.
	DialErr error
	DialAt  time.Time
}

// Error reads, for example, "sqlward: acquire: context deadline exceeded:
// 8 of 8 connections busy, 3 waiting, 2 held past LeakAfter".
func (e *AcquireError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sqlward: acquire: %v: %d", e.Err, e.Busy)
	if e.Max > 0 {
		fmt.Fprintf(&b, " of %d", e.Max)
	}
	b.WriteString(" connections busy")
	if e.Dialing > 0 {
		fmt.Fprintf(&b, " (%d dialing)", e.Dialing)
	}
	fmt.Fprintf(&b, ", %d waiting", e.Waiting)
	if e.Leaked > 0 {
		fmt.Fprintf(&b, ", %d held past LeakAfter", e.Leaked)
	}
	if e.DialErr != nil {
		fmt.Fprintf(&b, "; last dial failed at %s: %v", e.DialAt.UTC().Format(time.RFC3339), e.DialErr)
	}
	return b.String()
}

// Unwrap returns the context's error.
func (e *AcquireError) Unwrap() error { return e.Err }

// dialFailure is the last failed dial, kept until a dial succeeds.
type dialFailure struct {
	err error
	at  time.Time
}

// explain turns a Connect's error into an *AcquireError when it is the
// context's, with a reading of the pool; other errors pass unchanged.
func (c *Connector) explain(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	s := c.k.Stats()
	e := &AcquireError{Err: err, Busy: s.Busy, Max: c.k.Limits().Size, Dialing: s.Dialing, Waiting: s.Waiting, Leaked: c.Leaked()}
	if f := c.lastDial.Load(); f != nil {
		e.DialErr, e.DialAt = f.err, f.at
	}
	return e
}

// noteDial records the outcome of a dial for AcquireError.
func (c *Connector) noteDial(err error) {
	switch {
	case err != nil:
		c.lastDial.Store(&dialFailure{err: err, at: c.now()})
	case c.lastDial.Load() != nil:
		c.lastDial.Store(nil)
	}
}

// lastDialNote holds the last failed dial (nil after a success).
type lastDialNote = atomic.Pointer[dialFailure]
