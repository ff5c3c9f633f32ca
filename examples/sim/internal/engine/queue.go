package engine

import (
	"slices"
	"time"
)

// slot is a queued caller as it was when queued (gen): a caller that left
// the queue (served, or gave up) is recycled, and the slot it left behind
// must not serve the next caller it becomes ahead of its turn.
type slot struct {
	c   *caller
	gen uint32
}

// valid reports whether the slot's caller is still queued there.
func (s slot) valid() bool { return s.c != nil && s.c.gen == s.gen && s.c.state == stQueued }

func (r *run) enqueue(c *caller, t int64) {
	c.state = stQueued
	r.deadline(c)
	if r.qlive == 0 {
		r.satAt = t
		r.ep = Episode{From: time.Duration(t)}
	}
	r.queue = append(r.queue, slot{c, c.gen})
	r.qlive++
	r.ep.Depth = max(r.ep.Depth, r.qlive)
	r.cur.QueueMax = max(r.cur.QueueMax, r.qlive)
}

// requeue puts c back at the front of the queue, as the Keeper does with
// a caller whose dial failed while the pool holds (Pool.Unmade answering
// true): the next resource, or the next dial, is its.
func (r *run) requeue(c *caller, t int64) {
	c.state = stQueued
	r.deadline(c)
	if r.qlive == 0 {
		r.satAt = t
		r.ep = Episode{From: time.Duration(t)}
	}
	if r.qhead > 0 {
		r.qhead--
		r.queue[r.qhead] = slot{c, c.gen}
	} else {
		r.queue = slices.Insert(r.queue, 0, slot{c, c.gen})
	}
	r.qlive++
	r.ep.Depth = max(r.ep.Depth, r.qlive)
	r.cur.QueueMax = max(r.cur.QueueMax, r.qlive)
}

func (r *run) peek() *caller {
	for !r.queue[r.qhead].valid() {
		r.queue[r.qhead] = slot{}
		r.qhead++
	}
	return r.queue[r.qhead].c
}

// unqueue takes c out of the queue (lazily: the slot is skipped later).
func (r *run) unqueue(c *caller, t int64) {
	c.state = stAsking
	r.qlive--
	if r.qlive == 0 {
		r.cur.Saturated += time.Duration(t - r.satAt)
		r.ep.To = time.Duration(t)
		r.episode(r.ep)
		clear(r.queue[r.qhead:])
		r.queue, r.qhead = r.queue[:0], 0
	} else if r.qhead > 1024 && r.qhead > len(r.queue)/2 {
		n := copy(r.queue, r.queue[r.qhead:])
		clear(r.queue[n:])
		r.queue, r.qhead = r.queue[:n], 0
	}
}

func (r *run) episode(e Episode) {
	s := &r.res.Sum
	s.Saturated += e.Len()
	if e.Len() > s.Longest.Len() {
		s.Longest = e
	}
	if len(r.res.Episodes) < MaxEpisodes {
		r.res.Episodes = append(r.res.Episodes, e)
	}
}
