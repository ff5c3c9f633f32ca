package wardpool

import (
	"fmt"

	"github.com/wardpool/wardpool/pool"
)

// SetLimits applies new limits to the running pool, as a capacity plan
// does (go run ./examples/sim -suggest), and returns once the pool holds
// them. The pool decides what becomes of what it holds (see
// Pool.SetLimits): idle resources past a shortened Keep or Life, or above a
// lowered Idle or Size, are closed at once (in the background); a loan out
// while more are live than a lowered Size is closed when it comes back
// instead of kept; a raised Size serves the callers waiting at once, with
// dials. Limits.Size, Idle, Keep and Life all apply from the next decision
// on; MinIdle stays as configured. Stats and Limits show the change (the
// metrics package exports Limits as gauges, read at every scrape). It is
// what HikariCP offers through its pool MXBean and what FlexyPool does
// when it grows a pool, except that here the Pool, not the runtime,
// decides what a new limit does to each resource.
//
// SetLimits fails, with an error wrapping ErrConfig and changing nothing,
// for limits NewKeeper would refuse (a negative field, or MinIdle above the
// new Size or Idle), and with ErrClosed once the Keeper is closed. It is safe
// for concurrent use.
func (k *Keeper[T]) SetLimits(l pool.Limits) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch err := l.Validate(); {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrConfig, err)
	case l.Size > 0 && k.minIdle > l.Size:
		return bad("MinIdle is %d, more than Limits.Size %d", k.minIdle, l.Size)
	case l.Idle > 0 && k.minIdle > l.Idle:
		return bad("MinIdle is %d, more than Limits.Idle %d: the pool would close what it warmed", k.minIdle, l.Idle)
	case l.Size > 0 && k.minLive > l.Size:
		return bad("MinLive is %d, more than Limits.Size %d", k.minLive, l.Size)
	case l.Idle > 0 && k.minLive > l.Idle:
		return bad("MinLive is %d, more than Limits.Idle %d: the pool would close what it warmed", k.minLive, l.Idle)
	}
	var fx effects[T]
	now := k.now()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return ErrClosed
	}
	gone, err := k.p.SetLimits(l, now)
	if err != nil {
		k.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	k.limits = l
	k.closeAllLocked(gone)
	k.serveLocked(now, &fx)
	k.topUpLocked(now, &fx)
	k.armIdleLocked(now)
	k.unlockDo(&fx)
	return nil
}
