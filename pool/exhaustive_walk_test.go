package pool_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// The walker of the exhaustive test (see exhaustive_test.go): the calls
// each state offers, the canonical form states are deduplicated by, and the
// breadth-first walk itself.

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
	if m.roomOn {
		fmt.Fprintf(&b, "r%d/%d", m.room, max(m.roomLeft, 0))
	}
	if m.holdOn && m.holdLeft > 0 {
		fmt.Fprintf(&b, "h%d/%d", m.holdLeft, max(m.holdNext, 0))
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
	opGiveEarlier // Give at a reading 1ns before the latest (a late Give)
	opDrop
	opEvict
	opClose
	opStep
	opFarFirst
	opReset
	opReserve
	opUnmadeFull // Unmade with ward.GuardFull: the backend had no room
	opResetFor   // ResetFor with xHold
)

// xCall is one concrete call: the op with its arguments resolved.
type xCall struct {
	op    xOp
	id    int           // Made, Give, Drop
	extra time.Duration // Made
	old   bool          // Made: settles a reservation opened before the last Reset
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
	case opGiveEarlier:
		return fmt.Sprintf("Give(%d %s, 1ns before the latest reading)", c.id, c.what)
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
	case opUnmadeFull:
		return "Unmade(full)"
	case opResetFor:
		return fmt.Sprintf("ResetFor(%d %s, hold)", c.id, c.what)
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
	hold    bool // the configuration offers ResetFor with xHold
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
	out = append(out, xCall{op: opTakeEarlier}, xCall{op: opUnmade}, xCall{op: opUnmadeFull})
	out = append(out, xCall{op: opMade, id: fresh, what: "fresh"})
	if m.making > 0 {
		// Made under a reservation taken before the last Reset: the
		// Make answer's generation, handed back after the pool moved on.
		out = append(out, xCall{op: opMade, id: fresh, old: true, what: "fresh, reserved before a Reset"})
	}
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
	for _, h := range held {
		for _, op := range []xOp{opMade, opGive, opGiveEarlier, opDrop} {
			c := h
			c.op = op
			c.what = "held, " + h.what
			out = append(out, c)
		}
	}
	out = append(out,
		xCall{op: opGive, id: fresh, what: "foreign"},
		xCall{op: opDrop, id: fresh, what: "foreign"})
	if w.gone >= 0 {
		out = append(out, xCall{op: opGive, id: w.gone, what: "let go of"})
	}
	out = append(out, xCall{op: opEvict}, xCall{op: opClose}, xCall{op: opReset}, xCall{op: opReserve})
	if w.hold {
		// ResetFor on the word of the first held resource of each kind:
		// the top idle one, a lent one, one lent before the last Reset.
		kinds := map[string]bool{}
		for _, h := range held {
			if k := strings.SplitN(h.what, " ", 2)[0] + fmt.Sprint(strings.Contains(h.what, "Reset")); !kinds[k] {
				kinds[k] = true
				out = append(out, xCall{op: opResetFor, id: h.id, what: h.what})
			}
		}
	}
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
	if m.roomOn && m.roomLeft > 0 {
		edge(m.roomLeft)
	}
	if m.holdOn && m.holdLeft > 0 {
		edge(m.holdLeft)
		if m.holdNext > 0 {
			edge(m.holdNext)
		}
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

// apply makes call c on the model and the walk's state, and returns what the
// pool should answer.
func (w *xWorld) apply(c xCall) xAnswer {
	m := &w.m
	var a xAnswer
	if c.id >= w.nextID && (c.op == opMade || c.op == opGive || c.op == opGiveEarlier || c.op == opDrop) {
		w.nextID = c.id + 1
	}
	before := m.heldIDs()
	retired := m.books.Retired
	switch c.op {
	case opTake, opTakeEarlier:
		a.taken = m.take()
	case opMade:
		a.ok = m.made(c.id, c.extra, c.old)
	case opUnmade:
		a.ok = m.unmade()
	case opResetFor:
		a.items, a.ok = m.resetFor(c.id)
	case opUnmadeFull:
		a.ok = m.unmadeFull()
	case opGive:
		a.ok = m.give(c.id, 0)
	case opGiveEarlier:
		a.ok = m.give(c.id, 1)
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
	root := xWorld{m: xModel{lim: c.lim, leases: c.leases, backoff: c.backoff}, now: xBase, gone: -1, hold: c.hold}
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
	case opUnmadeFull:
		st.reached[fmt.Sprintf("Unmade full %v", want.ok)]++
	case opUnmade:
		st.reached[fmt.Sprintf("Unmade %v", want.ok)]++
	case opResetFor:
		st.reached[fmt.Sprintf("ResetFor hold %v", want.ok)]++
	case opStep:
		if c.step == int64(xDecades) {
			st.reached["clock decades"]++
		}
	case opFarFirst:
		st.reached["far first reading"]++
	}
}
