package ward_test

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file walks the state space of the guards that keep state over time —
// Breaker, Bucket, Counter (the two-window estimate), Period — exhaustively
// over a small alphabet of events and clock steps (forward onto, before and
// after every edge the state has ahead, and back), and checks every answer
// and reading against a model written here from the formulas of the seeds
// (000 for the breaker, the bucket and the period, 004 for the two-window
// counter), through the exported API only. Backoff keeps no state of its
// own: the chain of waits a caller builds with it (each Decorrelated wait
// grows from the one before) is walked instead, and the state a pool keeps
// with one (failures in a row, the moment it may make again) is walked with
// the pool, in pool/exhaustive_test.go.
//
// A guard cannot be copied through its API, so each transition is checked on
// a guard rebuilt by replaying the path to its parent. States are
// deduplicated by a canonical form relative to now (times as offsets,
// clamped where every larger offset acts alike). Go deeper with
//
//	go test ./ward -run TestExhaustive -ward.depth=12 -v

var wardDepth = flag.Int("ward.depth", 0, "depth of the TestExhaustive walks of the guards (0: the default)")

// wBase is a whole second on the wall clock: a multiple of every window and
// period below, so aligned windows open on it.
var wBase = time.Unix(1_764_000_000, 0)

// wStep is one letter of a walk's alphabet: the clock moves by dt, then
// event op happens with argument arg.
type wStep struct {
	dt  time.Duration
	op  string
	arg float64
}

func (s wStep) String() string {
	var b strings.Builder
	if s.dt != 0 {
		fmt.Fprintf(&b, "clock %+v; ", s.dt)
	}
	b.WriteString(s.op)
	if strings.HasSuffix(s.op, "(") {
		fmt.Fprintf(&b, "%v)", s.arg)
	}
	return b.String()
}

// wMachine is one guard and its model, for walk. S is the model's state, a
// value (copied by assignment).
type wMachine[G, S any] struct {
	name  string
	guard func(now time.Time) G
	steps func(s *S, now time.Time) []wStep
	// real makes step st on the guard at now and says what it answered;
	// model does the same on the model. They must agree.
	real  func(g G, st wStep, now time.Time) string
	model func(s *S, st wStep, now time.Time, got string) string
	// look compares what the guard reads at now (changing nothing) with the
	// model; "" when they agree.
	look func(g G, s *S, now time.Time) string
	// key is the canonical form of the model's state at now.
	key func(s *S, now time.Time) string
}

type wNode[S any] struct {
	path []wStep
	s    S
	now  time.Time
}

// walkGuard explores m breadth first to depth from model state s0 and fails
// t at the first difference, with the path to it. It returns the distinct
// states, the transitions and the deepest level with a new state.
func walkGuard[G, S any](t *testing.T, m wMachine[G, S], s0 S, depth int, want ...string) (states, transitions, reached int) {
	answers := map[string]int{}
	seen := map[string]bool{m.key(&s0, wBase): true}
	frontier := []wNode[S]{{s: s0, now: wBase}}
	states = 1
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []wNode[S]
		for _, n := range frontier {
			for _, st := range m.steps(&n.s, n.now) {
				g := m.guard(wBase)
				now := wBase
				for _, p := range n.path {
					now = now.Add(p.dt)
					m.real(g, p, now)
				}
				now = now.Add(st.dt)
				s := n.s
				got := m.real(g, st, now)
				want := m.model(&s, st, now, got)
				transitions++
				answers[st.op+got]++
				msg := ""
				if got != want {
					msg = fmt.Sprintf("%v answered %s, want %s", st, got, want)
				} else {
					msg = m.look(g, &s, now)
				}
				if msg != "" {
					var b strings.Builder
					for i, p := range append(n.path, st) {
						fmt.Fprintf(&b, "\n\t%2d. %v", i+1, p)
					}
					t.Fatalf("%s: %s\npath (from %v):%s", m.name, msg, wBase, b.String())
				}
				k := m.key(&s, now)
				if seen[k] {
					continue
				}
				seen[k] = true
				if debugKeys {
					t.Logf("%d %q via %v", d, k, st)
				}
				states++
				path := append(append([]wStep(nil), n.path...), st)
				next = append(next, wNode[S]{path: path, s: s, now: now})
			}
		}
		if len(next) > 0 {
			reached = d + 1
		}
		frontier = next
	}
	// The walk must have reached each answer it is there to check: one
	// that never refused would pass without testing a refusal.
	for _, a := range want {
		if answers[a] == 0 {
			t.Errorf("%s: the walk never answered %q (answers: %v)", m.name, a, answers)
		}
	}
	return states, transitions, reached
}

