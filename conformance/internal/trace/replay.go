package trace

import (
	"fmt"
	"slices"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Ran is what Replay writes on its recordings' ran lines.
const Ran = Wardpool + " (this tree)"

// epoch is the instant a trace's clock starts from. Any would do: the pool
// uses only differences.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Limits returns the pool limits that hold p: Size as the ceiling, Idle as
// the ceiling on idle resources (0: none), and the age as Life or Keep.
func (p Policy) Limits() pool.Limits {
	l := pool.Limits{Size: p.Size, Idle: p.Idle}
	switch p.Age {
	case LifeAge:
		l.Life = time.Duration(p.AgeMS) * time.Millisecond
	case IdleAge:
		l.Keep = time.Duration(p.AgeMS) * time.Millisecond
	}
	return l
}

// Replay runs t against a fresh pool.Pool[int] the way a caller would, and
// returns what it answered. Resources are their creation indices, from 1.
//
//   - take: Ready hands out its item; Stale is closed (recorded) and the take
//     asked again; Make is followed by Made with the next index; Wait is a
//     refusal. Any other answer is an error: the pool has no ward here.
//   - give: Give; a resource it does not keep is closed (recorded).
//   - drop: Drop; the broken resource is closed (recorded).
//   - evict: Evict; what it returns is closed (recorded).
//
// Replay fails when a step names a seat in the wrong state (a take into a
// seat that holds one, a give or drop from one that holds none) or when the
// pool answers against its own contract (an unknown item, a Made refused).
func Replay(t Trace) (Recording, error) {
	p, err := pool.New[int](t.Policy.Limits(), ward.Ward{})
	if err != nil {
		return Recording{}, fmt.Errorf("trace %s: %w", t.Name, err)
	}
	rec := Recording{Name: t.Name, Ran: Ran, Policy: t.Policy}
	seats := make(map[int]int)
	made := 0
	for _, s := range t.Steps {
		now := epoch.Add(time.Duration(s.At) * time.Millisecond)
		e := Entry{Step: s}
		fail := func(format string, args ...any) (Recording, error) {
			return Recording{}, fmt.Errorf("trace %s: %s: %s", t.Name, s, fmt.Sprintf(format, args...))
		}
		switch s.Verb {
		case Take:
			if _, ok := seats[s.Seat]; ok {
				return fail("the seat holds one already")
			}
		ask:
			for {
				tk := p.Take(now, 0, 0)
				switch tk.Kind {
				case pool.Ready:
					e.Got = tk.Item
					break ask
				case pool.Stale:
					e.Closed = append(e.Closed, tk.Item)
					if len(e.Closed) > made {
						return fail("more stale answers than resources made")
					}
				case pool.Make:
					made++
					if !p.Made(made, tk.Gen, now, 0) {
						return fail("Made(%d) answered false", made)
					}
					e.Got = made
					break ask
				case pool.Wait:
					e.Refused = true
					break ask
				default:
					return fail("unexpected answer %v", tk.Kind)
				}
			}
			if e.Got > 0 {
				seats[s.Seat] = e.Got
			}
		case Give, Drop:
			item, ok := seats[s.Seat]
			if !ok {
				return fail("the seat holds nothing")
			}
			delete(seats, s.Seat)
			if s.Verb == Give {
				if !p.Give(item, now) {
					e.Closed = append(e.Closed, item)
				}
			} else {
				if !p.Drop(item, now) {
					return fail("Drop(%d): the pool does not know it", item)
				}
				e.Closed = append(e.Closed, item)
			}
		case Evict:
			e.Closed = append(e.Closed, p.Evict(now)...)
		default:
			return fail("unknown verb")
		}
		slices.Sort(e.Closed)
		b := p.Books()
		e.Idle, e.Live = b.Idle, b.Live
		rec.Entries = append(rec.Entries, e)
	}
	return rec, nil
}
