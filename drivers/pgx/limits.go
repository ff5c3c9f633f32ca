package pgxward

import (
	"fmt"

	"github.com/wardpool/wardpool/pool"
)

// SetLimits applies new limits to the running pool, as a capacity plan
// does: l.Size is MaxConns, l.Idle the idle connections kept, l.Keep
// MaxConnIdleTime and l.Life MaxConnLifetime. The Keeper's pool decides
// what becomes of the connections it holds (see wardpool.Keeper.SetLimits):
// idle ones over a lowered limit are closed at once, lent ones over a
// lowered MaxConns are closed when released, and callers waiting are
// served at once when it rises. Stat().MaxConns and Limits report the new
// limits. The bound on PrepareConn's retries stays the configured
// MaxConns+1. It fails, with an error wrapping ErrConfig and changing
// nothing, when l.Size is under 1 (pgxpool has no unbounded pool), a field
// is negative, or MinConns or MinIdleConns is above the new Size or Idle.
func (p *Pool) SetLimits(l pool.Limits) error {
	if l.Size < 1 {
		return fmt.Errorf("pgxward: %w: Size (MaxConns) is %d, want 1 or more", ErrConfig, l.Size)
	}
	return p.k.SetLimits(l)
}
