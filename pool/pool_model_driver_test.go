package pool_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// The driver of the model test: it draws calls from a source, makes each on
// a Pool and on the model, and checks that both answer alike (see
// pool_model_test.go).

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

// calls are the Pool's methods that change it: what a recorder wraps.
type calls interface {
	Take(now time.Time, roll float64, cpu int) pool.Taken[int]
	Made(item int, gen uint32, now time.Time, extra time.Duration) bool
	Unmade(now time.Time, roll float64, by ward.Guard) bool
	Give(item int, now time.Time) bool
	Drop(item int, now time.Time) bool
	Evict(now time.Time) []int
	Close() []int
	Reset(now time.Time, over time.Duration) []int
	ResetFor(item int, now time.Time, h pool.Hold) ([]int, bool)
	SetCeiling(n int, now time.Time) []int
	SetLimits(l pool.Limits, now time.Time) ([]int, error)
	Refusal(now time.Time) float64
	Loans(now time.Time) []pool.Lent[int]
}

// driver runs one pool and one model side by side.
type driver struct {
	t   tb
	p   *pool.Pool[int] // read directly (test-only reads, SeatOf)
	c   calls           // every call that changes p: p itself, or its recorder
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
	lowered bool   // SetLimits has been called: Live may be above Size
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
// Reset, F ResetFor (with a hold, or none), C SetCeiling, S SetLimits. The
// fuzz corpus decodes its bytes with opTable, which is
// left as it was.
const opTableRuntime = opTable + "RgtCSCgtSgFtut"

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
	runOpsWith(t, s, steps, wk, ops, false)
}

