package engine

import (
	"slices"
	"time"
)

// fifo is one queue of callers, oldest first; a slot whose caller left
// (served, gave up, or recycled since) is skipped.
type fifo struct {
	q    []slot
	head int
	live int
}

// slot is a queued caller as it was when queued (gen).
type slot struct {
	c   *caller
	gen uint32
}

// valid reports whether the slot's caller is still queued there.
func (s slot) valid() bool { return s.c != nil && s.c.gen == s.gen && s.c.state == stQueued }

// The run's queues: one without classes; with them, one per class and
// one for the default class, as the Keeper's (its waiter queue's by). A
// caller's queue is its class (caller.class, 0 without classes).

func (r *run) enqueue(c *caller, t int64) {
	c.state = stQueued
	r.deadline(c)
	r.queued(t)
	f := &r.queues[c.class]
	f.q = append(f.q, slot{c, c.gen})
	f.live++
}

// queued counts one more caller queued at t.
func (r *run) queued(t int64) {
	if r.qlive == 0 {
		r.satAt = t
		r.ep = Episode{From: time.Duration(t)}
	}
	r.qlive++
	r.ep.Depth = max(r.ep.Depth, r.qlive)
	r.cur.QueueMax = max(r.cur.QueueMax, r.qlive)
}

// requeue puts c back at the front of its queue, as the Keeper does with
// a caller whose dial failed while the pool holds (Pool.Unmade answering
// true): the next resource, or the next dial, is its.
func (r *run) requeue(c *caller, t int64) {
	c.state = stQueued
	r.deadline(c)
	r.queued(t)
	f := &r.queues[c.class]
	if f.head > 0 {
		f.head--
		f.q[f.head] = slot{c, c.gen}
	} else {
		f.q = slices.Insert(f.q, 0, slot{c, c.gen})
	}
	f.live++
}

// peek is the caller at the front of the only queue (no classes).
func (r *run) peek() *caller { return r.front(0) }

// front is the caller at the front of queue i, or nil.
func (r *run) front(i int) *caller {
	f := &r.queues[i]
	if f.live == 0 {
		return nil
	}
	for !f.q[f.head].valid() {
		f.q[f.head] = slot{}
		f.head++
	}
	return f.q[f.head].c
}

// unqueue takes c out of its queue (lazily: the slot is skipped later).
func (r *run) unqueue(c *caller, t int64) {
	c.state = stAsking
	f := &r.queues[c.class]
	f.live--
	r.qlive--
	if f.live == 0 {
		clear(f.q[f.head:])
		f.q, f.head = f.q[:0], 0
	} else if f.head > 1024 && f.head > len(f.q)/2 {
		n := copy(f.q, f.q[f.head:])
		clear(f.q[n:])
		f.q, f.head = f.q[:n], 0
	}
	if r.qlive == 0 {
		r.cur.Saturated += time.Duration(t - r.satAt)
		r.ep.To = time.Duration(t)
		r.episode(r.ep)
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
