package pool_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

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
	pairs  bool    // the ward lets Give/Take pairs pass unseen (Relent)

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
	if r, ok := accept(ward.GuardBackoff, ward.GuardBreaker, ward.GuardShedder, ward.GuardLimiter, ward.GuardBucket); ok {
		return r
	}
	m.making++
	return pool.Taken[int]{Kind: pool.Make}
}

// made is Made (extra 0) and MadeJitter. It answers whether the pool holds
// item afterwards, which is what Made's documentation promises.
func (m *model) made(item int, now time.Time, extra time.Duration) bool {
	t := m.clock(now)
	reserved := m.making > 0
	if reserved {
		m.making--
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
	if !reserved && m.lim.Size > 0 && m.live() >= m.lim.Size {
		return false
	}
	m.lent = append(m.lent, mseat{item: item, born: t + int64(extra), since: t, gen: m.gen})
	m.books.Made++
	m.books.Loans++
	return true
}

func (m *model) unmade(now time.Time) {
	m.clock(now)
	if m.making == 0 {
		return
	}
	m.making--
	m.books.Failed++
}

func (m *model) give(item int, now time.Time) bool {
	t := m.clock(now)
	where, i := m.find(item)
	switch where {
	case "":
		if m.making == 0 || m.closed {
			return false
		}
		m.making--
		m.lent = append(m.lent, mseat{item: item, born: t, since: t, gen: m.gen})
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
	if m.closed || s.gen != m.gen || (m.lim.Idle > 0 && len(m.idle) >= m.lim.Idle) {
		m.books.Retired++
		return false
	}
	m.idle = append(m.idle, mseat{item: item, born: s.born, since: t, gen: s.gen})
	return true
}

// reset retires everything idle and marks what is lent as of an older
// generation, retired when it comes back.
func (m *model) reset(now time.Time) []int {
	m.clock(now)
	if m.closed {
		return nil
	}
	m.gen++
	var out []int
	for _, s := range m.idle {
		out = append(out, s.item)
		m.books.Retired++
	}
	m.idle = nil
	return out
}

// relent is n Give/Take pairs of a lent item, the last at now, as a
// runtime reports them: the loan restarts at now, Loans and Reused rise.
func (m *model) relent(item, n int, now time.Time) bool {
	where, i := m.find(item)
	if n <= 0 || !m.pairs || where != "lent" {
		return false
	}
	m.lent[i].since = m.clock(now)
	m.books.Loans += uint64(n)
	m.books.Reused += uint64(n)
	return true
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
	return out
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
	if !ok {
		return time.Time{}, false
	}
	return m.epoch.Add(time.Duration(best)), true
}

func (m *model) booksNow() pool.Books {
	b := m.books
	b.Live, b.Idle, b.Busy = m.live(), len(m.idle), len(m.lent)+m.making
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

// source is where the driver takes its choices from: rapid's generators or
// the fuzzer's bytes.
type source interface {
	// intn returns a choice in [0, n).
	intn(n int, label string) int
	// done reports whether the source has run out of choices.
	done() bool
}

type rapidSource struct{ t *rapid.T }

func (r rapidSource) intn(n int, label string) int {
	return rapid.IntRange(0, n-1).Draw(r.t, label)
}
func (rapidSource) done() bool { return false }

// tb is what the driver needs of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// wardKind is the ward a run puts in front of the pool.
type wardKind int

const (
	noWard     wardKind = iota // the zero ward.Ward
	emptyWard                  // ward.Ward{} spelled out
	permissive                 // all five guards, each set so it never refuses
	refusing                   // all five guards, tight enough to refuse often
)

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// permissiveWard has every guard, each configured so that it never refuses:
// a pool behind it must answer exactly as a pool with none.
func permissiveWard(now time.Time) ward.Ward {
	br := ward.DefaultSre
	br.Protection = math.MaxInt32
	sh := ward.DefaultShed
	sh.CPU = 1000 // never hot: the driver's CPU readings stay under 1000
	return ward.Ward{
		Breaker: ward.NewBreaker(br, now),
		Bucket:  ward.NewBucket(1e15, 1e15, now),
		Backoff: &ward.Backoff{Base: 0, Factor: 1, Attempts: 1},
		Shedder: ward.NewShedder(sh, now),
		Limiter: ward.NewLimiter(ward.Aimd{Initial: 1 << 30, Min: 1 << 30, Max: 1 << 30}),
	}
}

// refusingWard has every guard, set tight so that each refuses now and
// then: a breaker with no free calls, a slow bucket, backoff after a failed
// make, a shedder that runs hot above half the CPU, and a limiter of a few.
func refusingWard(s source, now time.Time) ward.Ward {
	br := ward.DefaultSre
	br.Protection = float64(s.intn(3, "protection"))
	br.Window = time.Second
	sh := ward.DefaultShed
	sh.CPU = 500
	sh.Window = 100 * time.Millisecond
	sh.Latency = time.Duration(1+s.intn(20, "latency")) * time.Millisecond
	lim := 1 + s.intn(4, "limit")
	return ward.Ward{
		Breaker: ward.NewBreaker(br, now),
		Bucket:  ward.NewBucket(float64(5+s.intn(100, "rate")), float64(1+s.intn(3, "burst")), now),
		Backoff: &ward.Backoff{Base: time.Duration(1+s.intn(20, "backoff")) * time.Millisecond, Factor: 2, Cap: 50 * time.Millisecond, Attempts: 3, Jitter: ward.Spread(0.2)},
		Shedder: ward.NewShedder(sh, now),
		Limiter: ward.NewLimiter(ward.Aimd{Initial: lim, Min: 1, Max: lim + 2, Slow: 10 * time.Millisecond, Backoff: 0.5}),
	}
}

// driver runs one pool and one model side by side.
type driver struct {
	t   tb
	p   *pool.Pool[int]
	m   *model
	w   ward.Ward
	wk  wardKind
	lim pool.Limits

	now     time.Time // the caller's clock: it may step back
	fresh   int       // the last item minted
	foreign int       // the last foreign item: 0 (the zero int) first, then -1, -2, …
	handed  []int     // items handed to the caller to close, in order
	touched []int     // items the last call took or handed out
	far     bool      // whether the clock has jumped decades yet
	log     []string
	prev    pool.Books
	ops     string // the calls to draw from: opTable, or opTableRuntime
}

func (d *driver) logf(format string, args ...any) {
	d.log = append(d.log, fmt.Sprintf(format, args...))
}

func (d *driver) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("limits %+v\nsteps:\n  %s\n%s", d.lim, strings.Join(d.log, "\n  "), fmt.Sprintf(format, args...))
}

// reached counts what the driver has made the pool do, when not nil: see
// TestModelReaches.
var reached map[string]int

func (d *driver) reach(what string) {
	if reached != nil {
		reached[what]++
	}
}

func (d *driver) see(item int) { d.touched = append(d.touched, item) }

// pickDelay moves the caller's clock: mostly forward a few milliseconds,
// sometimes not at all, sometimes back, sometimes a long way forward.
func (d *driver) tick(s source) {
	var delta time.Duration
	switch c := s.intn(20, "clock"); {
	case c < 10:
		delta = time.Duration(1+s.intn(20, "ms")) * time.Millisecond
	case c < 13:
		delta = -time.Duration(1+s.intn(40, "back")) * time.Millisecond
	case c < 14:
		delta = time.Duration(1+s.intn(3, "hours")) * time.Hour
	case c < 15:
		if s.intn(8, "far?") == 5 && !d.far {
			// Once a run, decades forward or back: a stray reading.
			d.far = true
			years := 40 + s.intn(60, "years")
			if s.intn(2, "back?") == 1 {
				years = -years
			}
			d.now = d.now.AddDate(years, 0, 0)
			d.reach("clock decades away")
			return
		}
		delta = time.Duration(1+s.intn(1000, "ns")) * time.Nanosecond
	case c < 17:
		// To the edge of the next expiry: exactly Keep or Life old (still
		// fresh), or one nanosecond past it.
		if at, ok := d.m.next(); ok {
			d.now = at.Add(-time.Duration(s.intn(2, "edge")))
			d.reach("clock to an edge")
			return
		}
	default:
		delta = 0
	}
	d.now = d.now.Add(delta)
}

// pickItem chooses an item for Made, Give or Drop.
func (d *driver) pickItem(s source, label string, freshOK bool) (int, string) {
	kinds := []string{"lent", "lent", "lent", "idle", "handed", "foreign"}
	if freshOK {
		kinds = append(kinds, "fresh", "fresh")
	}
	k := kinds[s.intn(len(kinds), label)]
	switch k {
	case "lent":
		if n := len(d.m.lent); n > 0 {
			return d.m.lent[s.intn(n, label+" lent")].item, k
		}
	case "idle":
		if n := len(d.m.idle); n > 0 {
			return d.m.idle[s.intn(n, label+" idle")].item, k
		}
	case "handed":
		if n := len(d.handed); n > 0 {
			return d.handed[s.intn(n, label+" handed")], k
		}
	case "foreign":
		if d.foreign < 1 && s.intn(2, label+" reuse") == 0 {
			return d.foreign, k // a foreign item seen before
		}
		d.foreign--
		return d.foreign, k
	}
	d.fresh++
	return d.fresh, "fresh"
}

// opTable weighs the calls the driver makes, one letter a call: t Take, m
// Made, j MadeJitter, u Unmade, g Give, d Drop, e Evict, l Loans, r Refusal,
// k a clock step alone, c Close (one time in five that it is drawn). Close
// sits in the middle so that a source that favours the ends (rapid does)
// does not close every pool at once.
const opTable = "tttttgtmtgjmgutgmdtcgeltmgjrdugtktmegtgt"

// opTableRuntime adds the calls a runtime makes beyond taking and giving: R
// Reset, L Relent. The fuzz corpus decodes its bytes with opTable, which is
// left as it was.
const opTableRuntime = opTable + "RLLgLt"

func draw(s source) float64 {
	switch s.intn(8, "roll") {
	case 0:
		return math.NaN()
	case 1:
		return -1
	case 2:
		return 1
	}
	return float64(s.intn(1000, "roll value")) / 1000
}

// run drives one pool through steps calls chosen by s.
func run(t tb, s source, steps int, wk wardKind) { runOps(t, s, steps, wk, opTable) }

// runOps is run drawing its calls from ops.
func runOps(t tb, s source, steps int, wk wardKind, ops string) {
	t.Helper()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	lim := pool.Limits{Size: s.intn(12, "size"), Idle: s.intn(12, "idle")}
	if s.intn(3, "keep?") > 0 {
		lim.Keep = ms(1 + s.intn(60, "keep"))
	}
	if s.intn(3, "life?") > 0 {
		lim.Life = ms(1 + s.intn(120, "life"))
	}
	start := base.Add(time.Duration(s.intn(1000, "start")) * time.Millisecond)
	var w ward.Ward
	switch wk {
	case emptyWard:
		w = ward.Ward{}
	case permissive:
		w = permissiveWard(start)
	case refusing:
		w = refusingWard(s, start)
	}
	p, err := pool.New[int](lim, w)
	if err != nil {
		t.Fatalf("New(%+v): %v", lim, err)
	}
	d := &driver{t: t, p: p, m: &model{lim: lim, pairs: w.Shedder == nil && w.Limiter == nil}, w: w, wk: wk, lim: lim, now: start, foreign: 1, ops: ops}
	if s.intn(3, "warm?") == 1 {
		d.warm(s)
	}
	for i := 0; i < steps && !s.done(); i++ {
		d.step(s)
	}
	d.finish()
}

// warm fills the pool with up to 44 resources born at scattered instants
// (MadeJitter) and gives them back in a drawn order, so that the idle list
// and the birth heap hold many seats in every arrangement before the random
// calls start: the shapes a handful of random calls rarely build.
func (d *driver) warm(s source) {
	d.t.Helper()
	var out []int
	for range 4 + s.intn(41, "warm count") {
		d.now = d.now.Add(time.Duration(s.intn(5, "warm ms")) * time.Millisecond)
		item := d.warmMake(s)
		if item == 0 {
			break
		}
		out = append(out, item)
	}
	for len(out) > 0 {
		i := s.intn(len(out), "warm give")
		item := out[i]
		out = slices.Delete(out, i, i+1)
		d.warmGive(item)
	}
	// Churn: drop an idle one from anywhere in the heap and make and give
	// back a new one born at another scattered instant, each call followed
	// by the full check (Next reads the oldest-born idle seat). Removals
	// from the middle of a heap are where a heap goes wrong.
	for range s.intn(80, "churn") {
		if len(d.m.idle) == 0 {
			break
		}
		item := d.m.idle[s.intn(len(d.m.idle), "churn drop")].item
		before := d.m.heldSet()
		g, w := d.p.Drop(item, d.now), d.m.drop(item, d.now)
		d.logf("Drop(%d, %v) = %v", item, d.now.Sub(base), g)
		if g != w || !g {
			d.fail("Drop(%d): got %v, want %v", item, g, w)
		}
		d.handed = append(d.handed, item)
		d.checkFlow(before, []int{item}, item, true)
		d.check()
		if s.intn(3, "churn again") == 0 {
			continue // the pool shrinks
		}
		if made := d.warmMake(s); made != 0 {
			d.warmGive(made)
		}
	}
}

// warmMake takes, makes a fresh resource born at a scattered instant, and
// returns it, or 0 when Take did not answer Make.
func (d *driver) warmMake(s source) int {
	d.t.Helper()
	before := d.m.heldSet()
	got, want := d.take(d.now, 0, 0)
	d.logf("Take(%v) = %v %d", d.now.Sub(base), got.Kind, got.Item)
	if got != want {
		d.fail("Take: got %+v, want %+v", got, want)
	}
	if got.Kind != pool.Make {
		var handed []int
		if got.Kind == pool.Stale {
			handed = []int{got.Item}
			d.handed = append(d.handed, got.Item)
		}
		d.checkFlow(before, handed, 0, false)
		d.check()
		return 0
	}
	d.fresh++
	item := d.fresh
	d.see(item)
	extra := time.Duration(s.intn(201, "warm extra")-100) * time.Millisecond
	g, w := d.p.MadeJitter(item, d.now, extra), d.m.made(item, d.now, extra)
	d.logf("MadeJitter(%d, %v, %v) = %v", item, d.now.Sub(base), extra, g)
	if g != w || !g {
		d.fail("MadeJitter: got %v, want %v", g, w)
	}
	d.checkFlow(before, nil, item, true)
	d.check()
	return item
}

// warmGive gives item back, checked.
func (d *driver) warmGive(item int) {
	d.t.Helper()
	before := d.m.heldSet()
	g, w := d.p.Give(item, d.now), d.m.give(item, d.now)
	d.logf("Give(%d, %v) = %v", item, d.now.Sub(base), g)
	if g != w {
		d.fail("Give(%d): got %v, want %v", item, g, w)
	}
	var handed []int
	if !g {
		handed = []int{item}
		d.handed = append(d.handed, item)
	}
	d.checkFlow(before, handed, item, true)
	d.check()
}

// step makes one call on both, compares, and checks the invariants.
func (d *driver) step(s source) {
	d.t.Helper()
	before := d.m.heldSet()
	var handed []int // what this call hands the caller to close
	arg, hasArg := 0, false

	d.tick(s)
	now := d.now
	at := now.Sub(base)
	switch op := d.ops[s.intn(len(d.ops), "op")]; {
	case op == 't':
		roll, cpu := draw(s), s.intn(1000, "cpu")
		got, want := d.take(now, roll, cpu)
		d.logf("Take(%v) = %v %d", at, got.Kind, got.Item)
		d.reach("Take " + got.Kind.String())
		if got != want {
			d.fail("Take(%v): got %+v, want %+v", at, got, want)
		}
		if got.Kind == pool.Stale {
			handed = append(handed, got.Item)
		}
	case op == 'm':
		item, kind := d.pickItem(s, "made", true)
		arg, hasArg = item, true
		d.see(item)
		mayRefuse := d.mayRefuseMade(item)
		got := d.p.Made(item, now)
		var want bool
		if mayRefuse && !got {
			d.m.clock(now) // the ward's shedder or limiter said no: nothing changes
			d.reach("Made refused by the ward")
		} else {
			want = d.m.made(item, now, 0)
		}
		d.logf("Made(%d %s, %v) = %v", item, kind, at, got)
		d.reach(fmt.Sprint("Made ", kind, " ", got, d.m.closed))
		if got != want {
			d.fail("Made(%d, %v): got %v, want %v", item, at, got, want)
		}
		if !got {
			handed = append(handed, item)
		}
	case op == 'j':
		item, kind := d.pickItem(s, "made", true)
		arg, hasArg = item, true
		d.see(item)
		extra := time.Duration(s.intn(201, "extra")-100) * time.Millisecond
		mayRefuse := d.mayRefuseMade(item)
		got := d.p.MadeJitter(item, now, extra)
		var want bool
		if mayRefuse && !got {
			d.m.clock(now) // the ward's shedder or limiter said no: nothing changes
			d.reach("Made refused by the ward")
		} else {
			want = d.m.made(item, now, extra)
		}
		d.logf("MadeJitter(%d %s, %v, %v) = %v", item, kind, at, extra, got)
		d.reach(fmt.Sprint("MadeJitter ", kind, " ", got))
		if got != want {
			d.fail("MadeJitter(%d, %v, %v): got %v, want %v", item, at, extra, got, want)
		}
		if !got {
			handed = append(handed, item)
		}
	case op == 'u':
		roll := draw(s)
		d.p.Unmade(now, roll)
		d.m.unmade(now)
		d.logf("Unmade(%v)", at)
	case op == 'g':
		item, kind := d.pickItem(s, "give", true)
		arg, hasArg = item, true
		d.see(item)
		got, want := d.p.Give(item, now), d.m.give(item, now)
		d.logf("Give(%d %s, %v) = %v", item, kind, at, got)
		d.reach(fmt.Sprint("Give ", kind, " ", got, d.m.closed))
		if got != want {
			d.fail("Give(%d, %v): got %v, want %v", item, at, got, want)
		}
		if !got {
			handed = append(handed, item)
		}
	case op == 'd':
		item, kind := d.pickItem(s, "drop", false)
		arg, hasArg = item, true
		d.see(item)
		got, want := d.p.Drop(item, now), d.m.drop(item, now)
		d.logf("Drop(%d %s, %v) = %v", item, kind, at, got)
		d.reach(fmt.Sprint("Drop ", kind, " ", got))
		if got != want {
			d.fail("Drop(%d, %v): got %v, want %v", item, at, got, want)
		}
		handed = append(handed, item) // the caller closes it either way
	case op == 'e':
		edge := false
		if at, ok := d.m.next(); ok && d.m.started && !d.m.at().After(at) {
			edge = !now.Before(at.Add(-time.Nanosecond)) && !now.After(at)
		}
		got, want := d.p.Evict(now), d.m.evict(now)
		if edge {
			d.reach("Evict at an edge")
		}
		d.logf("Evict(%v) = %v", at, got)
		d.reach(fmt.Sprint("Evict ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Evict(%v): got %v, want %v (in any order)", at, got, want)
		}
		handed = append(handed, got...)
	case op == 'l':
		got, want := d.p.Loans(now), d.m.loans(now)
		d.logf("Loans(%v) = %v", at, got)
		d.reach(fmt.Sprint("Loans ", len(got) > 0))
		d.checkLoans("Loans", got, want)
	case op == 'r':
		got := d.p.Refusal(now)
		if d.w.Breaker != nil {
			d.m.clock(now) // only a breaker reads the clock
		}
		d.logf("Refusal(%v) = %v", at, got)
		if d.wk == refusing {
			if !(got >= 0 && got <= 1) {
				d.fail("Refusal(%v) = %v, want within [0, 1]", at, got)
			}
		} else if got != 0 {
			d.fail("Refusal(%v) = %v, want 0 (no breaker refusing)", at, got)
		}
	case op == 'R':
		got, want := d.p.Reset(now), d.m.reset(now)
		d.logf("Reset(%v) = %v", at, got)
		d.reach(fmt.Sprint("Reset ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Reset(%v): got %v, want %v (in any order)", at, got, want)
		}
		handed = append(handed, got...)
	case op == 'L':
		item, kind := d.pickItem(s, "relent", false)
		arg, hasArg = item, true
		n := s.intn(4, "relends")
		seat := d.p.SeatOf(item)
		got, want := d.p.Relent(seat, item, n, now), d.m.relent(item, n, now)
		d.logf("Relent(%d %s, %d, %v) = %v", item, kind, n, at, got)
		d.reach(fmt.Sprint("Relent ", kind, " ", got))
		if got != want {
			d.fail("Relent(%d, %d, %v): got %v, want %v", item, n, at, got, want)
		}
	case op == 'c' && s.intn(5, "really close") == 2:
		got, want := d.p.Close(), d.m.close()
		d.logf("Close() = %v", got)
		d.reach(fmt.Sprint("Close ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Close(): got %v, want %v (in any order)", got, want)
		}
		handed = append(handed, got...)
	default: // a clock step alone, or a Close not drawn
		d.logf("(clock to %v)", at)
	}
	for _, h := range handed {
		d.see(h)
	}
	d.handed = append(d.handed, handed...)
	d.checkFlow(before, handed, arg, hasArg)
	d.check()
}

// take calls Take on both, letting the model accept a ward's refusal.
func (d *driver) take(now time.Time, roll float64, cpu int) (got, want pool.Taken[int]) {
	got = d.p.Take(now, roll, cpu)
	if d.wk == refusing && (got.Kind == pool.Later || got.Kind == pool.Shed || got.Kind == pool.Wait && got.Guard != ward.GuardNone) {
		return got, d.m.takeOr(now, &got)
	}
	return got, d.m.take(now)
}

// mayRefuseMade reports whether the ward may refuse Made(item) now: with no
// reservation open, an item not held and room under Size, the pool asks the
// ward's shedder and limiter for the loan's flight and lease.
func (d *driver) mayRefuseMade(item int) bool {
	m := d.m
	return d.wk == refusing && m.making == 0 && !m.holds(item) && !m.closed &&
		(m.lim.Size == 0 || m.live() < m.lim.Size)
}

// checkFlow checks that nothing was lost or doubled by one call: every item
// that left the books was handed to the caller exactly once, nothing handed
// out is still on the books, and nothing joined the books but the call's own
// item.
func (d *driver) checkFlow(before map[int]bool, handed []int, arg int, hasArg bool) {
	d.t.Helper()
	after := d.m.heldSet()
	count := map[int]int{}
	for _, h := range handed {
		count[h]++
		if count[h] > 1 {
			d.fail("item %d handed out to close twice by one call", h)
		}
		if after[h] {
			d.fail("item %d handed out to close but still on the books", h)
		}
		if !before[h] && !(hasArg && h == arg) {
			d.fail("item %d handed out to close but was never on the books", h)
		}
	}
	for item := range before {
		if !after[item] && count[item] != 1 {
			d.fail("item %d left the books without being handed out to close", item)
		}
	}
	for item := range after {
		if !before[item] && !(hasArg && item == arg) {
			d.fail("item %d joined the books from nowhere", item)
		}
	}
}

// check compares the books and checks the invariants after a call.
func (d *driver) check() {
	d.t.Helper()
	p, m := d.p, d.m
	b := p.Books()
	if want := m.booksNow(); b != want {
		d.fail("Books:\n got %+v\nwant %+v", b, want)
	}
	if b.Live != p.Live() || b.Idle != p.Idle() || b.Busy != p.Busy() {
		d.fail("Books gauges %d/%d/%d differ from Live/Idle/Busy %d/%d/%d", b.Live, b.Idle, b.Busy, p.Live(), p.Idle(), p.Busy())
	}
	if b.Live != b.Idle+b.Busy {
		d.fail("live %d != idle %d + busy %d", b.Live, b.Idle, b.Busy)
	}
	if d.lim.Size > 0 && b.Live > d.lim.Size {
		d.fail("live %d > size %d", b.Live, d.lim.Size)
	}
	if d.lim.Idle > 0 && b.Idle > d.lim.Idle {
		d.fail("idle %d > idle ceiling %d", b.Idle, d.lim.Idle)
	}
	if b.Idle < 0 || b.Busy < 0 || p.Making() < 0 || p.Making() > b.Busy {
		d.fail("gauges out of range: %+v, making %d", b, p.Making())
	}
	if int(b.Made) != b.Live-p.Making()+int(b.Retired)+int(b.Dropped) {
		d.fail("Made %d != Live %d - making %d + Retired %d + Dropped %d", b.Made, b.Live, p.Making(), b.Retired, b.Dropped)
	}
	if b.IdleRetired+b.LifeRetired > b.Retired || b.Reused > b.Loans {
		d.fail("counters inconsistent: %+v", b)
	}
	pc, bc := counters(d.prev), counters(b)
	for i := range pc {
		if bc[i] < pc[i] {
			d.fail("a counter fell: was %+v, now %+v", d.prev, b)
		}
	}
	d.prev = b
	if p.Making() != m.making {
		d.fail("Making() = %d, want %d", p.Making(), m.making)
	}
	if p.IsClosed() != m.closed {
		d.fail("IsClosed() = %v, want %v", p.IsClosed(), m.closed)
	}
	// Every item the model holds is held, and every item the last call
	// touched is held exactly when the model holds it; with the counts
	// equal, the real pool holds nothing else.
	for _, s := range m.idle {
		if !p.Holds(s.item) {
			d.fail("Holds(%d) = false for an idle item", s.item)
		}
	}
	for _, s := range m.lent {
		if !p.Holds(s.item) {
			d.fail("Holds(%d) = false for a lent item", s.item)
		}
	}
	for _, item := range d.touched {
		if got, want := p.Holds(item), m.holds(item); got != want {
			d.fail("Holds(%d) = %v, want %v", item, got, want)
		}
	}
	d.touched = d.touched[:0]
	if held := len(m.idle) + len(m.lent); held != b.Idle+b.Busy-p.Making() {
		d.fail("%d items held, want idle %d + lent %d", held, b.Idle, b.Busy-p.Making())
	}
	gotAt, gotOK := p.Next()
	wantAt, wantOK := m.next()
	if gotOK != wantOK || !gotAt.Equal(wantAt) {
		d.fail("Next() = %v %v, want %v %v", gotAt, gotOK, wantAt, wantOK)
	}
	if m.started {
		// Loans at the latest instant: it moves nothing.
		d.checkLoans("Loans at the latest instant", p.Loans(m.at()), m.loans(m.at()))
		if err := d.checkLoansDisjoint(p.Loans(m.at())); err != "" {
			d.fail("%s", err)
		}
	}
	if d.w.Limiter != nil && d.w.Limiter.Inflight() != b.Busy {
		d.fail("limiter has %d leases out, want one per busy resource: %d", d.w.Limiter.Inflight(), b.Busy)
	}
	if d.w.Shedder != nil && d.w.Shedder.Flying() != b.Busy {
		d.fail("shedder has %d calls in flight, want one per busy resource: %d", d.w.Shedder.Flying(), b.Busy)
	}
}

// checkLoans compares Loans with the model's: the same loans, the longest
// held first.
func (d *driver) checkLoans(what string, got, want []pool.Lent[int]) {
	d.t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].Held > got[i-1].Held {
			d.fail("%s not longest first: %v", what, got)
		}
	}
	key := func(a, b pool.Lent[int]) int {
		if a.Item != b.Item {
			return a.Item - b.Item
		}
		return int(a.Held - b.Held)
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.SortFunc(g, key)
	slices.SortFunc(w, key)
	if !slices.Equal(g, w) {
		d.fail("%s: got %v, want %v", what, got, want)
	}
}

// checkLoansDisjoint checks no lent handle is also idle or lent twice.
func (d *driver) checkLoansDisjoint(loans []pool.Lent[int]) string {
	seen := map[int]bool{}
	for _, l := range loans {
		if seen[l.Item] {
			return fmt.Sprintf("item %d lent twice: %v", l.Item, loans)
		}
		seen[l.Item] = true
		if !d.p.Holds(l.Item) {
			return fmt.Sprintf("item %d lent but not held", l.Item)
		}
	}
	if idle := d.p.Live() - d.p.Making() - len(loans); idle != d.p.Idle() {
		return fmt.Sprintf("held minus lent is %d, Idle() is %d", idle, d.p.Idle())
	}
	return ""
}

// finish winds the pool down: close it, bring every loan home, settle every
// reservation; then nothing may be left and everything that entered must
// have been handed out.
func (d *driver) finish() {
	d.t.Helper()
	d.now = d.now.Add(time.Second)
	before := d.m.heldSet()
	got, want := d.p.Close(), d.m.close()
	d.logf("Close() = %v", got)
	if !sameItems(got, want) {
		d.fail("final Close(): got %v, want %v", got, want)
	}
	d.checkFlow(before, got, 0, false)
	for len(d.m.lent) > 0 {
		item := d.m.lent[0].item
		before := d.m.heldSet()
		g, w := d.p.Give(item, d.now), d.m.give(item, d.now)
		d.logf("Give(%d) = %v", item, g)
		if g || w {
			d.fail("Give(%d) after Close: got %v, want false", item, g)
		}
		d.checkFlow(before, []int{item}, item, true)
		d.check()
	}
	for d.m.making > 0 {
		d.p.Unmade(d.now, 0)
		d.m.unmade(d.now)
		d.logf("Unmade")
		d.check()
	}
	if b := d.p.Books(); b.Live != 0 || b.Idle != 0 || b.Busy != 0 {
		d.fail("after winding down: %+v", b)
	}
}

func counters(b pool.Books) []uint64 {
	return []uint64{b.Made, b.Failed, b.Loans, b.Reused, b.Retired, b.IdleRetired, b.LifeRetired, b.Dropped, b.Waited, b.Deferred, b.Shed}
}

func sameItems(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestModel runs random calls on a pool without a ward against the model.
// rapid's default of 100 runs suits every test run; a long one is
//
//	go test -run 'Model' ./pool/ -rapid.checks=20000
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), noWard)
	})
}

