package pool_test

import (
	"slices"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// This file holds the model-based property test of Pool: a plain reference
// model (slices, linear scans, no cleverness) is driven with the same random
// calls as a real Pool, and after every call the two must give the same
// answers and the same books, and the real pool must keep its invariants.
// The driver (run) takes its choices from a source, so the rapid test here
// and the fuzz target in pool_fuzz_test.go share it.

// model is the reference: what a Pool[int] should do, written from the
// documentation and kept obviously correct rather than fast.
type model struct {
	lim    pool.Limits
	closed bool

	started bool
	epoch   time.Time
	last    int64 // ns since epoch, never falls

	idle   []mseat // given back, oldest first: the top is the last
	lent   []mseat // out on loan, in no order
	making int     // open Make reservations
	gen    int     // Resets so far
	ceil   int     // SetCeiling's ceiling, or -1 (set by the driver)

	// The room a full backend left (Unmade with ward.GuardFull): no make
	// while room are live; at roomUntil it grows by one, for another second;
	// a make raises it to the resources held; -1 for
	// none (set by the driver).
	room      int
	roomUntil int64

	// A hold after a failover (ResetFor with a Hold): until holdUntil (0:
	// none), one make at a time, the next not before holdNext.
	holdUntil, holdEvery, holdNext int64

	// A generation being retired over a window (Reset with over > 0): one
	// due at from, one more every per, every one due at until.
	rot struct {
		on               bool
		gen              int
		from, until, per int64
		done             int
	}

	books pool.Books // counters only; gauges are computed
}

type mseat struct {
	item        int
	born, since int64
	gen         int // the model's gen when it was made
}

// clock is the pool's reading of now: the first now is the origin, and an
// instant earlier than the latest reads as the latest.
func (m *model) clock(now time.Time) int64 {
	if !m.started {
		m.started, m.epoch, m.last = true, now, 0
		return 0
	}
	t := int64(now.Sub(m.epoch))
	if t <= m.last {
		return m.last
	}
	if t > farOff {
		// Decades from the origin: now becomes the origin, and a jump of
		// more than farOff reads as one of farOff.
		d := m.last + min(t-m.last, farOff)
		for _, seats := range [][]mseat{m.idle, m.lent} {
			for i := range seats {
				seats[i].born -= d
				seats[i].since -= d
			}
		}
		if m.rot.on {
			m.rot.from -= d
			m.rot.until -= d
		}
		// A room or a hold that ends by the new origin has ended.
		if m.room >= 0 {
			if m.roomUntil -= d; m.roomUntil <= 0 {
				m.room = -1
			}
		}
		if m.holdUntil != 0 {
			m.holdUntil, m.holdNext = m.holdUntil-d, m.holdNext-d
			if m.holdUntil <= 0 {
				m.holdUntil, m.holdEvery, m.holdNext = 0, 0, 0
			}
		}
		m.epoch, m.last = now, 0
		return 0
	}
	m.last = t
	return t
}

// farOff is how far from its origin a pool's clock may run before the
// origin moves (about 36 years), as Pool documents.
const farOff = int64(1) << 60

func (m *model) at() time.Time { return m.epoch.Add(time.Duration(m.last)) }

func (m *model) live() int { return len(m.idle) + len(m.lent) + m.making }

// find says where item is: "idle", "lent" or "" and its index there.
func (m *model) find(item int) (string, int) {
	for i, s := range m.idle {
		if s.item == item {
			return "idle", i
		}
	}
	for i, s := range m.lent {
		if s.item == item {
			return "lent", i
		}
	}
	return "", -1
}

func (m *model) holds(item int) bool { w, _ := m.find(item); return w != "" }

// age says why idle seat s is too old at t: "keep", "life" or "". Both are
// strict: exactly Keep (or Life) old is still fresh.
func (m *model) age(s mseat, t int64) string {
	if m.lim.Keep > 0 && t-s.since > int64(m.lim.Keep) {
		return "keep"
	}
	if m.lim.Life > 0 && t-s.born > int64(m.lim.Life) {
		return "life"
	}
	return ""
}

func (m *model) retire(why string) {
	m.books.Retired++
	switch why {
	case "keep":
		m.books.IdleRetired++
	case "life":
		m.books.LifeRetired++
	}
}

func (m *model) take(now time.Time) pool.Taken[int] { return m.takeOr(now, nil) }

// takeOr is Take when the ward may have refused: refused is the real pool's
// answer when it is one only a ward gives (Later, Shed, a limiter's Wait).
// The model cannot tell what a ward will say, so it accepts the refusal if
// it comes where a ward is asked — a take that would lend an idle resource
// (only the shedder and the limiter are asked then) or reserve a Make (any
// guard) — and then nothing changes but the refusal's counter. Anywhere else
// the model answers as without a ward, and the difference fails the test.
func (m *model) takeOr(now time.Time, refused *pool.Taken[int]) pool.Taken[int] {
	if m.closed {
		return pool.Taken[int]{Kind: pool.Closed}
	}
	t := m.clock(now)
	accept := func(guards ...ward.Guard) (pool.Taken[int], bool) {
		if refused == nil || !slices.Contains(guards, refused.Guard) {
			return pool.Taken[int]{}, false
		}
		switch r := *refused; {
		case r.Kind == pool.Later && r.Delay > 0 && r.Item == 0 && r.Idle == 0:
			m.books.Deferred++
		case r.Kind == pool.Shed && r.Delay == 0 && r.Item == 0 && r.Idle == 0:
			m.books.Shed++
		case r.Kind == pool.Wait && r.Guard == ward.GuardLimiter && r.Delay == 0 && r.Item == 0 && r.Idle == 0:
			m.books.Waited++
		default:
			return pool.Taken[int]{}, false
		}
		return *refused, true
	}
	if n := len(m.idle); n > 0 {
		s := m.idle[n-1]
		if why := m.age(s, t); why != "" {
			m.idle = m.idle[:n-1]
			m.retire(why)
			return pool.Taken[int]{Kind: pool.Stale, Item: s.item}
		}
		if m.rot.on && s.gen == m.rot.gen && t >= m.rot.until {
			m.idle = m.idle[:n-1]
			m.books.Retired++
			m.rot.done++
			return pool.Taken[int]{Kind: pool.Stale, Item: s.item}
		}
		if r, ok := accept(ward.GuardShedder, ward.GuardLimiter); ok {
			return r
		}
		m.idle = m.idle[:n-1]
		m.lent = append(m.lent, mseat{item: s.item, born: s.born, since: t, gen: s.gen})
		m.books.Loans++
		m.books.Reused++
		return pool.Taken[int]{Kind: pool.Ready, Item: s.item, Idle: time.Duration(t - s.since)}
	}
	if m.lim.Size > 0 && m.live() >= m.lim.Size {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait}
	}
	if m.ceil >= 0 && m.live() >= m.ceil {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardCeiling}
	}
	if m.roomFull(t) {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardFull, Delay: time.Duration(m.roomUntil - t)}
	}
	if m.holding(t) && t < m.holdNext {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardHold, Delay: time.Duration(min(m.holdNext, m.holdUntil) - t)}
	}
	if r, ok := accept(ward.GuardBackoff, ward.GuardBreaker, ward.GuardShedder, ward.GuardLimiter, ward.GuardBucket); ok {
		return r
	}
	m.making++
	if m.holdUntil != 0 {
		m.holdNext = t + m.holdEvery
	}
	return pool.Taken[int]{Kind: pool.Make, Gen: uint32(m.gen)}
}

