package pool

import "time"

// This file is the rolling form of Reset: a generation retired over a
// window instead of at once (Reset with over > 0).

// rotation is a generation being retired over a window.
type rotation struct {
	on    bool
	gen   uint32 // the generation being retired
	from  int64  // when it began
	until int64  // when every resource of it is due
	per   int64  // the pace: one retirement due every per ns from from on
	done  int    // retired at the pace so far
}

// rotDue reports whether one more resource of the rotating generation may
// be retired at t: one is due at from, and one more every per after, until
// every one is due at until.
func (p *Pool[T]) rotDue(t int64) bool {
	r := &p.rot
	return t >= r.until || int64(r.done) <= (t-r.from)/r.per
}

// rotating reports whether seat s is of the generation being rotated out.
func (p *Pool[T]) rotating(s *seat[T]) bool { return p.rot.on && s.gen() == p.rot.gen }

// rotEvict retires idle resources of the rotating generation while one is
// due at t, those idle longest first, and ends the rotation once its
// window has passed (the lent ones left are then retired on their return,
// as after a Reset). It walks the idle list: its cost is in proportion to
// the idle resources, while a rotation lasts.
func (p *Pool[T]) rotEvict(t int64, out []T) []T {
	for i := p.z.bottom; i != none && p.rot.on; {
		up := p.z.s[i].up
		if p.rotating(&p.z.s[i]) && p.rotDue(t) {
			out = append(out, p.retire(i, t, fresh))
			p.rot.done++
		}
		i = up
	}
	if p.rot.on && t >= p.rot.until {
		p.rot.on = false
	}
	return out
}

// rotNext is when the next idle resource of the rotating generation is
// due, and false when none is idle or no rotation is on.
func (p *Pool[T]) rotNext() (int64, bool) {
	if !p.rot.on {
		return 0, false
	}
	for i := p.z.bottom; i != none; i = p.z.s[i].up {
		if p.rotating(&p.z.s[i]) {
			return min(p.rot.from+int64(p.rot.done)*p.rot.per, p.rot.until), true
		}
	}
	return 0, false
}

// rotLive counts the live resources of the rotating generation, idle or
// lent.
func (p *Pool[T]) rotLive() int {
	n := 0
	if p.rot.on {
		for i := range p.z.s {
			if s := &p.z.s[i]; s.st() != free && s.gen() == p.rot.gen {
				n++
			}
		}
	}
	return n
}

// startRotation begins retiring generation old, of total live resources,
// over the window from t: the pace is one every over/total.
func (p *Pool[T]) startRotation(old uint32, total int, t int64, over time.Duration) {
	if total == 0 {
		return
	}
	until := t + int64(over)
	if until < t {
		until = 1<<63 - 1
	}
	p.rot = rotation{on: true, gen: old, from: t, until: until, per: max(int64(over)/int64(total), 1)}
}
