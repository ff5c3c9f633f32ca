package sqlward

import (
	"github.com/wardpool/wardpool"
)

// AcquireError is the error of a Connect (so of a query) whose context
// ended before the Keeper lent a connection. It unwraps to the context's
// error, so errors.Is(err, context.DeadlineExceeded) holds as without the
// pool, and to the last dial error; its message says what the pool was
// doing: connections busy of Limits.Size, callers waiting, loans past
// LeakAfter, the backoff, the last dial error and how long ago.
type AcquireError = wardpool.AcquireError

// ShedError is the error of a Connect the Ward refused at once: errors.Is
// ErrShed, and for the breaker, the dial error behind it (Cause).
type ShedError = wardpool.ShedError

// PoolError is the error of a Connect (so of a query) that the pool
// refused or could not serve: it names the pool (Config.Name), as in
// "sqlward-1: wardpool: pool closed", and wraps the Keeper's error, an
// *AcquireError, a *ShedError, ErrClosed or the base connector's, which
// errors.Is and errors.As reach. It is wardpool.PoolError, every wardpool
// driver's, and the name %T prints. A network error of the base
// connector comes in a *wardpool.PoolNetError, a net.Error in which
// errors.As finds the *PoolError.
type PoolError = wardpool.PoolError
