package pool_test

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// This file walks the Pool's state space exhaustively, the way a model
// checker does: from an empty pool, every sequence of calls up to a depth,
// for small sizes and each limit on and off. The rapid model test and
// FuzzPool sample sequences at random; the walk leaves none out.
//
// The alphabet at each state is built from what the state holds: Take with
// each class of draws, Unmade, Made of a fresh handle (with and without a
// life extra, extreme ones included) and of each held one, Give and Drop of
// each held resource and of a foreign one (never seen, and one the pool has
// let go of), Evict, Close, Reset, Reserve, Relent of each held one (Lane is
// checked at every state), a reading earlier than the
// latest, and clock steps that land one before, on and one after each
// resource's Keep and Life edge (and the edge of a backoff's hold), plus a
// step of one nanosecond and a step of decades. The walk may
// also begin with a stray zero time.Time as the pool's first reading.
//
// Resources are ints, numbered in the order the walk makes them (from 0, the
// zero value a pool must tell from an empty seat). A state is deduplicated by
// a canonical form that names no resource: the idle stack from the top with
// each resource's ages, and the lent ones' ages as a sorted multiset, where
// every age is clamped to one past its limit (past is past) and counters are
// left out (no decision reads them). Two paths to one canonical form lead to
// the same futures, as far as the reference model can tell, so one is
// expanded; every transition is checked, wherever it lands. (What the model
// cannot see, such as which seat of the arena a resource sits in, may differ
// between two paths merged this way; the walk expands the first path found,
// the shortest.)
//
// The pools walked (xConfigs): Size 1, 2, 3 and 0 (no limit), each with
// Idle off and 1, and Keep and Life each off and on; a few behind a ward
// Limiter with a fixed limit, and two behind a ward Backoff.
//
// At every state the walk checks the real Pool against a reference model
// written here from the documentation (xModel: slices and linear scans,
// nothing from the package's internals): every answer (kind, item, idle time,
// guard, what Evict and Close hand back), the full Books, Loans with their
// held times, Next, Holds of every handle the walk has used, the limiter's
// leases, and the Books identities. The Pool cannot be copied through its
// API, so each transition is checked on a pool rebuilt by replaying the path
// to its parent.
//
// Depth. The default depth is chosen so the walk finishes in about a minute
// on two slow cores; it is lower under -race, which scripts/test uses (see
// exhaustiveRaceDepth). Go deeper with
//
//	go test ./pool -run TestExhaustive -exhaustive.depth=9 -v
//
// which logs the distinct states, the transitions and the depth reached for
// every configuration.

var exhaustiveDepth = flag.Int("exhaustive.depth", 0,
	"depth of TestExhaustivePool's walk (0: the default, lower under -race)")

// Ages of the walk, in nanoseconds: small, so that every edge is a few steps
// away, and different, so that Keep and Life edges are told apart.
const (
	xKeep = 2 * time.Nanosecond
	xLife = 3 * time.Nanosecond
	// xDecades is a clock step of about 36 years, far past any age above.
	// It is taken at most once on a path: a resource with an unbounded
	// extra is documented as never past Life only within the decades the
	// pool's clock spans.
	xDecades = time.Duration(1) << 60
)

// xConfig is one pool the walk explores.
type xConfig struct {
	lim pool.Limits
	// leases is the fixed limit of a ward Limiter in front of the pool
	// (its AIMD bounds all set to it, so the limit never moves); 0 for no
	// ward.
	leases int
	// backoff puts a ward Backoff in front of the pool: rigid waits of
	// xBackoff.Base doubling to its Cap after each failed make.
	backoff bool
}

// xBackoff is the policy of the configurations with a backoff: waits of 2ns
// then 4ns (the cap), so that each edge is a step or two away.
var xBackoff = ward.Backoff{Base: 2, Factor: 2, Cap: 4, Attempts: 3}