// runOpsWith is runOps; with classes, the pool is given a class that holds
// nothing back (no reserve, no ceiling: every caller of the model is of the
// default class), so it must answer as the model does, and after every
// step the classes' books must add up to the pool's.
func runOpsWith(t tb, s source, steps int, wk wardKind, ops string, classes bool) {
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
	if classes {
		if err := p.SetClasses([]pool.Class{{Name: "other"}}); err != nil {
			t.Fatalf("SetClasses: %v", err)
		}
	}
	d := &driver{t: t, p: p, c: p, m: &model{lim: lim, ceil: -1, room: -1}, w: w, wk: wk, lim: lim, now: start, foreign: 1, ops: ops}
	// With the runtime's calls and a ward a recording can rebuild, the run
	// is recorded (in a small ring, so that it rolls) and must replay.
	var rec *record.Pool[int]
	if ops == opTableRuntime {
		if rec, err = record.Wrap(p, record.New(record.MinLimit), start); err == nil {
			d.c = rec
		} else if !errors.Is(err, record.ErrUnrecordable) {
			t.Fatalf("Wrap: %v", err)
		}
	}
	if s.intn(3, "warm?") == 1 {
		d.warm(s)
	}
	for i := 0; i < steps && !s.done(); i++ {
		d.step(s)
		if classes {
			held := 0
			for _, c := range p.ClassBooks() {
				if c.Held != c.Lent+c.Making || c.Lent < 0 || c.Making < 0 {
					d.fail("class %q: %+v", c.Name, c)
				}
				held += c.Held
			}
			if b := p.Books(); held != b.Busy {
				d.fail("the classes hold %d, the pool %d busy", held, b.Busy)
			}
		}
	}
	d.finish()
	if rec != nil {
		if err := record.Replay(rec.Recording(nil)); err != nil {
			d.fail("the run's recording does not replay: %v", err)
		}
	}
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
		g, w := d.c.Drop(item, d.now), d.m.drop(item, d.now)
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
		d.fail("Take (-model +pool):\n%s", cmp.Diff(want, got))
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
	g, w := d.c.Made(item, uint32(d.m.gen), d.now, extra), d.m.made(item, d.m.gen, d.now, extra)
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
	g, w := d.c.Give(item, d.now), d.m.give(item, d.now)
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
		if got.Kind == pool.Wait && got.Guard != ward.GuardNone {
			d.reach("Take Wait " + got.Guard.String())
		}
		if got != want {
			d.fail("Take(%v) (-model +pool):\n%s", at, cmp.Diff(want, got))
		}
		if got.Kind == pool.Stale {
			handed = append(handed, got.Item)
		}
	case op == 'm':
		item, kind := d.pickItem(s, "made", true)
		arg, hasArg = item, true
		d.see(item)
		mayRefuse := d.mayRefuseMade(item)
		gen := d.drawGen(s)
		got := d.c.Made(item, uint32(gen), now, 0)
		var want bool
		if mayRefuse && !got {
			d.m.clock(now) // the ward's shedder or limiter said no: nothing changes
			d.reach("Made refused by the ward")
		} else {
			want = d.m.made(item, gen, now, 0)
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
		gen := d.drawGen(s)
		got := d.c.Made(item, uint32(gen), now, extra)
		var want bool
		if mayRefuse && !got {
			d.m.clock(now) // the ward's shedder or limiter said no: nothing changes
			d.reach("Made refused by the ward")
		} else {
			want = d.m.made(item, gen, now, extra)
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
		by := ward.GuardNone
		switch s.intn(6, "refused outside") {
		case 0:
			by = ward.GuardShared // a fleet's shared guard refused the make
		case 1, 2:
			by = ward.GuardFull // the backend had no room
		}
		got, want := d.c.Unmade(now, roll, by), d.m.unmade(now, by)
		d.logf("Unmade(%v, %v) = %v", at, by, got)
		d.reach(fmt.Sprint("Unmade ", by, " ", got))
		if got != want {
			d.fail("Unmade(%v, %v): got %v, want %v", at, by, got, want)
		}
	case op == 'g':
		item, kind := d.pickItem(s, "give", true)
		arg, hasArg = item, true
		d.see(item)
		got, want := d.c.Give(item, now), d.m.give(item, now)
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
		got, want := d.c.Drop(item, now), d.m.drop(item, now)
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
		got, want := d.c.Evict(now), d.m.evict(now)
		if edge {
			d.reach("Evict at an edge")
		}
		d.logf("Evict(%v) = %v", at, got)
		d.reach(fmt.Sprint("Evict ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Evict(%v), in any order (-model +pool):\n%s", at, diffItems(want, got))
		}
		handed = append(handed, got...)
	case op == 'l':
		got, want := d.c.Loans(now), d.m.loans(now)
		d.logf("Loans(%v) = %v", at, got)
		d.reach(fmt.Sprint("Loans ", len(got) > 0))
		d.checkLoans("Loans", got, want)
	case op == 'r':
		got := d.c.Refusal(now)
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
		var over time.Duration
		if s.intn(3, "rolling?") == 0 {
			over = time.Duration(1+s.intn(300, "over")) * time.Millisecond
		}
		got, want := d.c.Reset(now, over), d.m.reset(now, over)
		d.logf("Reset(%v, over %v) = %v", at, over, got)
		if over > 0 {
			d.reach("Reset over a window")
		}
		d.reach(fmt.Sprint("Reset ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Reset(%v), in any order (-model +pool):\n%s", at, diffItems(want, got))
		}
		handed = append(handed, got...)
	case op == 'F':
		item, kind := d.pickItem(s, "reset for", false)
		arg, hasArg = item, true
		d.see(item)
		var h pool.Hold
		if s.intn(3, "hold?") > 0 {
			h.For = time.Duration(1+s.intn(500, "hold for")) * time.Millisecond
			h.Every = time.Duration(s.intn(40, "hold every")) * time.Millisecond
		}
		got, ok := d.c.ResetFor(item, now, h)
		want, wok := d.m.resetFor(item, now, h)
		d.logf("ResetFor(%d %s, %v, %+v) = %v %v", item, kind, at, h, got, ok)
		d.reach(fmt.Sprint("ResetFor ", ok, " hold ", h.For > 0))
		if ok != wok || !sameItems(got, want) {
			d.fail("ResetFor(%d, %v): got %v %v, want %v %v", item, at, got, ok, want, wok)
		}
		handed = append(handed, got...)
	case op == 'C':
		n := s.intn(d.lim.Size+3, "ceiling") - 1 // -1 (none) to Size+1
		got, want := d.c.SetCeiling(n, now), d.m.setCeiling(n, now)
		d.logf("SetCeiling(%d, %v) = %v", n, at, got)
		d.reach(fmt.Sprint("SetCeiling ", n >= 0, " ", len(got) > 0))
		if c := d.p.Ceiling(); c != n {
			d.fail("Ceiling() = %d after SetCeiling(%d)", c, n)
		}
		if !slices.Equal(got, want) {
			d.fail("SetCeiling(%d, %v), oldest returned first (-model +pool):\n%s", n, at, cmp.Diff(want, got, cmpopts.EquateEmpty()))
		}
		handed = append(handed, got...)
	case op == 'S':
		l := d.drawLimits(s)
		got, err := d.c.SetLimits(l, now)
		if err != nil {
			d.fail("SetLimits(%+v, %v): %v", l, at, err)
		}
		want := d.m.setLimits(l, now)
		d.lowered = true
		d.logf("SetLimits(%+v, %v) = %v", l, at, got)
		d.reach(fmt.Sprint("SetLimits ", len(got) > 0, " lowered ", l.Size > 0 && d.m.live() > l.Size))
		if !sameItems(got, want) {
			d.fail("SetLimits(%+v, %v), in any order (-model +pool):\n%s", l, at, diffItems(want, got))
		}
		handed = append(handed, got...)
	case op == 'c' && s.intn(5, "really close") == 2:
		got, want := d.c.Close(), d.m.close()
		d.logf("Close() = %v", got)
		d.reach(fmt.Sprint("Close ", len(got) > 0))
		if !sameItems(got, want) {
			d.fail("Close(), in any order (-model +pool):\n%s", diffItems(want, got))
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

// drawLimits draws new limits for SetLimits: each field kept, lowered,
// raised or set to no limit, so that every way a live pool is resized comes.
func (d *driver) drawLimits(s source) pool.Limits {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	l := d.m.lim
	l.Size = s.intn(12, "new size")
	l.Idle = s.intn(12, "new idle")
	switch s.intn(3, "new keep") {
	case 0:
		l.Keep = 0
	case 1:
		l.Keep = ms(1 + s.intn(60, "keep"))
	}
	switch s.intn(3, "new life") {
	case 0:
		l.Life = 0
	case 1:
		l.Life = ms(1 + s.intn(120, "life"))
	}
	return l
}

// take calls Take on both, letting the model accept a ward's refusal.
func (d *driver) take(now time.Time, roll float64, cpu int) (got, want pool.Taken[int]) {
	got = d.c.Take(now, roll, cpu)
	if got.Kind == pool.Stale {
		got.Seat = 0 // the seat it left: the model does not number seats
	}
	if got.Kind == pool.Ready {
		// The seat is the pool's own numbering, which the model does not
		// keep: it must be the one the pool holds the item in.
		if s := d.p.SeatOf(got.Item); s != got.Seat {
			d.fail("Take lent %d from seat %d, but SeatOf says %d", got.Item, got.Seat, s)
		}
		got.Seat = 0
	}
	if d.wk == refusing && (got.Kind == pool.Later || got.Kind == pool.Shed || got.Kind == pool.Wait && got.Guard != ward.GuardNone) {
		return got, d.m.takeOr(now, &got)
	}
	return got, d.m.take(now)
}

// drawGen draws the generation a Made hands back: the pool's now, or, once
// a Reset has moved it on, now and then an older one: a make reserved
// before the Reset landing after it.
func (d *driver) drawGen(s source) int {
	if d.m.gen > 0 && s.intn(4, "old gen") == 0 {
		d.reach("Made of a reservation older than the last Reset")
		return d.m.gen - 1 - s.intn(min(d.m.gen, 3), "how old")
	}
	return d.m.gen
}

// mayRefuseMade reports whether the ward may refuse Made(item) now: with no
// reservation open, an item not held and room under Size, the pool asks the
// ward's shedder and limiter for the loan's flight and lease.
func (d *driver) mayRefuseMade(item int) bool {
	m := d.m
	return d.wk == refusing && m.making == 0 && !m.holds(item) && !m.closed &&
		(m.lim.Size == 0 || m.live() < m.lim.Size)
}