// holding reports whether a hold lasts at t, ending it when it ran out.
func (m *model) holding(t int64) bool {
	if m.holdUntil != 0 && t >= m.holdUntil {
		m.holdUntil, m.holdEvery, m.holdNext = 0, 0, 0
	}
	return m.holdUntil != 0
}

// resetFor is ResetFor: a reset on the word of a held resource of the
// current generation (or of the one rotating out), then hold h.
func (m *model) resetFor(item int, now time.Time, h pool.Hold) ([]int, bool) {
	if m.closed {
		return nil, false
	}
	where, i := m.find(item)
	var s mseat
	switch where {
	case "idle":
		s = m.idle[i]
	case "lent":
		s = m.lent[i]
	default:
		return nil, false
	}
	if s.gen != m.gen && !(m.rot.on && s.gen == m.rot.gen) {
		return nil, false
	}
	out := m.reset(now, 0)
	if h.For > 0 {
		every := h.Every
		if every <= 0 {
			every = pool.DefaultHoldEvery
		}
		m.holdUntil, m.holdEvery, m.holdNext = m.last+int64(h.For), int64(every), m.last
	}
	return out, true
}

// roomFor raises a full backend's room to the resources held: one just
// joined, so the backend had room for it.
func (m *model) roomFor(t int64) {
	if m.grow(t); m.room >= 0 {
		m.room = max(m.room, len(m.idle)+len(m.lent))
	}
}