// TestModelRuntimeCalls runs the model with Reset and Relent among the
// calls, bare and behind each kind of ward.
func TestModelRuntimeCalls(t *testing.T) {
	for _, wk := range []wardKind{noWard, permissive, refusing} {
		rapid.Check(t, func(rt *rapid.T) {
			runOps(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), wk, opTableRuntime)
		})
	}
}

// TestModelEmptyWard runs the model with ward.Ward{} passed explicitly: an
// empty ward must answer exactly as none.
func TestModelEmptyWard(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), emptyWard)
	})
}

// TestModelPermissiveWard runs the model behind a ward whose every guard is
// set never to refuse: the answers must be those of a pool without a ward,
// and the limiter and shedder must hold exactly one lease and one flight per
// busy resource.
func TestModelPermissiveWard(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), permissive)
	})
}

// TestModelRefusingWard runs the model behind a ward whose guards refuse
// often. The model cannot say when a guard refuses, so it accepts a ward's
// answer where the pool asks its ward, and nowhere else; a refused take must
// change nothing but its counter, and the limiter and shedder must still
// hold exactly one lease and one flight per busy resource.
func TestModelRefusingWard(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), refusing)
	})
}

// TestModelLimits checks New against random limits, negative ones included.
func TestModelLimits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := pool.Limits{
			Size: rapid.IntRange(-3, 3).Draw(rt, "size"),
			Idle: rapid.IntRange(-3, 3).Draw(rt, "idle"),
			Keep: time.Duration(rapid.Int64Range(-3, 3).Draw(rt, "keep")),
			Life: time.Duration(rapid.Int64Range(-3, 3).Draw(rt, "life")),
		}
		bad := l.Size < 0 || l.Idle < 0 || l.Keep < 0 || l.Life < 0
		p, err := pool.New[int](l, ward.Ward{})
		if bad != (err != nil) {
			rt.Fatalf("New(%+v) = %v, want an error: %v", l, err, bad)
		}
		if bad && (p != nil || !errors.Is(err, pool.ErrLimits)) {
			rt.Fatalf("New(%+v) = %v, %v; want nil and an error wrapping ErrLimits", l, p, err)
		}
		if !bad && (p == nil || p.Limits() != l) {
			rt.Fatalf("New(%+v) = %v, want a pool with those limits", l, p)
		}
		if (l.Validate() != nil) != bad {
			rt.Fatalf("Validate(%+v) = %v", l, l.Validate())
		}
	})
}

