package pool

import (
	"math"
	"time"
)

// index maps a draw in [0, 1) to one of n places. NaN and draws below zero
// read as 0, draws of 1 or more as the last place.
func index(draw float64, n int) int {
	switch {
	case !(draw > 0): // NaN too
		return 0
	case draw >= 1:
		return n - 1
	}
	if i := int(draw * float64(n)); i < n {
		return i
	}
	return n - 1
}

// Pick chooses which of several pools to one service to take from, by two
// random choices: first and second, draws in [0, 1), name two different
// pools, and of those the one whose breaker refuses less at now wins, then
// the one with fewer busy, then the first. Two random choices spread load
// almost as evenly as scanning every pool, for two draws.
//
// It answers an index into pools, or -1 when no pool can be chosen: pools is
// empty or holds only nil and closed pools. A nil or closed pool is never
// chosen while another of the two is open; NaN and out-of-range draws are
// read as described for index (below 0 and NaN as 0, 1 or more as the
// last). Pick reads the pools; it does not change them.
func Pick[T comparable](pools []*Pool[T], now time.Time, first, second float64) int {
	n := len(pools)
	if n == 0 {
		return -1
	}
	i := index(first, n)
	j := i
	if n > 1 {
		j = index(second, n-1)
		if j >= i {
			j++
		}
	}
	a, b := usable(pools[i]), usable(pools[j])
	switch {
	case !a && !b:
		// Both drawn are out: fall back to a scan so that one open pool
		// among many closed ones is still found.
		for k, p := range pools {
			if usable(p) {
				return k
			}
		}
		return -1
	case !a:
		return j
	case !b || i == j:
		return i
	}
	ra, rb := pools[i].Refusal(now), pools[j].Refusal(now)
	switch {
	case ra < rb:
		return i
	case rb < ra:
		return j
	case pools[j].busy() < pools[i].busy():
		return j
	}
	return i
}

func usable[T comparable](p *Pool[T]) bool { return p != nil && !p.closed }

// RoundRobin takes turns among targets. It holds only a cursor, so one per
// client costs nothing. The zero value starts at the first target. Not safe
// for concurrent use.
type RoundRobin struct {
	next int
}

// Pick returns the next of count targets, or -1 when count is zero or less.
// The cursor wraps at the current count, so it stays valid as targets come
// and go.
func (r *RoundRobin) Pick(count int) int {
	if count <= 0 {
		return -1
	}
	i := r.next % count
	if i < 0 {
		i = 0
	}
	r.next = (i + 1) % count
	return i
}

// Target is a name and a weight for Weighted.
type Target struct {
	Name   string
	Weight int
}

// Weighted is nginx's smooth weighted round-robin: every pick credits each
// target with its weight, serves the one with the most credit and charges it
// the total. Over a cycle each target gets its share of turns, interleaved: a
// weight of 5 is not five turns back to back.
//
// Credit is kept by name, so the list may change order between picks; a
// target that leaves the list loses its credit, earned under weights that may
// no longer hold. The zero value is ready to use. Not safe for concurrent
// use.
type Weighted struct {
	credit map[string]*credit
	round  uint64
}

type credit struct {
	value int64
	round uint64 // the last pick the target took part in
}

// Pick returns the index in targets of the one to serve next, or -1 when
// none can be: the list is empty or every weight is zero or less. A target
// with weight zero or less is never picked and earns no credit. When a name
// appears more than once, only its first entry takes part.
func (w *Weighted) Pick(targets []Target) int {
	if w.credit == nil {
		w.credit = make(map[string]*credit, len(targets))
	}
	w.round++
	best, bestCredit := -1, int64(math.MinInt64)
	var total int64
	for i, t := range targets {
		if t.Weight <= 0 {
			continue
		}
		c := w.credit[t.Name]
		if c == nil {
			c = &credit{}
			w.credit[t.Name] = c
		} else if c.round == w.round {
			continue // a repeated name
		}
		c.round = w.round
		c.value += int64(t.Weight)
		total += int64(t.Weight)
		if c.value > bestCredit {
			best, bestCredit = i, c.value
		}
	}
	for name, c := range w.credit {
		if c.round != w.round {
			delete(w.credit, name)
		}
	}
	if best >= 0 {
		w.credit[targets[best].Name].value -= total
	}
	return best
}
