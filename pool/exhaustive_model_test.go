package pool_test

import (
	"math"
	"slices"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// The reference model of the exhaustive walk (see exhaustive_test.go):
// xModel, the Pool as its documentation describes it, in slices and linear
// scans, nothing from the package's internals.

// ---------------------------------------------------------------- the model

// xRes is one resource in the model: its id and its ages at the model's now.
type xRes struct {
	id int
	// since is how long ago it was given back (idle) or lent (lent), ns.
	since int64
	// age is how long ago it was born, ns, counting its life extra (an
	// extra of +1ns makes it 1ns younger).
	age int64
	// ext is 0 for an ordinary life, +1 for an extra so negative it is past
	// Life at once, -1 for one so positive it never is within the walk.
	ext int8
	// old marks a resource lent when Reset was called: it is retired when
	// it comes back.
	old bool
}

// xModel is what a Pool[int] should do, read from the documentation of
// Pool's methods and of Books. Times are ages relative to the walk's now,
// so the model has no clock of its own: a clock step ages everything.
type xModel struct {
	lim    pool.Limits
	leases int // the limiter's fixed limit; 0 for no ward

	// With a backoff: failed makes in a row, and how long from now makes
	// are held back (zero or less: not held).
	backoff  bool
	failures int
	hold     int64

	// The room a full backend left (Unmade with ward.GuardFull): while
	// roomOn, no make while room are live, for roomLeft more ns.
	roomOn   bool
	room     int
	roomLeft int64

	// A hold after a failover (ResetFor with xHold): while holdOn, for
	// holdLeft more ns, one make at a time, the next not for holdNext ns.
	holdOn             bool
	holdLeft, holdNext int64

	idle   []xRes // the idle stack, top (last given back) first
	lent   []xRes // out on loan, in the order lent
	making int
	closed bool

	books pool.Books // counters; gauges are computed
}

func (m *xModel) clone() xModel {
	c := *m
	c.idle = slices.Clone(m.idle)
	c.lent = slices.Clone(m.lent)
	return c
}

func (m *xModel) live() int { return len(m.idle) + len(m.lent) + m.making }

func (m *xModel) busy() int { return len(m.lent) + m.making }

func (m *xModel) find(id int) (idle bool, i int) {
	for i, r := range m.idle {
		if r.id == id {
			return true, i
		}
	}
	for i, r := range m.lent {
		if r.id == id {
			return false, i
		}
	}
	return false, -1
}

func (m *xModel) holds(id int) bool { _, i := m.find(id); return i >= 0 }

// why says whether idle resource r is past Keep ("keep") or else past Life
// ("life"); both strict: exactly Keep or Life old is still fresh.
func (m *xModel) why(r xRes) string {
	if m.lim.Keep > 0 && r.since > int64(m.lim.Keep) {
		return "keep"
	}
	if m.lim.Life > 0 && (r.ext > 0 || r.ext == 0 && r.age > int64(m.lim.Life)) {
		return "life"
	}
	return ""
}

func (m *xModel) retire(why string) {
	m.books.Retired++
	switch why {
	case "keep":
		m.books.IdleRetired++
	case "life":
		m.books.LifeRetired++
	}
}

// leased says whether the limiter has no lease left.
func (m *xModel) noLease() bool { return m.leases > 0 && m.busy() >= m.leases }

func (m *xModel) take() pool.Taken[int] {
	if m.closed {
		return pool.Taken[int]{Kind: pool.Closed}
	}
	if len(m.idle) > 0 {
		top := m.idle[0]
		if why := m.why(top); why != "" {
			m.idle = m.idle[1:]
			m.retire(why)
			return pool.Taken[int]{Kind: pool.Stale, Item: top.id}
		}
		if m.noLease() {
			m.books.Waited++
			return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardLimiter}
		}
		m.idle = m.idle[1:]
		sat := top.since
		top.since = 0
		m.lent = append(m.lent, top)
		m.books.Loans++
		m.books.Reused++
		return pool.Taken[int]{Kind: pool.Ready, Item: top.id, Idle: time.Duration(sat)}
	}
	if m.lim.Size > 0 && m.live() >= m.lim.Size {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait}
	}
	if m.roomFull() {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardFull, Delay: time.Duration(m.roomLeft)}
	}
	if m.holding() && m.holdNext > 0 {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardHold, Delay: time.Duration(min(m.holdNext, m.holdLeft))}
	}
	if m.backoff && m.failures > 0 && m.hold > 0 {
		m.books.Deferred++
		return pool.Taken[int]{Kind: pool.Later, Delay: time.Duration(m.hold), Guard: ward.GuardBackoff}
	}
	if m.noLease() {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardLimiter}
	}
	m.making++
	m.spaceHold()
	return pool.Taken[int]{Kind: pool.Make}
}

