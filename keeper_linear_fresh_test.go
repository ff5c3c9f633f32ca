package wardpool

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/goleak"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// Issue 32: the lane lent a resource that had sat idle 25 s with Keep
// 10 s, and the linearizability check missed it. These tests hold the
// specification's own rule of freshness to hand-written histories, and
// drive a Keeper through the schedule that lent it.

// linIssue32 is the smallest history the issue reports (Size 2, Keep 10 s,
// Idle 0), with its instants, the clock moved by move at [21, 22]: the
// 25 s of the issue lends c1 idle past Keep at [23, 25].
func linIssue32(move time.Duration) *linHistory {
	h := newLinScript(pool.Limits{Size: 2, Keep: 10 * time.Second}).h
	add := func(client int, call, ret int64, in linIn, out linOut) {
		h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	}
	add(0, 1, 4, linIn{kind: linAcquire, n: 1}, linOut{id: 1, dialed: 1})
	add(1001, 2, 3, linIn{kind: linLand, n: 1, id: 1, own: true}, linOut{})
	add(0, 5, 6, linIn{kind: linTry, n: 2}, linOut{err: linWouldWait, dialed: 2})
	add(0, 7, 10, linIn{kind: linRelease, n: 3, id: 1}, linOut{})
	add(2, 9, 11, linIn{kind: linAcquire, n: 4}, linOut{id: 1})
	add(2, 12, 13, linIn{kind: linTry, n: 5}, linOut{err: linWouldWait})
	add(2, 14, 15, linIn{kind: linRelease, n: 6, id: 1}, linOut{})
	add(1, 16, 17, linIn{kind: linTry, n: 7}, linOut{id: 1})
	add(1002, 18, 36, linIn{kind: linLand, n: 2, id: 2}, linOut{})
	add(1, 19, 20, linIn{kind: linRelease, n: 8, id: 1}, linOut{})
	add(3, 21, 22, linIn{kind: linAdvance, n: 9, d: move}, linOut{})
	add(2, 23, 25, linIn{kind: linAcquire, n: 10}, linOut{id: 1})
	add(0, 24, 31, linIn{kind: linAcquire, n: 11}, linOut{id: 2})
	add(2, 26, 27, linIn{kind: linRelease, n: 12, id: 1}, linOut{})
	add(1, 28, 29, linIn{kind: linAcquire, n: 13}, linOut{id: 1})
	add(1, 30, 35, linIn{kind: linRelease, n: 14, id: 1}, linOut{})
	add(0, 32, 33, linIn{kind: linDestroy, n: 15, id: 2}, linOut{})
	return h
}

// TestLinearSpecFresh holds the specification's own rule of freshness to
// the issue's history and to the edges of Keep and Life.
func TestLinearSpecFresh(t *testing.T) {
	lim := func(idle int, keep, life time.Duration) pool.Limits {
		return pool.Limits{Size: 2, Idle: idle, Keep: keep, Life: life}
	}
	keep := 10 * time.Second
	cases := []struct {
		name  string
		h     *linHistory
		want  bool
		stale int // loans past Keep or Life in every order (linHistory.staleLends)
	}{
		{"the issue's history: c1 lent idle 25 s, Keep 10 s", linIssue32(25 * time.Second), false, 1},
		{"the issue's history, the clock moved Keep + 1 ns", linIssue32(keep + 1), false, 1},
		{"the issue's history, the clock moved Keep: fresh", linIssue32(keep), true, 0},
		{"the issue's history, the clock moved 3 s", linIssue32(3 * time.Second), true, 0},
		{"idle exactly Keep is lent", newLinScript(lim(0, keep, 0)).dialed(1).release(1).advance(keep).acquire(1).h, true, 0},
		{"idle Keep + 1 ns is not", newLinScript(lim(0, keep, 0)).dialed(1).release(1).advance(keep + 1).acquire(1).h, false, 1},
		{"idle Keep + 1 ns: a new one is dialed", newLinScript(lim(0, keep, 0)).dialed(1).release(1).advance(keep + 1).dialed(2).h, true, 0},
		{"exactly Life old is lent",
			newLinScript(lim(0, keep, 25*time.Second)).dialed(1).release(1).advance(keep).acquire(1).release(1).advance(keep).acquire(1).
				release(1).advance(5 * time.Second).acquire(1).h, true, 0},
		{"Life + 1 ns old is not, however busy",
			newLinScript(lim(0, keep, 25*time.Second)).dialed(1).release(1).advance(keep).acquire(1).release(1).advance(keep).acquire(1).
				release(1).advance(5*time.Second + 1).acquire(1).h, false, 1},
		{"a background resource is fresh from its landing",
			newLinScript(lim(0, keep, 0)).dialed(1).tryWait(2).advance(keep).acquire(2).h, true, 0},
		{"a background resource past Keep after its landing",
			newLinScript(lim(0, keep, 0)).dialed(1).tryWait(2).advance(keep + 1).acquire(2).h, false, 1},
		{"a resource still lent is not lent again",
			newLinScript(lim(0, keep, 0)).dialed(1).acquire(1).h, false, 1},
		{"over the Idle ceiling a return is retired, not lent",
			newLinScript(lim(1, keep, 0)).dialed(1).dialed(2).release(1).release(2).acquire(1).acquire(2).h, false, 0},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(c.h.model(), c.h.ops); got != c.want {
			t.Errorf("%s: linearizable %v, want %v\n%s", c.name, got, c.want, c.h.describe())
		}
		if got := c.h.staleLends(); len(got) != c.stale {
			t.Errorf("%s: %d loans past Keep or Life in every order, want %d: %q", c.name, len(got), c.stale, got)
		}
	}
}