func depthOr(def int) int {
	if *wardDepth > 0 {
		return *wardDepth
	}
	return def
}

// ---------------------------------------------------------------- Counter

// The two-window counter of seed 004: windows of cW on multiples of cW since
// the Unix epoch, and an event admitted only while
//
//	current + previous × (cW − elapsed) / cW  <  limit.
//
// The model multiplies through by cW, so it compares integers: the estimate
// is exact, and an estimate exactly at the limit is refused.
const (
	cW     = 4 // ns: every overlap is a quarter, exact in a float
	cLimit = 2
)

type counterModel struct {
	started   bool
	idx       int64 // the window current counts
	cur, prev int64
}

// at is where the model stands at ns: the window counted, the counts, and
// the previous window's weight times cW.
func (c *counterModel) at(ns int64) (idx, cur, prev, weight int64) {
	idx = floorDiv(ns, cW)
	into := ns - idx*cW
	switch {
	case !c.started || idx < c.idx-1 || idx > c.idx+1:
		// Nothing counted yet, the clock stepped back more than a window,
		// or both windows have passed: nothing counts.
		return idx, 0, 0, cW - into
	case idx == c.idx-1:
		// The window before: counted in the current one, at its start.
		return c.idx, c.cur, c.prev, cW
	case idx == c.idx+1:
		return idx, 0, c.cur, cW - into
	}
	return idx, c.cur, c.prev, cW - into
}

func floorDiv(n, d int64) int64 {
	q := n / d
	if n%d < 0 {
		q--
	}
	return q
}

func counterMachine() wMachine[*ward.Counter, counterModel] {
	return wMachine[*ward.Counter, counterModel]{
		name:  "Counter",
		guard: func(time.Time) *ward.Counter { return ward.NewCounter(cLimit, cW) },
		steps: func(c *counterModel, _ time.Time) []wStep {
			var out []wStep
			for _, dt := range []time.Duration{0, 1, 2, cW, 2 * cW, -1, -cW, -2 * cW} {
				out = append(out, wStep{dt: dt, op: "Take"})
			}
			// The clock moves with nothing taken (only read).
			for _, dt := range []time.Duration{-cW, 1, cW} {
				out = append(out, wStep{dt: dt, op: "read"})
			}
			return out
		},
		real: func(g *ward.Counter, st wStep, now time.Time) string {
			if st.op == "read" {
				return fmt.Sprint(g.Estimate(now))
			}
			return fmt.Sprint(g.Take(now))
		},
		model: func(c *counterModel, st wStep, now time.Time, got string) string {
			if st.op == "read" {
				return got // compared in look
			}
			ns := now.UnixNano()
			idx, cur, prev, weight := c.at(ns)
			c.started, c.idx, c.cur, c.prev = true, idx, cur, prev
			if cur*cW+prev*weight >= cLimit*cW {
				return "false"
			}
			c.cur++
			return "true"
		},
		look: func(g *ward.Counter, c *counterModel, now time.Time) string {
			for _, d := range []time.Duration{0, 1, 2, 3, cW, -1, -cW - 1} {
				at := now.Add(d)
				_, cur, prev, weight := c.at(at.UnixNano())
				want := float64(cur) + float64(prev)*float64(weight)/cW
				if got := g.Estimate(at); got != want {
					return fmt.Sprintf("Estimate at now%+v = %v, want %v", d, got, want)
				}
			}
			return ""
		},
		key: func(c *counterModel, now time.Time) string { return counterKey(c, now.UnixNano()) },
	}
}

