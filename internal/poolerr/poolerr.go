// Package poolerr names the drivers' pools in their errors until the
// runtime names them itself: Wrap puts an error in a *wardpool.PoolError
// (or a *wardpool.PoolNetError), types a user can import under the name
// %T prints.
package poolerr

import (
	"context"
	"errors"
	"net"

	"github.com/wardpool/wardpool"
)

// Wrap wraps err in a *wardpool.PoolError naming pool, or in a
// *wardpool.PoolNetError when err is or wraps a net.Error, except nil, a
// context's own error as it is (which callers may compare with ==), and
// an error that names pool already (its PoolName method says so).
func Wrap(pool string, err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if n, ok := err.(interface{ PoolName() string }); ok && n.PoolName() == pool {
		return err // it names the pool already
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return &wardpool.PoolNetError{Pool: pool, Err: err}
	}
	return &wardpool.PoolError{Pool: pool, Err: err}
}