// TestModelMadeAfterCloseHeld is the shortest sequence the model test found
// for Made after Close: a handle the pool still holds must not be handed to
// the caller to close while it stays on the books.
func TestModelMadeAfterCloseHeld(t *testing.T) {
	p, _ := pool.New[int](pool.Limits{}, ward.Ward{})
	p.Made(1, base)
	p.Close()
	if got := p.Made(1, base); got != p.Holds(1) {
		t.Errorf("Made(1) after Close = %v while Holds(1) = %v; the caller would close a handle the pool still lends", got, p.Holds(1))
	}
}

// TestModelMadeUnreservedLease is the shortest sequence for a loan taken on
// by Made without a Make: it must hold a lease like any other, or its Give
// releases another loan's and the limiter lets more out than its limit.
func TestModelMadeUnreservedLease(t *testing.T) {
	lim := ward.NewLimiter(ward.Aimd{Initial: 1, Min: 1, Max: 1})
	p, _ := pool.New[int](pool.Limits{}, ward.Ward{Limiter: lim})
	p.Made(1, base)
	first := p.Take(base, 0, 0)
	p.Give(1, base)
	second := p.Take(base, 0, 0)
	if lim.Inflight() != p.Busy() {
		t.Errorf("after Made(1) without Make, Take = %v, Give(1), Take = %v: limiter has %d leases for %d busy (limit 1)",
			first.Kind, second.Kind, lim.Inflight(), p.Busy())
	}
}