// counterKey is the Counter model's canonical form at ns: the window it
// counts relative to now's, the offset into now's window, and the counts.
// Nothing is clamped: a window the clock has left comes back into play when
// the clock steps back to it, until the next Take moves the counter.
func counterKey(c *counterModel, ns int64) string {
	idx := floorDiv(ns, cW)
	if !c.started {
		return fmt.Sprintf("fresh %d", ns-idx*cW)
	}
	return fmt.Sprintf("%d %d %d %d", c.idx-idx, ns-idx*cW, c.cur, c.prev)
}

func TestExhaustiveCounter(t *testing.T) {
	states, transitions, reached := walkGuard(t, counterMachine(), counterModel{}, depthOr(9), "Taketrue", "Takefalse")
	t.Logf("Counter (limit %d, window %dns): %d states, %d transitions, depth %d", cLimit, cW, states, transitions, reached)
}

// ---------------------------------------------------------------- Period

// The fixed window of seed 000: at most pQuota events per period, the count
// starting again when a period ends; a period opens at the first event after
// the last one closed, or, aligned, on a multiple of the period since the
// Unix epoch. Readings within a period before the open one's start count in
// it; further back, they open a new one.
const (
	pQuota = 2
	pLen   = 4 // ns
)

type periodModel struct {
	align bool
	open  bool
	start int64 // UnixNano of the open period's start
	count int
}

func (p *periodModel) holds(ns int64) bool {
	return p.open && ns-p.start < pLen && p.start-ns < pLen
}

func periodMachine(align bool) wMachine[*ward.Period, periodModel] {
	return wMachine[*ward.Period, periodModel]{
		name:  fmt.Sprintf("Period(align %v)", align),
		guard: func(time.Time) *ward.Period { return ward.NewPeriod(pQuota, pLen, align) },
		steps: func(p *periodModel, _ time.Time) []wStep {
			var out []wStep
			for _, dt := range []time.Duration{0, 1, 2, pLen, -1, -pLen} {
				out = append(out, wStep{dt: dt, op: "Take"})
			}
			for _, dt := range []time.Duration{-pLen, 1, pLen} {
				out = append(out, wStep{dt: dt, op: "read"})
			}
			return out
		},
		real: func(g *ward.Period, st wStep, now time.Time) string {
			if st.op == "read" {
				return fmt.Sprint(g.Left(now))
			}
			return g.Take(now).String()
		},
		model: func(p *periodModel, st wStep, now time.Time, got string) string {
			if st.op == "read" {
				return got // compared in look
			}
			ns := now.UnixNano()
			if !p.holds(ns) {
				p.open, p.count, p.start = true, 0, ns
				if p.align {
					p.start = floorDiv(ns, pLen) * pLen
				}
			}
			switch {
			case p.count >= pQuota:
				return ward.Over.String()
			case p.count+1 == pQuota:
				p.count++
				return ward.Hit.String()
			}
			p.count++
			return ward.Under.String()
		},
		look: func(g *ward.Period, p *periodModel, now time.Time) string {
			for _, d := range []time.Duration{0, 1, 2, 3, pLen, -1, -pLen} {
				at := now.Add(d)
				ns := at.UnixNano()
				left, next := pQuota, time.Duration(0)
				if p.holds(ns) {
					left, next = pQuota-p.count, time.Duration(p.start+pLen-ns)
				}
				if got := g.Left(at); got != left {
					return fmt.Sprintf("Left at now%+v = %d, want %d", d, got, left)
				}
				if got := g.Next(at); got != next {
					return fmt.Sprintf("Next at now%+v = %v, want %v", d, got, next)
				}
			}
			return ""
		},
		key: func(p *periodModel, now time.Time) string {
			if !p.open {
				return "closed"
			}
			return fmt.Sprintf("%d %d", p.start-now.UnixNano(), p.count)
		},
	}
}

