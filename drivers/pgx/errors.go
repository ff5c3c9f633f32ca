package pgxward

import (
	"github.com/wardpool/wardpool"
)

// The sentinels and error types of the Keeper, here so that code using
// this package alone can test for them. They are pool's own: errors.Is(err,
// pgxward.ErrShed) and errors.Is(err, wardpool.ErrShed) agree.
var (
	// ErrClosed is returned by Acquire (and every method that acquires)
	// after Close.
	ErrClosed = wardpool.ErrClosed
	// ErrShed is what the *ShedError of an acquire the Ward refused unwraps
	// to.
	ErrShed = wardpool.ErrShed
	// ErrConfig is wrapped by the error NewWithConfig returns for a Config
	// it cannot use. It is wardpool.ErrConfig, the one every driver wraps.
	ErrConfig = wardpool.ErrConfig
)

// AcquireError is the error of an Acquire (or Query, QueryRow, …) whose
// context ended before a connection was lent. It unwraps to the context's
// error, so errors.Is(err, context.DeadlineExceeded) holds as with pgxpool,
// and to the last dial error; its message says what the pool was doing:
// connections busy of MaxConns, callers waiting, loans past LeakAfter, the
// backoff, the last dial error and how long ago.
type AcquireError = wardpool.AcquireError

// ShedError is the error of an acquire the Ward refused at once: errors.Is
// ErrShed, and for the breaker, the dial error behind it (Cause).
type ShedError = wardpool.ShedError

// PoolError is the error of an Acquire (or Query, QueryRow, …) the pool
// refused or could not serve: it names the pool (Config.Name), as in
// "pgxward-1@127.0.0.1:5432: wardpool: pool closed", and wraps the
// Keeper's error (an *AcquireError, a *ShedError, ErrClosed or the dial's),
// which errors.Is and errors.As reach. A context's bare error is returned
// as it is. It is wardpool.PoolError, every wardpool driver's, and the
// name %T prints. A dial's network error comes in a *wardpool.PoolNetError,
// a net.Error in which errors.As finds the *PoolError.
type PoolError = wardpool.PoolError

// Name returns the pool's name, Config.Name or the default it was given.
// metrics.NewCollector and metrics.Observe label the series with it
// (pool="…") unless Options.Labels names the pool.
func (p *Pool) Name() string { return p.name }

// Leaked returns how many connections are out on loan now and have been
// for longer than Config.LeakAfter; 0 when the leak watch is off. With
// WardStats and Limits it makes a Pool a metrics source as it is (the
// leaked-now gauge). It takes the pool's lock and allocates: it is for
// scrapes, not for every query.
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

// MinIdle returns how many idle connections the pool keeps open:
// MinIdleConns, at most MaxConns. metrics.Observe exports it as
// db.client.connection.idle.min. MinConns, a floor on all connections
// open, idle or acquired, is not an idle floor and is not counted here.
func (p *Pool) MinIdle() int {
	return min(int(p.config.MinIdleConns), int(p.config.MaxConns))
}