// TestModelReaches drives the model from bytes drawn with a fixed seed, the
// way FuzzPool does, and then checks that the driver made the pool do each
// thing worth checking at least once: a driver that never reached a double
// give or an expiry at its very edge would pass without testing it.
func TestModelReaches(t *testing.T) {
	reached = map[string]int{}
	defer func() { reached = nil }()
	r := rand.New(rand.NewPCG(2026, 11))
	for range 400 {
		data := make([]byte, 100+r.IntN(1500))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		s := &byteSource{b: data}
		run(t, s, len(data), wardKind(s.intn(4, "ward")))
	}
	for _, want := range []string{
		"Take Ready", "Take Stale", "Take Make", "Take Wait", "Take Closed",
		"Made fresh true false", "Made fresh false false", "Made lent true false", "Made idle true false",
		"Made lent true true", "Made handed true false", "Made foreign false true",
		"MadeJitter fresh true", "Give lent true false", "Give lent false false", "Give lent false true",
		"Give idle false false", "Give fresh true false", "Give fresh false true", "Give handed true false",
		"Give foreign false true", "Drop lent true", "Drop idle true", "Drop foreign false",
		"Evict true", "Close true", "Loans true", "clock to an edge", "Evict at an edge",
		"clock decades away", "Take Later", "Take Shed", "Made refused by the ward",
	} {
		if reached[want] == 0 {
			t.Errorf("the driver never reached %q", want)
		}
	}
	if t.Failed() {
		t.Logf("reached: %v", reached)
	}
}