func TestExhaustivePeriod(t *testing.T) {
	for _, align := range []bool{false, true} {
		m := periodMachine(align)
		states, transitions, reached := walkGuard(t, m, periodModel{align: align}, depthOr(9), "Takeunder", "Takehit", "Takeover")
		t.Logf("%s (quota %d, period %dns): %d states, %d transitions, depth %d", m.name, pQuota, pLen, states, transitions, reached)
	}
}

// ---------------------------------------------------------------- Bucket

// The token bucket of seed 000: tokens accrue at bRate per second up to
// bBurst, the bucket starts full, a take of n succeeds when n are there.
// The model counts in billionths of a token, so that at bRate a nanosecond
// adds exactly bRate of them: its levels are exact where the bucket's are
// floats. A take whose exact level is within bSlack of what it asks may go
// either way (the float may fall a hair short); the model then follows the
// bucket, and the walk checks the promise that matters instead: a take at
// the moment Next names succeeds, and one a nanosecond earlier would not.
const (
	bRate  = 2
	bBurst = 2
	bUnit  = 1_000_000_000 // billionths of a token in a token
	bSlack = 4             // billionths
)

type bucketModel struct {
	tokens int64 // billionths, as of at
	at     int64 // ns after wBase
}

func (b *bucketModel) level(ns int64) int64 {
	if ns <= b.at {
		return b.tokens
	}
	d := ns - b.at
	if d > bBurst*bUnit/bRate { // full long since (and no overflow below)
		return bBurst * bUnit
	}
	return min(b.tokens+bRate*d, bBurst*bUnit)
}

// wait is the exact time until n tokens are there, nothing taken meanwhile:
// ceil(shortfall / rate), counted from the last reading when now is before
// it (a clock stepped back accrues nothing until it passes that reading).
func (b *bucketModel) wait(ns int64, n int64) int64 {
	need := n*bUnit - b.level(ns)
	if need <= 0 {
		return 0
	}
	return max(b.at-ns, 0) + (need+bRate-1)/bRate
}

