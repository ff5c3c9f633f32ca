package pgxward

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// The sentinels of the Keeper, here so that code using this package alone
// can test for them. They are the same values as pool's: errors.Is(err,
// pgxward.ErrShed) and errors.Is(err, pool.ErrShed) agree.
var (
	// ErrClosed is returned by Acquire (and every method that acquires)
	// after Close.
	ErrClosed = pool.ErrClosed
	// ErrShed is what the *pool.ShedError of an acquire the Ward refused
	// unwraps to.
	ErrShed = pool.ErrShed
	// ErrConfig is wrapped by the error NewWithConfig returns for a Config
	// it cannot use. It is pool.ErrConfig, the one every driver wraps.
	ErrConfig = pool.ErrConfig
)

// AcquireError is the error of an Acquire whose context ended before a
// connection was lent: it says what the pool was doing at that moment, and
// unwraps to the context's error, so errors.Is(err,
// context.DeadlineExceeded) and errors.Is(err, context.Canceled) hold as
// they do for pgxpool.
type AcquireError struct {
	// Err is the context's error.
	Err error
	// Busy is how many connections were lent or being dialled, of Max;
	// Dialing how many of those were being dialled.
	Busy, Max, Dialing int
	// Waiting is how many callers were queued.
	Waiting int
	// Leaked is how many loans had been out longer than Config.LeakAfter
	// (0 when the leak watch is off).
	Leaked int
	// DialErr is the last dial's error and DialAt when it failed, when the
	// last dial failed; nil after a dial that succeeded.
	DialErr error
	DialAt  time.Time
}

// Error reads, for example, "pgxward: acquire: context deadline exceeded:
// 8 of 8 connections busy (1 dialing), 3 waiting, 2 held past LeakAfter;
// last dial failed at 2026-01-02T03:04:05Z: pgxward: connect: …".
func (e *AcquireError) Error() string {
	var b strings.Builder
	b.WriteString("pgxward: acquire: ")
	b.WriteString(e.Err.Error())
	fmt.Fprintf(&b, ": %d of %d connections busy", e.Busy, e.Max)
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

// dialNote remembers the outcome of the latest dial for AcquireError.
type dialNote struct{ last atomic.Pointer[dialFailure] }

// failed records a failed dial.
func (d *dialNote) failed(err error) { d.last.Store(&dialFailure{err: err, at: time.Now()}) }

// ok forgets the last failure.
func (d *dialNote) ok() {
	if d.last.Load() != nil {
		d.last.Store(nil)
	}
}

// explain turns an Acquire's error into an *AcquireError when it is the
// context's, with a reading of the pool; other errors pass unchanged.
func (p *Pool) explain(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	s := p.k.Stats()
	e := &AcquireError{Err: err, Busy: s.Busy, Max: int(p.config.MaxConns), Dialing: s.Dialing, Waiting: s.Waiting}
	if p.config.LeakAfter > 0 {
		e.Leaked = p.Leaked()
	}
	if f := p.dials.last.Load(); f != nil {
		e.DialErr, e.DialAt = f.err, f.at
	}
	return e
}

// Leaked returns how many connections are out on loan now and have been
// for longer than Config.LeakAfter; 0 when the leak watch is off. It takes
// the pool's lock and allocates: it is for scrapes and errors, not for
// every query.
func (p *Pool) Leaked() int {
	after := p.config.LeakAfter
	if after <= 0 {
		return 0
	}
	n := 0
	for _, l := range p.k.Loans() { // longest first
		if l.Held < after {
			break
		}
		n++
	}
	return n
}
