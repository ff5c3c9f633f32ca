package pool

import (
	"errors"
	"fmt"
	"time"
)

// Limits are the four bounds a pool holds itself to. Zero means no limit for
// every field; negative values are refused by New and Validate.
//
// Limits is a plain value: copy a preset and change one field.
//
//	l := pool.DefaultLimits
//	l.Size = 32
type Limits struct {
	// Size is how many resources may be live at once: idle, lent, and being
	// made (a Make answer reserves one until Made or Unmade settles it).
	Size int
	// Idle is how many may sit idle. Give answers false, and the caller
	// closes the resource, when that many are idle already.
	Idle int
	// Keep is how long a resource may sit idle (since it was last given back)
	// before it is retired.
	Keep time.Duration
	// Life is how long a resource may live at all, counted from the moment
	// it was made, however busy it has been.
	Life time.Duration
}

// DefaultLimits is the preset: ten live, ten of them allowed idle, retired
// after thirty minutes idle and never for age alone. Keeping Idle equal to
// Size means a pool that grew under load does not throw away at once what it
// has just made.
var DefaultLimits = Limits{Size: 10, Idle: 10, Keep: 30 * time.Minute}

// ErrLimits is wrapped by the error New and Validate return for limits that
// cannot be held.
var ErrLimits = errors.New("wardpool: invalid limits")

// Validate reports why l cannot be held, or nil. Every field must be zero (no
// limit) or positive.
func (l Limits) Validate() error {
	switch {
	case l.Size < 0:
		return fmt.Errorf("%w: Size is %d, want 0 (no limit) or more", ErrLimits, l.Size)
	case l.Idle < 0:
		return fmt.Errorf("%w: Idle is %d, want 0 (no limit) or more", ErrLimits, l.Idle)
	case l.Keep < 0:
		return fmt.Errorf("%w: Keep is %v, want 0 (no limit) or more", ErrLimits, l.Keep)
	case l.Life < 0:
		return fmt.Errorf("%w: Life is %v, want 0 (no limit) or more", ErrLimits, l.Life)
	}
	return nil
}

// why says which bound a resource that has sat idle for idle, and has lived
// for age, is past: fresh, pastKeep or pastLife. Both bounds are strict: a
// resource exactly Keep idle is still fresh. It is the one definition of
// fresh: Take and Evict use it.
func (l Limits) why(idle, age int64) int {
	if k := l.Keep; k > 0 && idle > int64(k) {
		return pastKeep
	}
	if f := l.Life; f > 0 && age > int64(f) {
		return pastLife
	}
	return fresh
}