// roomFull reports whether as many are live as a full backend left room
// for; the room grows by one for each whole second since the refusal.
func (m *model) roomFull(t int64) bool {
	m.grow(t)
	return m.room >= 0 && m.live() >= m.room
}

// grow brings the room up to t: one more for each whole second since it
// last grew.
func (m *model) grow(t int64) {
	if m.room >= 0 && t >= m.roomUntil {
		if n := (t-m.roomUntil)/int64(time.Second) + 1; n > 1<<20 {
			m.room = -1 // a dozen days and more: forgotten
		} else {
			m.room += int(n)
			m.roomUntil += n * int64(time.Second)
		}
	}
}

// made is Made. It answers whether the pool holds item afterwards, which
// is what Made's documentation promises. gen is the generation the
// reservation was opened in: a resource made under an older one is of that
// generation, retired when it comes back; one made with no reservation is
// of the current one.
func (m *model) made(item int, gen int, now time.Time, extra time.Duration) bool {
	t := m.clock(now)
	reserved := m.making > 0
	if reserved {
		m.making--
		if gen == m.gen {
			m.holdUntil, m.holdEvery, m.holdNext = 0, 0, 0 // and the new node is found
		}
	}
	if m.holds(item) {
		return true // the existing seat stands; the reservation is settled
	}
	if m.closed {
		if reserved {
			m.books.Made++
			m.books.Retired++
		}
		return false
	}
	if !reserved && ((m.lim.Size > 0 && m.live() >= m.lim.Size) || (m.ceil >= 0 && m.live() >= m.ceil) || m.roomFull(t)) {
		return false
	}
	if !reserved {
		gen = m.gen
	}
	m.lent = append(m.lent, mseat{item: item, born: t + int64(extra), since: t, gen: gen})
	m.roomFor(t)
	m.books.Made++
	m.books.Loans++
	return true
}

// unmade is Unmade: a failed make (by none), one a guard outside the pool
// refused (counted shed, not failed), or one the backend refused for want
// of room (by ward.GuardFull): the caller waits, and the pool makes no more
// than it has made for a second, when any are live. It answers whether the
// caller waits.
func (m *model) unmade(now time.Time, by ward.Guard) bool {
	t := m.clock(now)
	if m.making == 0 {
		return false
	}
	m.making--
	if by == ward.GuardNone && !m.closed && m.holding(t) {
		m.books.Failed++
		return true
	}
	switch by {
	case ward.GuardNone:
	case ward.GuardFull:
		m.books.Failed++
		if m.live() > 0 && !m.closed {
			m.room, m.roomUntil = m.live()-m.making, t+int64(time.Second)
			return true
		}
		return false
	default:
		m.books.Shed++
		return false
	}
	m.books.Failed++
	return false
}