func bucketMachine() wMachine[*ward.Bucket, bucketModel] {
	off := func(now time.Time) int64 { return int64(now.Sub(wBase)) }
	return wMachine[*ward.Bucket, bucketModel]{
		name:  "Bucket",
		guard: func(now time.Time) *ward.Bucket { return ward.NewBucket(bRate, bBurst, now) },
		steps: func(b *bucketModel, now time.Time) []wStep {
			dts := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, -250 * time.Millisecond, -1}
			// The edges: one before, on and after the moment one and two
			// tokens are there.
			for _, n := range []int64{1, 2} {
				if w := b.wait(off(now), n); w > 0 {
					dts = append(dts, time.Duration(w-1), time.Duration(w), time.Duration(w+1))
				}
			}
			slices.Sort(dts)
			dts = slices.Compact(dts)
			var out []wStep
			for _, dt := range dts {
				out = append(out, wStep{dt: dt, op: "Take(", arg: 1})
			}
			for _, n := range []float64{0, 2, 3, -1, math.NaN()} {
				out = append(out, wStep{op: "Take(", arg: n})
			}
			// The clock moves with nothing taken (only read).
			for _, dt := range []time.Duration{-250 * time.Millisecond, 1} {
				out = append(out, wStep{dt: dt, op: "read"})
			}
			return out
		},
		real: func(g *ward.Bucket, st wStep, now time.Time) string {
			if st.op == "read" {
				return fmt.Sprint(g.Tokens(now))
			}
			return fmt.Sprint(g.Take(now, st.arg))
		},
		model: func(b *bucketModel, st wStep, now time.Time, got string) string {
			ns := off(now)
			if st.op == "read" {
				return got // compared in look
			}
			if !(st.arg >= 0) {
				return "false" // nothing taken, nothing stored
			}
			level, want := b.level(ns), int64(st.arg)*bUnit
			if ns < b.at {
				b.at = ns // the clock stepped back: count from here, adding nothing
			}
			ok := level >= want
			if d := level - want; d >= -bSlack && d <= bSlack {
				ok = got == "true" // on the edge: a float may fall either side
			}
			if !ok {
				return "false"
			}
			b.tokens, b.at = max(level-want, 0), ns
			return "true"
		},
		look: func(g *ward.Bucket, b *bucketModel, now time.Time) string {
			ns := off(now)
			if got, want := g.Tokens(now), float64(b.level(ns))/bUnit; math.Abs(got-want) > float64(bSlack)/bUnit {
				return fmt.Sprintf("Tokens = %v, want %v", got, want)
			}
			for _, n := range []int64{1, 2} {
				d, w := g.Next(now, float64(n)), b.wait(ns, n)
				// Read at a now before the last reading, Next counts the
				// fill from that reading (the walk once found Next(2) =
				// 768.435455ms there, where 750ms is exact).
				over := time.Duration(bSlack)
				if d < time.Duration(w) || d > time.Duration(w)+over {
					return fmt.Sprintf("Next(%d) = %v, want %vns", n, d, w)
				}
				// The promise: a take at now+d succeeds. (It may name a
				// nanosecond or so after the exact moment: the shortfall is
				// a float, and the walk found Next(1) = 2ns where 1ns was
				// enough. That errs on the safe side, so only the bound
				// above is held.)
				if g.Tokens(now.Add(d)) < float64(n) {
					return fmt.Sprintf("Next(%d) = %v, but the tokens there are %v", n, d, g.Tokens(now.Add(d)))
				}
			}
			for _, n := range []float64{bBurst + 1, -1, math.NaN()} {
				if d := g.Next(now, n); d != ward.Never {
					return fmt.Sprintf("Next(%v) = %v, want Never", n, d)
				}
			}
			return ""
		},
		key: func(b *bucketModel, now time.Time) string {
			ns := off(now)
			return fmt.Sprintf("%d %d", b.level(ns), max(b.at-ns, 0))
		},
	}
}

func TestExhaustiveBucket(t *testing.T) {
	states, transitions, reached := walkGuard(t, bucketMachine(), bucketModel{tokens: bBurst * bUnit}, depthOr(6), "Take(true", "Take(false")
	t.Logf("Bucket (rate %d/s, burst %d): %d states, %d transitions, depth %d", bRate, bBurst, states, transitions, reached)
}

const debugKeys = false

// ---------------------------------------------------------------- Breaker

// The breaker of seed 000, with a window of two buckets of two nanoseconds.
// With accepts successes out of total calls in the window, failing the run
// of failing buckets before the newest and working the run of working ones:
//
//	w    = max(K − (K − Floor) × failing / Size, Floor)
//	drop = (total − Protection − w × accepts) / (total + 1) × (Size − working) / Size
//
// and a call is refused when its draw falls under drop, unless nothing has
// been let through for a whole Probe. The model keeps the window as two
// tallies and the index of the newest bucket since the window's origin.
var brPolicy = ward.Sre{K: 1.5, Floor: 1.1, Protection: 1, Probe: 5, Size: 2, Window: 4}

const (
	brWidth = 2 // ns
	brSpan  = 4 // ns
)

type brTally struct{ total, success, failure, drop int64 }

type breakerModel struct {
	origin, head int64 // the newest bucket opened at origin + head × width (ns after wBase)
	old, cur     brTally
	sent         bool
	last         int64
}

func (b *breakerModel) start() int64 { return b.origin + b.head*brWidth }

// write moves the window to ns as a write does: buckets passed are emptied;
// a now further back than the span starts the window over there.
func (b *breakerModel) write(ns int64) {
	d := ns - b.start()
	switch {
	case d < -brSpan:
		b.origin, b.head, b.old, b.cur = ns, 0, brTally{}, brTally{}
	case d < brWidth:
	default:
		n := d / brWidth
		b.head += n
		if n == 1 {
			b.old, b.cur = b.cur, brTally{}
		} else {
			b.old, b.cur = brTally{}, brTally{}
		}
	}
}

