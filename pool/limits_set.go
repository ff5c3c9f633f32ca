package pool

import "time"

// SetLimits changes the pool's limits to l from now on, and returns the idle
// resources that l retires at once, for the caller to close: those past a
// shortened Keep or Life (counted as Evict counts them), then, given back
// longest ago first, those above a lowered Idle, and those that keep more
// live than a lowered Size (counted retired). Resources lent stay lent: a
// Give while more are live than Size retires the one given back (false: the
// caller closes it), so the pool shrinks as loans come home. Reservations open stay open. A raised Size lets
// the next Take answer Make; a runtime asks again for the callers it has
// waiting. SetLimits fails, with an error wrapping ErrLimits and changing
// nothing, when l has a negative field (see Limits.Validate), or with
// one wrapping ErrClasses when the classes' reserves would not fit its Size.
func (p *Pool[T]) SetLimits(l Limits, now time.Time) ([]T, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if p.cls != nil {
		// The classes' reserves must still fit (class.go).
		if err := ValidateClasses(p.Classes(), l.Size); err != nil {
			return nil, err
		}
	}
	t := p.clock(now)
	p.limits = l
	p.z.byBirth(l.Life > 0)
	out := p.Evict(now)
	for l.Idle > 0 && p.z.idle > l.Idle {
		out = append(out, p.retire(p.z.bottom, t, fresh))
	}
	for l.Size > 0 && p.live() > l.Size && p.z.bottom != none {
		out = append(out, p.retire(p.z.bottom, t, fresh))
	}
	return out, nil
}

// byBirth keeps the birth heap when on (a Life limit is set), building it
// from the idle seats, top to bottom, when it was off, and drops it when
// off.
func (z *seats[T]) byBirth(on bool) {
	switch {
	case on == z.birth:
	case on:
		z.birth = true
		z.heap = z.heap[:0]
		for i := z.top; i != none; i = z.s[i].down {
			z.heapPush(i)
		}
	default:
		z.birth = false
		for _, i := range z.heap {
			z.s[i].hi = none
		}
		z.heap = z.heap[:0]
	}
}