// TestModelJitterExtremes gives MadeJitter the most extreme extras: a life
// shortened without bound is past Life at once, and one lengthened without
// bound never is. Wrapping arithmetic would turn either into the other.
func TestModelJitterExtremes(t *testing.T) {
	for _, c := range []struct {
		extra time.Duration
		want  pool.Kind
	}{
		{math.MinInt64, pool.Stale},
		{-time.Hour, pool.Stale},
		{time.Hour, pool.Ready},
		{math.MaxInt64, pool.Ready},
	} {
		p, _ := pool.New[int](pool.Limits{Life: time.Minute}, ward.Ward{})
		p.Take(base, 0, 0)
		p.MadeJitter(1, base.Add(time.Second), c.extra)
		p.Give(1, base.Add(2*time.Second))
		if got := p.Take(base.Add(3*time.Second), 0, 0); got.Kind != c.want {
			t.Errorf("MadeJitter(extra %v), Give, Take = %v, want %v", c.extra, got.Kind, c.want)
		}
	}
}

// TestModelWeighted checks nginx's smooth weighted round-robin against what
// it promises: over any stretch of as many picks as the weights add up to,
// from a fresh balancer, every target is served exactly its weight; a weight
// of zero or less is never served; -1 exactly when nothing can be; and a
// repeated name takes part once, under its first entry that has a weight
// (an entry of weight zero or less does not take part at all).
func TestModelWeighted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(rt, "targets")
		var targets []pool.Target
		total := 0
		first := map[string]int{}
		for i := range n {
			name := string(rune('a' + rapid.IntRange(0, 7).Draw(rt, "name")))
			w := rapid.IntRange(-2, 6).Draw(rt, "weight")
			targets = append(targets, pool.Target{Name: name, Weight: w})
			if _, dup := first[name]; !dup && w > 0 {
				first[name] = i
				total += w
			}
		}
		var b pool.Weighted
		served := map[int]int{}
		for range 3 * max(total, 1) {
			i := b.Pick(targets)
			if total == 0 {
				if i != -1 {
					rt.Fatalf("Pick(%v) = %d, want -1: no positive weight", targets, i)
				}
				continue
			}
			if i < 0 || i >= len(targets) || targets[i].Weight <= 0 || first[targets[i].Name] != i {
				rt.Fatalf("Pick(%v) = %d: not a target that can be served", targets, i)
			}
			served[i]++
		}
		for i, tg := range targets {
			if tg.Weight > 0 && first[tg.Name] == i && served[i] != 3*tg.Weight {
				rt.Fatalf("over three cycles of %v, target %d was served %d times, want %d", targets, i, served[i], 3*tg.Weight)
			}
		}
	})
}