// fold is the runs over whole buckets, oldest first.
func fold(ts ...brTally) (failing, working int) {
	for _, t := range ts {
		switch {
		case t.success == 0 && t.failure == 0:
		case t.success == 0:
			failing, working = failing+1, 0
		case t.failure == 0:
			failing, working = 0, working+1
		default:
			failing, working = 0, 0
		}
	}
	return failing, working
}

func brDrop(total, accepts int64, failing, working int) float64 {
	p, size := brPolicy, float64(brPolicy.Size)
	w := max(p.K-(p.K-p.Floor)*float64(failing)/size, p.Floor)
	return (float64(total) - p.Protection - w*float64(accepts)) / (float64(total) + 1) * (size - float64(working)) / size
}

// ratio is what Ratio reads at ns: every bucket still in the window, the
// runs over whole ones only, nothing when the clock is back past the span.
func (b *breakerModel) ratio(ns int64) float64 {
	d := ns - b.start()
	var total, accepts int64
	var f, w int
	switch {
	case d < -brSpan:
	case d < brWidth:
		total, accepts = b.old.total+b.cur.total, b.old.success+b.cur.success
		f, w = fold(b.old)
	case d < 2*brWidth:
		total, accepts = b.cur.total, b.cur.success
		f, w = fold(b.cur)
	}
	return max(brDrop(total, accepts, f, w), 0)
}

func roll01(r float64) float64 {
	switch {
	case !(r > 0):
		return 0
	case r >= 1:
		return math.Nextafter(1, 0)
	}
	return r
}

func breakerMachine() wMachine[*ward.Breaker, breakerModel] {
	off := func(now time.Time) int64 { return int64(now.Sub(wBase)) }
	return wMachine[*ward.Breaker, breakerModel]{
		name:  "Breaker",
		guard: func(now time.Time) *ward.Breaker { return ward.NewBreaker(brPolicy, now) },
		steps: func(*breakerModel, time.Time) []wStep {
			out := []wStep{{op: "Pass"}, {op: "Fail"}}
			for _, r := range []float64{0, 0.5, 0.99} {
				out = append(out, wStep{op: "Allow(", arg: r})
			}
			for _, dt := range []time.Duration{1, brWidth, 2 * brWidth, -1, -brSpan - 1} {
				out = append(out, wStep{dt: dt, op: "read"})
			}
			return out
		},
		real: func(g *ward.Breaker, st wStep, now time.Time) string {
			switch st.op {
			case "Pass":
				g.Pass(now)
			case "Fail":
				g.Fail(now)
			case "Allow(":
				_, ok := g.Allow(now, st.arg)
				return fmt.Sprint(ok)
			}
			return ""
		},
		model: func(b *breakerModel, st wStep, now time.Time, got string) string {
			ns := off(now)
			switch st.op {
			case "Pass", "Fail":
				b.write(ns)
				b.cur.total++
				if st.op == "Pass" {
					b.cur.success++
				} else {
					b.cur.failure++
				}
			case "Allow(":
				b.write(ns)
				f, w := fold(b.old)
				d := brDrop(b.old.total+b.cur.total, b.old.success+b.cur.success, f, w)
				r := roll01(st.arg)
				probe := !b.sent || ns-b.last >= int64(brPolicy.Probe)
				refuse := d > 0 && r < d && !probe
				if math.Abs(r-d) < 1e-12 && !probe {
					refuse = got == "false" // on the edge: either
				}
				if refuse {
					b.cur.total++
					b.cur.drop++
					return "false"
				}
				b.sent, b.last = true, ns
				return "true"
			}
			return ""
		},
		look: func(g *ward.Breaker, b *breakerModel, now time.Time) string {
			for _, d := range []time.Duration{0, 1, brWidth, 2 * brWidth, -1, -brSpan - 1} {
				at := now.Add(d)
				if got, want := g.Ratio(at), b.ratio(off(at)); math.Abs(got-want) > 1e-12 {
					return fmt.Sprintf("Ratio at now%+v = %v, want %v", d, got, want)
				}
			}
			return ""
		},
		key: func(b *breakerModel, now time.Time) string {
			ns := off(now)
			since := int64(brPolicy.Probe)
			if b.sent {
				since = min(ns-b.last, since)
			}
			return fmt.Sprintf("%d %v %v %d", b.start()-ns, b.old, b.cur, since)
		},
	}
}

