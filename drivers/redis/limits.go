package redisward

import "github.com/wardpool/wardpool/pool"

// SetLimits applies new limits to the running pool, as a capacity plan
// does. The Keeper's pool decides what becomes of the connections it holds
// (see wardpool.Keeper.SetLimits): idle ones over a lowered limit are
// closed at once, lent ones over a lowered Size are closed when released,
// and callers waiting are served at once when Size rises. It fails, with
// an error wrapping ErrConfig and changing nothing, when l.Size is under 1
// (see Config) and for limits the Keeper would refuse.
func (p *Pool) SetLimits(l pool.Limits) error {
	if err := checkSize(l); err != nil {
		return err
	}
	return p.k.SetLimits(l)
}