func (c xConfig) String() string {
	s := fmt.Sprintf("size=%d idle=%d keep=%v life=%v", c.lim.Size, c.lim.Idle, c.lim.Keep > 0, c.lim.Life > 0)
	if c.leases > 0 {
		s += fmt.Sprintf(" leases=%d", c.leases)
	}
	if c.backoff {
		s += " backoff"
	}
	return s
}

// xConfigs is every pool walked: each Size up to 3 (and 0, no limit), Idle
// off and on, Keep and Life each off and on; and a few behind a limiter.
func xConfigs() []xConfig {
	var out []xConfig
	for _, size := range []int{1, 2, 3, 0} {
		for _, idle := range []int{0, 1} {
			for _, ages := range [][2]time.Duration{{0, 0}, {xKeep, 0}, {0, xLife}, {xKeep, xLife}} {
				out = append(out, xConfig{lim: pool.Limits{Size: size, Idle: idle, Keep: ages[0], Life: ages[1]}})
			}
		}
	}
	for _, size := range []int{2, 0} {
		out = append(out, xConfig{lim: pool.Limits{Size: size, Keep: xKeep, Life: xLife}, leases: 1})
	}
	out = append(out, xConfig{lim: pool.Limits{Size: 3, Idle: 1, Keep: xKeep, Life: xLife}, leases: 2})
	for _, size := range []int{2, 0} {
		out = append(out, xConfig{lim: pool.Limits{Size: size, Keep: xKeep}, backoff: true})
	}
	return out
}

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
	if m.backoff && m.failures > 0 && m.hold > 0 {
		m.books.Deferred++
		return pool.Taken[int]{Kind: pool.Later, Delay: time.Duration(m.hold), Guard: ward.GuardBackoff}
	}
	if m.noLease() {
		m.books.Waited++
		return pool.Taken[int]{Kind: pool.Wait, Guard: ward.GuardLimiter}
	}
	m.making++
	return pool.Taken[int]{Kind: pool.Make}
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