// holding reports whether a hold lasts, ending it when it ran out.
func (m *xModel) holding() bool {
	if m.holdOn && m.holdLeft <= 0 {
		m.holdOn = false
	}
	return m.holdOn
}

// spaceHold notes a make starting during a hold: the next waits Every.
func (m *xModel) spaceHold() {
	if m.holdOn {
		m.holdNext = int64(xHold.Every)
	}
}

// resetFor is ResetFor with xHold: a reset on the word of a held resource
// of the current generation (not one lent before the last Reset), then the
// hold.
func (m *xModel) resetFor(id int) ([]int, bool) {
	idle, i := m.find(id)
	if m.closed || i < 0 || !idle && m.lent[i].old {
		return nil, false
	}
	out := m.reset()
	m.holdOn, m.holdLeft, m.holdNext = true, int64(xHold.For), 0
	return out, true
}

// roomFor raises a full backend's room to the resources held: one just
// joined, so the backend had room for it.
func (m *xModel) roomFor() {
	if m.grow(); m.roomOn {
		m.room = max(m.room, len(m.idle)+len(m.lent))
	}
}

// roomFull reports whether as many are live as a full backend left room
// for; the room grows by one for each whole second since the refusal.
func (m *xModel) roomFull() bool {
	m.grow()
	return m.roomOn && m.live() >= m.room
}

// grow brings the room up to now: one more for each whole second since
// it last grew.
func (m *xModel) grow() {
	if m.roomOn && m.roomLeft <= 0 {
		n := -m.roomLeft/int64(time.Second) + 1
		if n > 1<<20 {
			m.roomOn = false
		} else {
			m.room += int(n)
			m.roomLeft += n * int64(time.Second)
		}
	}
}

// born is a new lent resource with life extra.
func born(id int, extra time.Duration) xRes {
	switch {
	case extra == math.MinInt64:
		return xRes{id: id, ext: +1}
	case extra == math.MaxInt64:
		return xRes{id: id, ext: -1}
	}
	return xRes{id: id, age: -int64(extra)}
}

// made is Made; old says the reservation it settles was opened before the
// last Reset (the Make answer's generation is not the pool's now), so what
// it makes is of the old generation: lent, and retired when it comes back.
func (m *xModel) made(id int, extra time.Duration, old bool) bool {
	reserved := m.making > 0
	if reserved {
		m.making--
		m.failures, m.hold = 0, 0 // a make that succeeded ends the backoff
		if !old {
			m.holdOn = false // and the new generation has a node
		}
	}
	if m.holds(id) {
		return true
	}
	if m.closed {
		if reserved {
			m.books.Made++
			m.books.Retired++
		}
		return false
	}
	if !reserved && (m.lim.Size > 0 && m.live() >= m.lim.Size || m.roomFull() || m.noLease()) {
		return false
	}
	r := born(id, extra)
	r.old = old && reserved
	m.lent = append(m.lent, r)
	m.roomFor()
	m.books.Made++
	m.books.Loans++
	return true
}

// unmadeFull is Unmade with ward.GuardFull: with others live the caller
// waits (true) and the pool makes no more than it has made for a second;
// with none, a failed make as unmade.
func (m *xModel) unmadeFull() bool {
	if m.making == 0 {
		return false
	}
	if m.live() > 1 && !m.closed {
		m.making--
		m.books.Failed++
		m.roomOn, m.room, m.roomLeft = true, m.live()-m.making, int64(time.Second)
		return true
	}
	m.unmadeFailed()
	return false
}

// unmade is Unmade of a failed make; during a hold its caller waits
// (true) and the ward hears nothing.
func (m *xModel) unmade() bool {
	if m.making > 0 && !m.closed && m.holding() {
		m.making--
		m.books.Failed++
		return true
	}
	m.unmadeFailed()
	return false
}

func (m *xModel) unmadeFailed() {
	if m.making > 0 {
		m.making--
		m.books.Failed++
		if m.backoff {
			// The wait after the n-th failure in a row, rigid: Base ×
			// Factor^(n−1), held to Cap.
			m.failures++
			wait := float64(xBackoff.Base) * math.Pow(xBackoff.Factor, float64(m.failures-1))
			m.hold = int64(min(wait, float64(xBackoff.Cap)))
		}
	}
}