// TestModelRoundRobin checks that any n turns over n targets serve each
// once, whatever the counts asked before.
func TestModelRoundRobin(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var r pool.RoundRobin
		for range rapid.IntRange(0, 20).Draw(rt, "warm") {
			r.Pick(rapid.IntRange(-1, 8).Draw(rt, "count"))
		}
		n := rapid.IntRange(-1, 8).Draw(rt, "n")
		if n <= 0 {
			if got := r.Pick(n); got != -1 {
				rt.Fatalf("Pick(%d) = %d, want -1", n, got)
			}
			return
		}
		seen := map[int]bool{}
		for range n {
			i := r.Pick(n)
			if i < 0 || i >= n || seen[i] {
				rt.Fatalf("Pick(%d) = %d after %v", n, i, seen)
			}
			seen[i] = true
		}
	})
}

// TestModelPick checks Pick over pools some of which are nil or closed: it
// answers an open pool whenever there is one, -1 only when there is none,
// and between two open pools with no breaker the one with fewer busy.
func TestModelPick(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 5).Draw(rt, "pools")
		pools := make([]*pool.Pool[int], n)
		open := 0
		for i := range pools {
			switch rapid.IntRange(0, 2).Draw(rt, "kind") {
			case 0:
				continue // nil
			case 1:
				p, _ := pool.New[int](pool.Limits{}, ward.Ward{})
				p.Close()
				pools[i] = p
			default:
				p, _ := pool.New[int](pool.Limits{}, ward.Ward{})
				for range rapid.IntRange(0, 3).Draw(rt, "busy") {
					p.Take(base, 0, 0)
				}
				pools[i] = p
				open++
			}
		}
		a, b := draw01(rt, "first"), draw01(rt, "second")
		got := pool.Pick(pools, base, a, b)
		switch {
		case open == 0 && got != -1:
			rt.Fatalf("Pick(%d pools, none open, %v, %v) = %d, want -1", n, a, b, got)
		case open > 0 && (got < 0 || got >= n || pools[got] == nil || pools[got].IsClosed()):
			rt.Fatalf("Pick(%d pools, %d open, %v, %v) = %d, not an open pool", n, open, a, b, got)
		}
		if n == 2 && open == 2 {
			other := 1 - got
			if pools[other].Busy() < pools[got].Busy() {
				rt.Fatalf("Pick of two open pools with %d and %d busy chose %d", pools[0].Busy(), pools[1].Busy(), got)
			}
		}
	})
}