func (m *xModel) made(id int, extra time.Duration) bool {
	reserved := m.making > 0
	if reserved {
		m.making--
		m.failures, m.hold = 0, 0 // a make that succeeded ends the backoff
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
	if !reserved && (m.lim.Size > 0 && m.live() >= m.lim.Size || m.noLease()) {
		return false
	}
	m.lent = append(m.lent, born(id, extra))
	m.books.Made++
	m.books.Loans++
	return true
}

func (m *xModel) unmade() {
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

func (m *xModel) give(id int) bool {
	idle, i := m.find(id)
	if i < 0 {
		if m.making == 0 || m.closed {
			return false
		}
		m.making--
		m.failures, m.hold = 0, 0 // a make that succeeded ends the backoff
		m.lent = append(m.lent, xRes{id: id})
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
	r.since = 0
	m.idle = slices.Insert(m.idle, 0, r)
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

// relent is Relent: n Give/Take pairs a runtime made itself with lent
// resource id, reported now. Refused (false, nothing changed) with a
// limiter in the ward, n not positive, or id not lent.
func (m *xModel) relent(id, n int) bool {
	idle, i := m.find(id)
	if m.leases > 0 || n <= 0 || i < 0 || idle {
		return false
	}
	m.lent[i].since = 0
	m.books.Loans += uint64(n)
	m.books.Reused += uint64(n)
	return true
}

// lane is Lane: whether a Give and a Take of the same resource at once
// would change nothing but that loan and the books. With Idle at or above
// Size the Idle ceiling cannot bind a Give (one resource is lent, so fewer
// than Size are idle).
func (m *xModel) lane() bool {
	idleOK := m.lim.Idle == 0 || (m.lim.Size > 0 && m.lim.Idle >= m.lim.Size) || len(m.idle) < m.lim.Idle
	return m.leases == 0 && !m.closed && idleOK
}

// reserve is Reserve: a Make reservation without a caller, answered as
// Take would answer a Make (the idle ones are not looked at), a refusal
// counted nowhere.
func (m *xModel) reserve() bool {
	switch {
	case m.closed, m.lim.Size > 0 && m.live() >= m.lim.Size,
		m.backoff && m.failures > 0 && m.hold > 0, m.noLease():
		return false
	}
	m.making++
	return true
}

func (m *xModel) step(d int64) {
	m.hold -= d
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

// ---------------------------------------------------------------- the key

// clamp holds an age to [lo, limit+1]: every age past the limit acts alike.
func clamp(age int64, limit time.Duration, lo int64) int64 {
	if limit == 0 {
		return 0
	}
	return min(max(age, lo), int64(limit)+1)
}

func (m *xModel) lifeKey(r xRes) int64 {
	k := clamp(r.age, m.lim.Life, -2)
	if r.ext != 0 && m.lim.Life > 0 {
		k = int64(r.ext) * 1000
	}
	if r.old {
		k += 1 << 20 // lent before a Reset
	}
	return k
}

// key is the canonical form of w: no resource is named, ages are clamped,
// counters are left out. Lent resources are a sorted multiset; their held
// time decides nothing (it is only reported), so only their life counts.
func (w *xWorld) key() string {
	m := &w.m
	var b strings.Builder
	flags := 0
	for i, f := range []bool{m.closed, w.decades, w.far, w.gone >= 0} {
		if f {
			flags |= 1 << i
		}
	}
	b.WriteString(strconv.Itoa(flags))
	if m.backoff {
		// Failures past the second all wait the cap.
		fmt.Fprintf(&b, "b%d/%d", min(m.failures, 3), max(m.hold, 0))
	}
	b.WriteByte('m')
	b.WriteString(strconv.Itoa(m.making))
	b.WriteByte('i')
	for _, r := range m.idle {
		b.WriteString(strconv.FormatInt(clamp(r.since, m.lim.Keep, 0), 10))
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(m.lifeKey(r), 10))
		b.WriteByte(',')
	}
	b.WriteByte('l')
	lent := make([]int64, len(m.lent))
	for i, r := range m.lent {
		lent[i] = m.lifeKey(r)
	}
	slices.Sort(lent)
	for _, a := range lent {
		b.WriteString(strconv.FormatInt(a, 10))
		b.WriteByte(',')
	}
	return b.String()
}

// ---------------------------------------------------------------- the walk

// xOp names a call of the walk's alphabet.
type xOp uint8

const (
	opTake xOp = iota
	opTakeEarlier
	opMade
	opUnmade
	opGive
	opDrop
	opEvict
	opClose
	opStep
	opFarFirst
	opReset
	opReserve
	opRelent
)

// xCall is one concrete call: the op with its arguments resolved.
type xCall struct {
	op    xOp
	id    int           // Made, Give, Drop
	extra time.Duration // Made
	roll  float64       // Take
	cpu   int           // Take
	step  int64         // opStep, ns
	what  string        // for messages: which resource, by its role
}

func (c xCall) String() string {
	switch c.op {
	case opTake:
		return fmt.Sprintf("Take(roll %v, cpu %d)", c.roll, c.cpu)
	case opTakeEarlier:
		return "Take(an earlier reading)"
	case opMade:
		if c.extra != 0 {
			return fmt.Sprintf("MadeJitter(%d %s, %v)", c.id, c.what, c.extra)
		}
		return fmt.Sprintf("Made(%d %s)", c.id, c.what)
	case opUnmade:
		return "Unmade"
	case opGive:
		return fmt.Sprintf("Give(%d %s)", c.id, c.what)
	case opDrop:
		return fmt.Sprintf("Drop(%d %s)", c.id, c.what)
	case opEvict:
		return "Evict"
	case opClose:
		return "Close"
	case opStep:
		return fmt.Sprintf("clock +%v", time.Duration(c.step))
	case opFarFirst:
		return "Evict(zero time.Time) as the first reading"
	case opReset:
		return "Reset"
	case opReserve:
		return "Reserve"
	case opRelent:
		return fmt.Sprintf("Relent(%d %s, n %d)", c.id, c.what, c.cpu)
	}
	return "?"
}

// xWorld is the walk's state along one path: the model, the walk's clock,
// and the handles it has used.
type xWorld struct {
	m       xModel
	now     time.Time
	nextID  int  // the next fresh handle
	gone    int  // the last handle the pool let go of, or -1
	decades bool // the decades step has been taken
	far     bool // the pool's first reading was a zero time.Time
}

var xBase = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func (w *xWorld) clone() xWorld {
	c := *w
	c.m = w.m.clone()
	return c
}

// calls lists the alphabet at w.
func (w *xWorld) calls(depth int) []xCall {
	m := &w.m
	var out []xCall
	fresh := w.nextID
	for _, d := range [][2]float64{{0, 0}, {0.999999, 1000}, {math.NaN(), -1}} {
		out = append(out, xCall{op: opTake, roll: d[0], cpu: int(d[1])})
	}
	out = append(out, xCall{op: opTakeEarlier}, xCall{op: opUnmade})
	out = append(out, xCall{op: opMade, id: fresh, what: "fresh"})
	extras := []time.Duration{math.MinInt64}
	if m.lim.Life > 0 {
		extras = []time.Duration{1, -1, math.MinInt64, math.MaxInt64}
	}
	for _, e := range extras {
		out = append(out, xCall{op: opMade, id: fresh, extra: e, what: "fresh"})
	}
	// Each held resource, one per class of equal lent ones.
	var held []xCall
	for i, r := range m.idle {
		held = append(held, xCall{id: r.id, what: fmt.Sprintf("idle #%d", i)})
	}
	seen := map[int64]bool{}
	for _, r := range m.lent {
		k := m.lifeKey(r)
		if seen[k] {
			continue
		}
		seen[k] = true
		what := "lent"
		if r.old {
			what = "lent before a Reset"
		}
		held = append(held, xCall{id: r.id, what: what})
	}
	for i, h := range held {
		for _, op := range []xOp{opMade, opGive, opDrop, opRelent} {
			c := h
			c.op = op
			c.what = "held, " + h.what
			if op == opRelent {
				c.cpu = 2 // n, the pairs reported
			}
			out = append(out, c)
		}
		if i == len(held)-1 {
			// n of zero: refused.
			out = append(out, xCall{op: opRelent, id: h.id, what: "held, " + h.what})
		}
	}
	out = append(out,
		xCall{op: opGive, id: fresh, what: "foreign"},
		xCall{op: opDrop, id: fresh, what: "foreign"})
	if w.gone >= 0 {
		out = append(out, xCall{op: opGive, id: w.gone, what: "let go of"})
	}
	out = append(out, xCall{op: opEvict}, xCall{op: opClose}, xCall{op: opReset}, xCall{op: opReserve})
	if depth == 0 {
		out = append(out, xCall{op: opFarFirst})
	}
	// Clock steps: 1ns, then one before, on and after every edge ahead.
	steps := map[int64]bool{1: true}
	edge := func(d int64) {
		for _, s := range []int64{d - 1, d, d + 1} {
			if s > 0 {
				steps[s] = true
			}
		}
	}
	for _, r := range m.idle {
		if m.lim.Keep > 0 {
			edge(int64(m.lim.Keep) - r.since)
		}
	}
	for _, rs := range [][]xRes{m.idle, m.lent} {
		for _, r := range rs {
			if m.lim.Life > 0 && r.ext == 0 {
				edge(int64(m.lim.Life) - r.age)
			}
		}
	}
	if m.backoff && m.hold > 0 {
		edge(m.hold)
	}
	if !w.decades {
		steps[int64(xDecades)] = true
	}
	keys := make([]int64, 0, len(steps))
	for s := range steps {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	for _, s := range keys {
		out = append(out, xCall{op: opStep, step: s})
	}
	return out
}

// xRun is a pool with what the walk needs beside it.
type xRun struct {
	p   *pool.Pool[int]
	lim *ward.Limiter
	buf []pool.Lent[int]
}

func newRun(t testing.TB, c xConfig) *xRun {
	var w ward.Ward
	r := &xRun{}
	if c.leases > 0 {
		r.lim = ward.NewLimiter(ward.Aimd{Initial: c.leases, Min: c.leases, Max: c.leases})
		w.Limiter = r.lim
	}
	if c.backoff {
		b := xBackoff
		w.Backoff = &b
	}
	p, err := pool.New[int](c.lim, w)
	if err != nil {
		t.Fatalf("New(%+v): %v", c.lim, err)
	}
	r.p = p
	return r
}

// xAnswer is what a call answered, in one comparable form.
type xAnswer struct {
	taken pool.Taken[int]
	ok    bool
	items []int
}

func (a xAnswer) String() string {
	return fmt.Sprintf("{%v item %d idle %v delay %v guard %v} %v %v",
		a.taken.Kind, a.taken.Item, a.taken.Idle, a.taken.Delay, a.taken.Guard, a.ok, a.items)
}

// apply makes call c on the real pool at the walk's clock now (after a step,
// the new now), then reads the clock as every check does, so that a replay
// feeds the pool exactly what the checked run fed it.
func (r *xRun) apply(c xCall, now time.Time) xAnswer {
	var a xAnswer
	p := r.p
	switch c.op {
	case opTake:
		a.taken = p.Take(now, c.roll, c.cpu)
	case opTakeEarlier:
		a.taken = p.Take(now.Add(-1), 0, 0)
	case opMade:
		if c.extra == 0 {
			a.ok = p.Made(c.id, now)
		} else {
			a.ok = p.MadeJitter(c.id, now, c.extra)
		}
	case opUnmade:
		p.Unmade(now, 0.5)
	case opGive:
		a.ok = p.Give(c.id, now)
	case opDrop:
		a.ok = p.Drop(c.id, now)
	case opEvict:
		a.items = p.Evict(now)
	case opClose:
		a.items = p.Close()
	case opFarFirst:
		a.items = p.Evict(time.Time{})
	case opReset:
		a.items = p.Reset(now)
	case opReserve:
		a.ok = p.Reserve(now, 0, 0)
	case opRelent:
		a.ok = p.Relent(p.SeatOf(c.id), c.id, c.cpu, now)
	case opStep:
	}
	r.buf = p.AppendLoans(r.buf[:0], now)
	return a
}

// apply makes call c on the model and the walk's state, and returns what the
// pool should answer.
func (w *xWorld) apply(c xCall) xAnswer {
	m := &w.m
	var a xAnswer
	if c.id >= w.nextID && (c.op == opMade || c.op == opGive || c.op == opDrop) {
		w.nextID = c.id + 1
	}
	before := m.heldIDs()
	retired := m.books.Retired
	switch c.op {
	case opTake, opTakeEarlier:
		a.taken = m.take()
	case opMade:
		a.ok = m.made(c.id, c.extra)
	case opUnmade:
		m.unmade()
	case opGive:
		a.ok = m.give(c.id)
	case opDrop:
		a.ok = m.drop(c.id)
	case opEvict:
		a.items = m.evict()
	case opClose:
		a.items = m.close()
	case opReset:
		a.items = m.reset()
	case opReserve:
		a.ok = m.reserve()
	case opRelent:
		a.ok = m.relent(c.id, c.cpu)
	case opFarFirst:
		w.far = true
	case opStep:
		m.step(c.step)
		w.now = w.now.Add(time.Duration(c.step))
		if c.step == int64(xDecades) {
			w.decades = true
		}
	}
	// The last handle the pool let go of: one it held and holds no more,
	// or one it took on and let go of in the same call.
	for _, id := range before {
		if !m.holds(id) {
			w.gone = id
		}
	}
	if (c.op == opMade || c.op == opGive) && !a.ok && m.books.Retired > retired && !slices.Contains(before, c.id) {
		w.gone = c.id
	}
	return a
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

// ---------------------------------------------------------------- checks

// check compares the real pool after call c with the model, and the pool's
// books with their own identities. prev is the books before the call.
func (r *xRun) check(w *xWorld, c xCall, want, got xAnswer, prev pool.Books) string {
	p, m := r.p, &w.m
	slices.Sort(want.items)
	slices.Sort(got.items)
	if got.taken != want.taken || got.ok != want.ok || !slices.Equal(got.items, want.items) {
		return fmt.Sprintf("%v answered %v, want %v", c, got, want)
	}
	b, wb := p.Books(), m.booksNow()
	if b != wb {
		return fmt.Sprintf("after %v the books are\n\t%+v, want\n\t%+v", c, b, wb)
	}
	switch {
	case b.Live != b.Idle+b.Busy:
		return fmt.Sprintf("after %v Live %d != Idle %d + Busy %d", c, b.Live, b.Idle, b.Busy)
	case int64(b.Made) != int64(b.Live-p.Making())+int64(b.Retired)+int64(b.Dropped):
		return fmt.Sprintf("after %v Made %d != Live %d - making %d + Retired %d + Dropped %d",
			c, b.Made, b.Live, p.Making(), b.Retired, b.Dropped)
	case b.IdleRetired+b.LifeRetired > b.Retired || b.Reused > b.Loans:
		return fmt.Sprintf("after %v the books contradict themselves: %+v", c, b)
	case b.Made < prev.Made || b.Failed < prev.Failed || b.Loans < prev.Loans || b.Reused < prev.Reused ||
		b.Retired < prev.Retired || b.IdleRetired < prev.IdleRetired || b.LifeRetired < prev.LifeRetired ||
		b.Dropped < prev.Dropped || b.Waited < prev.Waited || b.Deferred < prev.Deferred || b.Shed < prev.Shed:
		return fmt.Sprintf("after %v a counter fell: %+v, before %+v", c, b, prev)
	case p.Live() != b.Live || p.Idle() != b.Idle || p.Busy() != b.Busy:
		return fmt.Sprintf("after %v Live/Idle/Busy = %d/%d/%d, books say %d/%d/%d",
			c, p.Live(), p.Idle(), p.Busy(), b.Live, b.Idle, b.Busy)
	case p.Making() != m.making || p.IsClosed() != m.closed:
		return fmt.Sprintf("after %v Making %d closed %v, want %d %v", c, p.Making(), p.IsClosed(), m.making, m.closed)
	case p.Lane() != m.lane():
		return fmt.Sprintf("after %v Lane = %v, want %v", c, p.Lane(), m.lane())
	}
	if r.lim != nil && r.lim.Inflight() != m.busy() {
		return fmt.Sprintf("after %v the limiter holds %d leases for %d busy", c, r.lim.Inflight(), m.busy())
	}
	// Loans: every lent resource with its held time, longest first.
	for i := 1; i < len(r.buf); i++ {
		if r.buf[i].Held > r.buf[i-1].Held {
			return fmt.Sprintf("after %v Loans is not longest first: %v", c, r.buf)
		}
	}
	wantLoans := make([]pool.Lent[int], len(m.lent))
	for i, x := range m.lent {
		wantLoans[i] = pool.Lent[int]{Item: x.id, Held: time.Duration(x.since)}
	}
	gotLoans := slices.Clone(r.buf)
	byItem := func(a, b pool.Lent[int]) int { return a.Item - b.Item }
	slices.SortFunc(wantLoans, byItem)
	slices.SortFunc(gotLoans, byItem)
	if !slices.Equal(gotLoans, wantLoans) {
		return fmt.Sprintf("after %v Loans = %v, want %v", c, gotLoans, wantLoans)
	}
	// Next: exact, or decades away when an extreme extra decides it.
	at, ok := p.Next()
	wat, wok, far := m.next(w.now)
	const decades = 30 * 365 * 24 * time.Hour
	switch {
	case ok != wok:
		return fmt.Sprintf("after %v Next = %v %v, want ok %v", c, at, ok, wok)
	case far == 0 && wok && !at.Equal(wat):
		return fmt.Sprintf("after %v Next = %v, want %v (now %v)", c, at, wat, w.now)
	case far > 0 && !at.Before(w.now.Add(-decades)):
		return fmt.Sprintf("after %v Next = %v, want decades before now %v", c, at, w.now)
	case far < 0 && !at.After(w.now.Add(decades)):
		return fmt.Sprintf("after %v Next = %v, want decades after now %v", c, at, w.now)
	}
	for id := range w.nextID + 1 {
		if p.Holds(id) != m.holds(id) {
			return fmt.Sprintf("after %v Holds(%d) = %v, want %v", c, id, p.Holds(id), m.holds(id))
		}
	}
	return ""
}

// ---------------------------------------------------------------- driver

type xNode struct {
	path []xCall
	w    xWorld
}

// xStats is what one walk explored.
type xStats struct {
	states, transitions, depth int
	reached                    map[string]int
}

// replay builds a pool and feeds it path, as the checked run did.
func replay(t testing.TB, c xConfig, path []xCall) *xRun {
	r := newRun(t, c)
	now := xBase
	for _, call := range path {
		if call.op == opStep {
			now = now.Add(time.Duration(call.step))
		}
		r.apply(call, now)
	}
	return r
}

// walk explores config c breadth first to depth and fails t at the first
// difference, with the path that leads to it.
func walk(t testing.TB, c xConfig, depth int) xStats {
	st := xStats{reached: map[string]int{}}
	root := xWorld{m: xModel{lim: c.lim, leases: c.leases, backoff: c.backoff}, now: xBase, gone: -1}
	seen := map[string]bool{root.key(): true}
	frontier := []xNode{{w: root}}
	st.states = 1
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []xNode
		for _, n := range frontier {
			for _, call := range n.w.calls(d) {
				r := replay(t, c, n.path)
				prev := r.p.Books()
				w := n.w.clone()
				want := w.apply(call)
				got := r.apply(call, w.now)
				st.transitions++
				st.note(call, want, &w)
				if msg := r.check(&w, call, want, got, prev); msg != "" {
					var b strings.Builder
					for i, pc := range n.path {
						fmt.Fprintf(&b, "\n\t%2d. %v", i+1, pc)
					}
					fmt.Fprintf(&b, "\n\t%2d. %v", len(n.path)+1, call)
					t.Fatalf("%v: %s\npath:%s", c, msg, b.String())
				}
				k := w.key()
				if seen[k] {
					continue
				}
				seen[k] = true
				st.states++
				next = append(next, xNode{path: append(slices.Clip(n.path), call), w: w})
			}
		}
		if len(next) > 0 {
			st.depth = d + 1
		}
		frontier = next
	}
	return st
}

// note counts what a transition exercised, so the test can show the walk
// reached every kind of answer it is meant to check.
func (st *xStats) note(c xCall, want xAnswer, w *xWorld) {
	switch c.op {
	case opTake, opTakeEarlier:
		k := "Take " + want.taken.Kind.String()
		if want.taken.Guard != ward.GuardNone {
			k += " " + want.taken.Guard.String()
		}
		st.reached[k]++
	case opMade, opGive, opDrop:
		st.reached[fmt.Sprintf("%v %s %v closed=%v", [...]string{opMade: "Made", opGive: "Give", opDrop: "Drop"}[c.op],
			strings.SplitN(c.what, ",", 2)[0], want.ok, w.m.closed)]++
		if strings.HasSuffix(c.what, "before a Reset") {
			st.reached[fmt.Sprintf("%s of one lent before a Reset %v", strings.Fields(c.String())[0][:4], want.ok)]++
		}
		if c.op == opMade && c.extra != 0 {
			st.reached[fmt.Sprintf("MadeJitter %d", int64(c.extra))]++
		}
	case opEvict, opClose, opReset:
		st.reached[fmt.Sprintf("%v %d", c, min(len(want.items), 2))]++
	case opReserve:
		st.reached[fmt.Sprintf("Reserve %v", want.ok)]++
	case opRelent:
		st.reached[fmt.Sprintf("Relent %v", want.ok)]++
	case opStep:
		if c.step == int64(xDecades) {
			st.reached["clock decades"]++
		}
	case opFarFirst:
		st.reached["far first reading"]++
	}
}

// The default depths: about a minute on two slow cores (see the file's
// comment), the lower one under -race. Measured on a shared two-core
// machine: depth 7 without -race took 28 s of CPU (698,085 states,
// 7,190,829 transitions), depth 6 under -race 34 s of CPU (231,648 states,
// 2,221,363 transitions); each level deeper costs about three times more.
const (
	exhaustiveNormalDepth = 7
	exhaustiveRaceDepth   = 6
)

// TestExhaustivePool walks every configuration of xConfigs to the depth of
// -exhaustive.depth, checks the pool at every transition, and logs the
// distinct states, transitions and depth reached.
func TestExhaustivePool(t *testing.T) {
	depth := *exhaustiveDepth
	if depth <= 0 {
		depth = exhaustiveNormalDepth
		if xRace {
			depth = exhaustiveRaceDepth
		}
	}
	start := time.Now()
	total := xStats{reached: map[string]int{}}
	var mu sync.Mutex
	// One subtest per configuration, run in parallel: the walk uses every
	// core the machine gives the test.
	t.Run("walk", func(t *testing.T) {
		for _, c := range xConfigs() {
			t.Run(c.String(), func(t *testing.T) {
				t.Parallel()
				st := walk(t, c, depth)
				t.Logf("%d states, %d transitions, depth %d", st.states, st.transitions, st.depth)
				mu.Lock()
				defer mu.Unlock()
				total.states += st.states
				total.transitions += st.transitions
				total.depth = max(total.depth, st.depth)
				for k, v := range st.reached {
					total.reached[k] += v
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("all %d configurations to depth %d: %d states, %d transitions, deepest new state at depth %d, in %v",
		len(xConfigs()), depth, total.states, total.transitions, total.depth, time.Since(start).Round(time.Millisecond))
	want := []string{
		"Take Ready", "Take Stale", "Take Make", "Take Wait", "Take Wait limiter", "Take Closed", "Take Later backoff",
		"Made fresh true closed=false", "Made fresh false closed=false", "Made fresh false closed=true",
		"Made held true closed=false", "Made held true closed=true",
		"Give held true closed=false", "Give held false closed=false", "Give held false closed=true",
		"Give foreign false closed=false", "Give foreign true closed=false", "Give let go of false closed=false",
		"Drop held true closed=false", "Drop foreign false closed=false",
		"Evict 0", "Evict 1", "Close 1", "Reset 1", "Reserve true", "Reserve false", "Relent true", "Relent false", "Give of one lent before a Reset false", "clock decades", "far first reading",
		"MadeJitter -9223372036854775808", "MadeJitter 9223372036854775807",
	}
	if depth >= 5 {
		want = append(want, "Evict 2", "Close 2")
	}
	for _, k := range want {
		if total.reached[k] == 0 {
			t.Errorf("the walk never reached %q", k)
		}
	}
	if t.Failed() {
		t.Logf("reached: %v", total.reached)
	}
}
