package sqlward

import (
	"fmt"

	"github.com/wardpool/wardpool/pool"
)

// SetLimits applies new limits to the running connector, as a capacity
// plan does. The Keeper's pool decides what becomes of the connections it
// holds (see wardpool.Keeper.SetLimits): idle ones over a lowered limit
// are closed at once, lent ones over a lowered Size are closed when
// database/sql gives them back, and callers waiting are served at once
// when Size rises. database/sql's own limits (SetMaxOpenConns and the
// rest) are the DB's, and stay as they are. It fails, with an error
// wrapping ErrConfig and changing nothing, when l.Size is under 1 (see
// Config) and for limits the Keeper would refuse.
func (c *Connector) SetLimits(l pool.Limits) error {
	if err := checkSize(l); err != nil {
		return err
	}
	return c.k.SetLimits(l)
}

// checkSize refuses limits without a Size: no pool is unbounded by
// omission (see Config).
func checkSize(l pool.Limits) error {
	if l.Size < 1 {
		return fmt.Errorf("sqlward: %w: Limits.Size is %d, want 1 or more: start from pool.DefaultLimits (Size %d) or set it", ErrConfig, l.Size, pool.DefaultLimits.Size)
	}
	return nil
}