func draw01(rt *rapid.T, label string) float64 {
	switch rapid.IntRange(0, 5).Draw(rt, label+" kind") {
	case 0:
		return math.NaN()
	case 1:
		return -0.5
	case 2:
		return 1.5
	}
	return rapid.Float64Range(0, 0.999999).Draw(rt, label)
}

// TestModelFarFirstInstant starts a pool's clock far from the instants that
// follow: a caller's stray zero time.Time, or a reading decades off. Ages are
// differences between later calls, so a resource idle for a second is still
// fresh under a minute's Keep and Life, and one idle for an hour is not.
func TestModelFarFirstInstant(t *testing.T) {
	for _, first := range []time.Time{{}, base.AddDate(-80, 0, 0)} {
		p, _ := pool.New[int](pool.Limits{Keep: time.Minute, Life: time.Minute}, ward.Ward{})
		p.Evict(first)
		p.Take(base, 0, 0)
		p.Made(1, base)
		p.Give(1, base.Add(time.Second))
		if got := p.Take(base.Add(2*time.Second), 0, 0); got.Kind != pool.Ready {
			t.Errorf("first instant %v: Take after 1s idle = %v, want Ready", first, got.Kind)
			continue
		}
		p.Give(1, base.Add(3*time.Second))
		if got := p.Take(base.Add(time.Hour), 0, 0); got.Kind != pool.Stale {
			t.Errorf("first instant %v: Take after an hour idle = %v, want Stale", first, got.Kind)
		}
	}
}
