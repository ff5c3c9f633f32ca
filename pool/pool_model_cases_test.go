package pool_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// TestModel runs random calls on a pool without a ward against the model.
// rapid's default of 100 runs suits every test run; a long one is
//
//	go test -run 'Model' ./pool/ -rapid.checks=20000
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		run(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), noWard)
	})
}

// TestModelRuntimeCalls runs the model with Reset, SetCeiling and
// SetLimits among the calls, bare and behind each kind of ward.
func TestModelRuntimeCalls(t *testing.T) {
	for _, wk := range []wardKind{noWard, permissive, refusing} {
		rapid.Check(t, func(rt *rapid.T) {
			runOps(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), wk, opTableRuntime)
		})
	}
}

// TestModelWithClasses runs the model, with the runtime's calls, on a
// pool given a class that holds nothing back: classes configured change no
// answer of a caller without a class, and their books add up at every
// step (see runOpsWith).
func TestModelWithClasses(t *testing.T) {
	for _, wk := range []wardKind{noWard, refusing} {
		rapid.Check(t, func(rt *rapid.T) {
			runOpsWith(rt, rapidSource{rt}, rapid.IntRange(1, 300).Draw(rt, "steps"), wk, opTableRuntime, true)
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
	p.Made(1, p.Gen(), base, 0)
	p.Close()
	if got := p.Made(1, p.Gen(), base, 0); got != p.Holds(1) {
		t.Errorf("Made(1) after Close = %v while Holds(1) = %v; the caller would close a handle the pool still lends", got, p.Holds(1))
	}
}

// TestModelMadeUnreservedLease is the shortest sequence for a loan taken on
// by Made without a Make: it must hold a lease like any other, or its Give
// releases another loan's and the limiter lets more out than its limit.
func TestModelMadeUnreservedLease(t *testing.T) {
	lim := ward.NewLimiter(ward.Aimd{Initial: 1, Min: 1, Max: 1})
	p, _ := pool.New[int](pool.Limits{}, ward.Ward{Limiter: lim})
	p.Made(1, p.Gen(), base, 0)
	first := p.Take(base, 0, 0)
	p.Give(1, base)
	second := p.Take(base, 0, 0)
	if lim.Inflight() != p.Books().Busy {
		t.Errorf("after Made(1) without Make, Take = %v, Give(1), Take = %v: limiter has %d leases for %d busy (limit 1)",
			first.Kind, second.Kind, lim.Inflight(), p.Books().Busy)
	}
}

// TestModelReaches drives the model from bytes drawn with a fixed seed, the
// way FuzzPool does, and then checks that the driver made the pool do each
// thing worth checking at least once: a driver that never reached a double
// give or an expiry at its very edge would pass without testing it.
// TestModelRuntimeReaches: with the runtime's calls, the driver makes the
// pool rotate a generation over a window and settle a reservation opened
// before the last Reset, the two cases a handful of random calls might
// never reach.
func TestModelRuntimeReaches(t *testing.T) {
	reached = map[string]int{}
	defer func() { reached = nil }()
	r := rand.New(rand.NewPCG(2026, 12))
	for range 400 {
		data := make([]byte, 100+r.IntN(1500))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		s := &byteSource{b: data}
		runOps(t, s, len(data), wardKind(s.intn(4, "ward")), opTableRuntime)
	}
	for _, want := range []string{"Reset over a window", "Made of a reservation older than the last Reset",
		"ResetFor true hold true", "ResetFor false hold true", "Take Wait hold", "Unmade none true"} {
		if reached[want] == 0 {
			t.Errorf("the driver never reached %q", want)
		}
	}
}

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
		"Unmade full true", "Unmade full false", "Take Wait full",
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
		p.Made(1, p.Gen(), base.Add(time.Second), c.extra)
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
			if pools[other].Books().Busy < pools[got].Books().Busy {
				rt.Fatalf("Pick of two open pools with %d and %d busy chose %d", pools[0].Books().Busy, pools[1].Books().Busy, got)
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
		p.Made(1, p.Gen(), base, 0)
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