func (m *model) give(item int, now time.Time) bool {
	t := m.clock(now)
	// A give at an instant earlier than the latest is idle since then (or
	// since its loan began, if later), among the idle by that instant.
	back := min(int64(now.Sub(m.epoch)), t)
	where, i := m.find(item)
	switch where {
	case "":
		if m.making == 0 || m.closed {
			return false
		}
		m.making--
		m.holdUntil, m.holdEvery, m.holdNext = 0, 0, 0
		m.lent = append(m.lent, mseat{item: item, born: t, since: t, gen: m.gen})
		m.roomFor(t)
		m.books.Made++
		m.books.Loans++
		where, i = "lent", len(m.lent)-1
	case "idle":
		m.idle = slices.Delete(m.idle, i, i+1)
		m.books.Retired++
		return false
	}
	s := m.lent[i]
	m.lent = slices.Delete(m.lent, i, i+1)
	if s.gen != m.gen && m.rot.on && s.gen == m.rot.gen && !m.closed {
		// Rotating out: retired when its turn is due, kept before.
		if m.rotDue(max(back, s.since)) {
			m.rot.done++
			m.books.Retired++
			return false
		}
	} else if s.gen != m.gen {
		m.books.Retired++
		return false
	}
	if m.closed || (m.lim.Idle > 0 && len(m.idle) >= m.lim.Idle) ||
		(m.ceil >= 0 && m.live()+1 > m.ceil) || (m.lim.Size > 0 && m.live()+1 > m.lim.Size) {
		m.books.Retired++
		return false
	}
	since := max(back, s.since)
	j := len(m.idle)
	for j > 0 && m.idle[j-1].since > since {
		j--
	}
	m.idle = slices.Insert(m.idle, j, mseat{item: item, born: s.born, since: since, gen: s.gen})
	return true
}

// reset retires the generation: with over zero everything idle now and
// what is lent when it comes back; with over positive at a pace, one at
// once and one more every over/live, idle longest first, lent ones when
// their turn is due. What is left of an earlier rotation goes at once.
func (m *model) reset(now time.Time, over time.Duration) []int {
	t := m.clock(now)
	if m.closed {
		return nil
	}
	var out []int
	if m.rot.on {
		kept := m.idle[:0:0]
		for _, s := range m.idle {
			if s.gen == m.rot.gen {
				out = append(out, s.item)
				m.books.Retired++
				continue
			}
			kept = append(kept, s)
		}
		m.idle = kept
		m.rot.on = false
	}
	old := m.gen
	m.gen++
	if over <= 0 {
		for _, s := range m.idle {
			out = append(out, s.item)
			m.books.Retired++
		}
		m.idle = nil
		return out
	}
	if total := m.live(); total > 0 {
		until := t + int64(over)
		if until < t {
			until = 1<<63 - 1
		}
		m.rot.on, m.rot.gen, m.rot.from, m.rot.until, m.rot.per, m.rot.done = true, old, t, until, max(int64(over)/int64(total), 1), 0
	}
	return m.rotEvict(t, out)
}

// rotDue says whether one more of the rotating generation is due at t.
func (m *model) rotDue(t int64) bool {
	return t >= m.rot.until || int64(m.rot.done) <= (t-m.rot.from)/m.rot.per
}

// rotEvict retires idle ones of the rotating generation, idle longest
// first, while one is due at t, and ends the rotation past its window.
func (m *model) rotEvict(t int64, out []int) []int {
	if !m.rot.on {
		return out
	}
	kept := m.idle[:0:0]
	for _, s := range m.idle {
		if s.gen == m.rot.gen && m.rotDue(t) {
			out = append(out, s.item)
			m.books.Retired++
			m.rot.done++
			continue
		}
		kept = append(kept, s)
	}
	m.idle = kept
	if t >= m.rot.until {
		m.rot.on = false
	}
	return out
}