// TestLinearSpecFreshOwnBook shows that freshness is the specification's
// own rule, not the Pool's: with the specification's book saying c1 came
// back 11 s ago (Keep 10 s) and its Pool lending c1 all the same, the loan
// is refused; with the book saying 10 s, it is allowed.
func TestLinearSpecFreshOwnBook(t *testing.T) {
	h := newLinScript(pool.Limits{Size: 2, Keep: 10 * time.Second}).dialed(1).release(1).h
	var steps []linStep
	for _, o := range h.ops {
		steps = append(steps, linStep{o.Input.(linIn), o.Output.(linOut)})
	}
	for _, c := range []struct {
		ago  time.Duration
		want bool
	}{{10 * time.Second, true}, {11 * time.Second, false}} {
		m := h.machine(steps)
		o := m.own[1]
		o.back = m.now.Add(-c.ago)
		m.own[1] = o
		if got := m.apply(linIn{kind: linAcquire, n: 9}, linOut{id: 1}); got != c.want {
			t.Errorf("c1 given back %v ago by the specification's book, fresh by the Pool's: lent %v, want %v", c.ago, got, c.want)
		}
	}
}

// TestKeeperLinearizableStraddle drives a Keeper through the issue's
// schedule, one call at a time: c1 lent, given back and lent again (by
// the lane, where there is one); a TryAcquire's background dial of c2,
// held; then c2's landing under way while c1 is given back and the clock
// moves 25 s (linWorld.straddle); then an Acquire. With Idle 0 the issue's
// lane lent c1, idle 25 s with Keep 10 s; with Idle 1, a return through
// the inbox reached the Pool after c2's landing, and the Idle ceiling
// retired c1 where it should have retired c2 (each in about 24 runs of
// 25; the schedule is the scheduler's to keep). The history must be
// linearizable.
func TestKeeperLinearizableStraddle(t *testing.T) {
	for _, idle := range []int{0, 1} {
		t.Run(map[int]string{0: "idle0", 1: "idle1"}[idle], func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			c := linConfig{limits: pool.Limits{Size: 2, Idle: idle, Keep: 10 * time.Second}, workers: 1, fresh: true, edges: true}
			w, h := newLinWorld(t, c, 0)
			r := rand.New(rand.NewPCG(32, 5))
			loans := make([][]Loan[*res], 1)
			w.acquireOp(0, &loans[0]) // c1, dialed
			w.releaseOp(0, r, &loans[0])
			w.tryOp(0, &loans[0]) // c1
			w.releaseOp(0, r, &loans[0])
			w.tryOp(0, &loans[0]) // c1 again
			w.tryOp(0, &loans[0]) // ErrWouldWait: c2's dial, held
			clocktest.Eventually(t, "c2's dial to wait at its gate", func() bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				return slices.ContainsFunc(w.gates, func(g *linGate) bool { return g.waiting })
			})
			if !w.straddle(t, r, loans, 25*time.Second) {
				t.Fatalf("no straddle: loans %v", loans)
			}
			w.endRound(t)
			w.acquireOp(0, &loans[0])
			for len(loans[0]) > 0 {
				w.releaseOp(0, r, &loans[0])
			}
			w.statsOp(0)
			w.endRound(t)
			w.finish(t, h, false)
			res, info := porcupine.CheckOperationsVerbose(h.model(), h.ops, 10*time.Second)
			if res != porcupine.Ok {
				h.info = info
				t.Errorf("not linearizable:\n%s", h.describe())
			}
		})
	}
}