func TestExhaustiveBreaker(t *testing.T) {
	states, transitions, reached := walkGuard(t, breakerMachine(), breakerModel{}, depthOr(7), "Allow(true", "Allow(false")
	t.Logf("Breaker (%+v): %d states, %d transitions, depth %d", brPolicy, states, transitions, reached)
}

// ---------------------------------------------------------------- Backoff

// Backoff is a value and keeps nothing between calls; what keeps state over
// time is the chain a caller builds with it, each retry's number and the
// wait before it (Decorrelated grows from that). The walk takes every chain
// of draws from a few classes, out-of-range ones included, up to the
// attempts the policy allows, and holds every wait to seed 000's shape for
// its jitter, the ceiling being min(Base × Factor^(retry−1), Cap):
//
//	Rigid         the ceiling
//	Full          uniform over [0, ceiling]
//	Equal         ceiling/2 + uniform over [0, ceiling/2]
//	Decorrelated  uniform over [Base, 3 × previous], held to Cap
//	Spread(f)     uniform over [ceiling × (1 − f), ceiling × (1 + f)]
//
// where "uniform" reads the draw as a fraction (NaN and negatives as 0, one
// and more as just under 1), rounded to the nanosecond.
func TestExhaustiveBackoff(t *testing.T) {
	draws := []float64{0, 0.25, 0.5, 0.999, 1.5, -1, math.NaN()}
	states, transitions := 0, 0
	for _, j := range []ward.Jitter{ward.Rigid, ward.Full, ward.Equal, ward.Decorrelated, ward.Spread(0.25)} {
		b := ward.Backoff{Base: 100 * time.Millisecond, Factor: 3, Cap: time.Second, Attempts: 5, Jitter: j}
		type node struct {
			retry int
			prev  time.Duration
		}
		seen := map[node]bool{}
		frontier := []node{{}}
		for len(frontier) > 0 {
			var next []node
			for _, n := range frontier {
				if !b.More(n.retry + 1) {
					continue // the policy allows no further call
				}
				retry := n.retry + 1
				c := min(float64(b.Base)*math.Pow(b.Factor, float64(retry-1)), float64(b.Cap))
				if got := b.Ceiling(retry); math.Abs(float64(got)-c) > 1 {
					t.Fatalf("%v: Ceiling(%d) = %v, want %vns", j, retry, got, c)
				}
				for _, r := range draws {
					u := roll01(r)
					var want float64
					switch j {
					case ward.Rigid:
						want = c
					case ward.Full:
						want = c * u
					case ward.Equal:
						want = c/2 + c/2*u
					case ward.Decorrelated:
						lo := float64(b.Base)
						hi := max(3*float64(max(n.prev, b.Base)), lo)
						want = min(lo+(hi-lo)*u, float64(b.Cap))
					default:
						want = c * (1 - 0.25 + 2*0.25*u)
					}
					got := b.Delay(retry, r, n.prev)
					transitions++
					if math.Abs(float64(got)-want) > 1 {
						t.Fatalf("%v: Delay(%d, %v, %v) = %v, want %vns", j, retry, r, n.prev, got, want)
					}
					if s := (node{retry, got}); !seen[s] {
						seen[s] = true
						next = append(next, s)
					}
				}
			}
			frontier = next
		}
		states += len(seen)
		if b.More(b.Attempts) || !b.More(b.Attempts-1) {
			t.Errorf("%v: More is wrong at the last attempt", j)
		}
	}
	t.Logf("Backoff chains: %d distinct (retry, previous wait) states, %d waits checked", states, transitions)
}