// setCeiling sets the ceiling and retires idle items, the longest idle
// first, while more are live than it.
func (m *model) setCeiling(n int, now time.Time) []int {
	m.clock(now)
	m.ceil = n
	var out []int
	for m.ceil >= 0 && m.live() > m.ceil && len(m.idle) > 0 {
		out = append(out, m.idle[0].item)
		m.idle = m.idle[1:]
		m.books.Retired++
	}
	return out
}

// setLimits sets the limits and retires what they retire at once: every
// idle item too old by them (as evict), then the longest idle first while
// more are idle than Idle, and while more are live than Size.
func (m *model) setLimits(l pool.Limits, now time.Time) []int {
	m.lim = l
	out := m.evict(now)
	for (l.Idle > 0 && len(m.idle) > l.Idle) || (l.Size > 0 && m.live() > l.Size && len(m.idle) > 0) {
		out = append(out, m.idle[0].item)
		m.idle = m.idle[1:]
		m.books.Retired++
	}
	return out
}

func (m *model) drop(item int, now time.Time) bool {
	m.clock(now)
	switch where, i := m.find(item); where {
	case "idle":
		m.idle = slices.Delete(m.idle, i, i+1)
	case "lent":
		m.lent = slices.Delete(m.lent, i, i+1)
	default:
		return false
	}
	m.books.Dropped++
	return true
}

func (m *model) evict(now time.Time) []int {
	t := m.clock(now)
	var out []int
	kept := m.idle[:0:0]
	for _, s := range m.idle {
		if why := m.age(s, t); why != "" {
			m.retire(why)
			out = append(out, s.item)
			continue
		}
		kept = append(kept, s)
	}
	m.idle = kept
	return m.rotEvict(t, out)
}

func (m *model) close() []int {
	if m.closed {
		return nil
	}
	m.closed = true
	var out []int
	for _, s := range m.idle {
		out = append(out, s.item)
		m.books.Retired++
	}
	m.idle = nil
	return out
}

func (m *model) loans(now time.Time) []pool.Lent[int] {
	t := m.clock(now)
	var out []pool.Lent[int]
	for _, s := range m.lent {
		out = append(out, pool.Lent[int]{Item: s.item, Held: time.Duration(t - s.since)})
	}
	return out
}

// next is when the next idle seat will be too old, by linear scan.
func (m *model) next() (time.Time, bool) {
	var best int64
	ok := false
	for _, s := range m.idle {
		if m.lim.Keep > 0 {
			if at := s.since + int64(m.lim.Keep) + 1; !ok || at < best {
				best, ok = at, true
			}
		}
		if m.lim.Life > 0 {
			if at := s.born + int64(m.lim.Life) + 1; !ok || at < best {
				best, ok = at, true
			}
		}
	}
	if m.rot.on {
		for _, s := range m.idle {
			if s.gen == m.rot.gen {
				if at := min(m.rot.from+int64(m.rot.done)*m.rot.per, m.rot.until); !ok || at < best {
					best, ok = at, true
				}
				break
			}
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return m.epoch.Add(time.Duration(best)), true
}

func (m *model) booksNow() pool.Books {
	b := m.books
	b.Live, b.Idle, b.Busy = m.live(), len(m.idle), len(m.lent)+m.making
	b.Holding = m.holdUntil > m.last
	if m.rot.on {
		for _, seats := range [][]mseat{m.idle, m.lent} {
			for _, s := range seats {
				if s.gen == m.rot.gen {
					b.Rotating++
				}
			}
		}
	}
	return b
}

// heldSet is every item on the model's books.
func (m *model) heldSet() map[int]bool {
	h := make(map[int]bool, len(m.idle)+len(m.lent))
	for _, s := range m.idle {
		h[s.item] = true
	}
	for _, s := range m.lent {
		h[s.item] = true
	}
	return h
}