// give gives id back early ns before the latest reading: idle since then,
// or since its loan began if that is later, and among the idle ones by
// that instant (see Pool.Give).
func (m *xModel) give(id int, early int64) bool {
	idle, i := m.find(id)
	if i < 0 {
		if m.making == 0 || m.closed {
			return false
		}
		m.making--
		m.failures, m.hold = 0, 0 // a make that succeeded ends the backoff
		m.holdOn = false
		m.lent = append(m.lent, xRes{id: id})
		m.roomFor()
		m.books.Made++
		m.books.Loans++
		i = len(m.lent) - 1
	} else if idle {
		m.idle = slices.Delete(m.idle, i, i+1)
		m.books.Retired++
		return false
	}
	r := m.lent[i]
	m.lent = slices.Delete(m.lent, i, i+1)
	if m.closed || r.old || m.lim.Idle > 0 && len(m.idle) >= m.lim.Idle {
		m.books.Retired++
		return false
	}
	r.since = min(early, r.since)
	j := 0
	for j < len(m.idle) && m.idle[j].since < r.since {
		j++
	}
	m.idle = slices.Insert(m.idle, j, r)
	return true
}

func (m *xModel) drop(id int) bool {
	idle, i := m.find(id)
	switch {
	case i < 0:
		return false
	case idle:
		m.idle = slices.Delete(m.idle, i, i+1)
	default:
		m.lent = slices.Delete(m.lent, i, i+1)
	}
	m.books.Dropped++
	return true
}

func (m *xModel) evict() []int {
	var out []int
	kept := m.idle[:0:0]
	for _, r := range m.idle {
		if why := m.why(r); why != "" {
			m.retire(why)
			out = append(out, r.id)
			continue
		}
		kept = append(kept, r)
	}
	m.idle = kept
	return out
}

func (m *xModel) close() []int {
	if m.closed {
		return nil
	}
	m.closed = true
	var out []int
	for _, r := range m.idle {
		out = append(out, r.id)
		m.books.Retired++
	}
	m.idle = nil
	return out
}

// reset is Reset: every idle resource retired for the caller to close,
// every lent one marked to be retired when it comes back; reservations open
// now make resources that are kept. A closed pool answers nil.
func (m *xModel) reset() []int {
	if m.closed {
		return nil
	}
	var out []int
	for _, r := range m.idle {
		out = append(out, r.id)
		m.books.Retired++
	}
	m.idle = nil
	for i := range m.lent {
		m.lent[i].old = true
	}
	return out
}

// reserve is Reserve: a Make reservation without a caller, answered as
// Take would answer a Make (the idle ones are not looked at), a refusal
// counted nowhere.
func (m *xModel) reserve() bool {
	switch {
	case m.closed, m.lim.Size > 0 && m.live() >= m.lim.Size, m.roomFull(),
		m.holding() && m.holdNext > 0,
		m.backoff && m.failures > 0 && m.hold > 0, m.noLease():
		return false
	}
	m.making++
	m.spaceHold()
	return true
}

func (m *xModel) step(d int64) {
	m.hold -= d
	m.roomLeft -= d
	m.holdLeft -= d
	m.holdNext -= d
	for _, rs := range [][]xRes{m.idle, m.lent} {
		for i := range rs {
			rs[i].since += d
			rs[i].age += d
		}
	}
}

func (m *xModel) booksNow() pool.Books {
	b := m.books
	b.Live, b.Idle, b.Busy = m.live(), len(m.idle), m.busy()
	b.Holding = m.holdOn && m.holdLeft > 0
	return b
}

// next is what Next should answer at now. It returns the exact instant
// (exact true) when the soonest edge is an ordinary one; otherwise past is
// +1 when an idle resource's extra put it past Life at once (Next lies
// decades back) and -1 when only unbounded lives remain (decades ahead).
func (m *xModel) next(now time.Time) (at time.Time, ok bool, far int) {
	var best int64
	exact := false
	consider := func(d int64) {
		if !exact || d < best {
			best, exact = d, true
		}
	}
	for _, r := range m.idle {
		if m.lim.Keep > 0 {
			consider(int64(m.lim.Keep) - r.since + 1)
		}
		if m.lim.Life > 0 {
			switch r.ext {
			case +1:
				far = +1
			case -1:
				if far == 0 {
					far = -1
				}
			default:
				consider(int64(m.lim.Life) - r.age + 1)
			}
		}
	}
	switch {
	case far > 0:
		return time.Time{}, true, +1
	case exact:
		return now.Add(time.Duration(best)), true, 0
	case far < 0:
		return time.Time{}, true, -1
	}
	return time.Time{}, false, 0
}

func (m *xModel) heldIDs() []int {
	var ids []int
	for _, rs := range [][]xRes{m.idle, m.lent} {
		for _, r := range rs {
			ids = append(ids, r.id)
		}
	}
	return ids
}
