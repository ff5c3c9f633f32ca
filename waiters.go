package wardpool

import (
	"context"
	"time"
)

// waiter is one Acquire waiting for a resource: queued in a Keeper's FIFO,
// or owed the result of a dial made for it. Waiters are recycled (a sync.Pool
// in the Keeper), so a blocked Acquire allocates nothing in steady state.
//
// The Keeper's mutex guards every field but ch. The channel holds one grant:
// a grant is sent only by whoever detaches the waiter, under the mutex, and
// only while the waiter is attached, so the send never blocks and a detached
// waiter never receives a second one.
type waiter[T comparable] struct {
	ch chan grant[T]

	ctx   context.Context
	start time.Time // when its Acquire began, for Stats.AcquireWait
	stack *stack    // the Acquire's call stack, with Config.LeakAfter only (kept when recycled)

	// deadline is when Config.AcquireTimeout ends the wait (zero: never),
	// and timer the waiter's own timer for it, set on the Keeper's clock
	// at its first timed wait and kept when it is recycled (timeout.go).
	deadline time.Time
	timer    Timer

	// ticket changes every time the waiter is attached, so a queue slot or
	// a dial that refers to an earlier attachment is recognised as dead.
	ticket   uint64
	attached bool // queued, or owed a dial's result
	queued   bool // in the FIFO (attached too)
	class    int  // its class's index (Config.Classes); 0 without classes
}

// grant is what a waiter receives: a loan, or the error that ends its wait.
type grant[T comparable] struct {
	loan  Loan[T]
	check bool // Config.Check is due before the caller has it
	err   error
}

// waiters is a FIFO queue of waiters: a ring buffer of (waiter, ticket)
// slots. A waiter that gives up is not searched for: its ticket changes, and
// its slot is skipped (and dropped) when it reaches the front. So push, pop
// and cancel are O(1), and the queue allocates only when it grows. Dead slots
// are compacted away when they outnumber the live ones, so a storm of
// cancellations behind a stuck head does not grow the ring without bound.
//
// The zero waiters is an empty queue. Not safe for concurrent use: the Keeper
// uses it under its mutex.
type waiters[T comparable] struct {
	ring []slot[T] // len is a power of two, or 0
	head int       // index of the front slot
	n    int       // slots in use, dead ones included
	live int       // slots whose waiter is still queued under that ticket

	// by is one queue per class, with Config.Classes (classq.go): a
	// waiter queues in its class's, live counts them all, and ring is
	// unused. Nil without classes.
	by []waiters[T]
}

// counted moves live by d.
func (q *waiters[T]) counted(d int) { q.live += d }

type slot[T comparable] struct {
	w      *waiter[T]
	ticket uint64
}

func (s slot[T]) alive() bool { return s.w != nil && s.w.queued && s.w.ticket == s.ticket }

// Len returns how many waiters are queued, not counting those who gave up.
func (q *waiters[T]) Len() int { return q.live }

// push queues w at the back under its current ticket and marks it queued.
func (q *waiters[T]) push(w *waiter[T]) {
	if q.by != nil {
		q.pushClass(w, false)
		return
	}
	q.grow()
	q.ring[(q.head+q.n)&(len(q.ring)-1)] = slot[T]{w: w, ticket: w.ticket}
	q.n++
	q.counted(1)
	w.queued = true
}

// pushFront queues w at the front: a waiter whose grant fell through (a
// failed health check) keeps its place rather than going to the back.
func (q *waiters[T]) pushFront(w *waiter[T]) {
	if q.by != nil {
		q.pushClass(w, true)
		return
	}
	q.grow()
	q.head = (q.head - 1) & (len(q.ring) - 1)
	q.ring[q.head] = slot[T]{w: w, ticket: w.ticket}
	q.n++
	q.counted(1)
	w.queued = true
}

// peek returns the oldest queued waiter, or nil, dropping dead slots on the
// way.
func (q *waiters[T]) peek() *waiter[T] {
	if q.by != nil {
		return q.oldest()
	}
	for q.n > 0 {
		s := q.ring[q.head]
		if s.alive() {
			return s.w
		}
		q.drop()
	}
	return nil
}

// pop takes the oldest queued waiter off the queue and returns it, or nil.
// The waiter is no longer queued; it is still attached.
func (q *waiters[T]) pop() *waiter[T] {
	if q.by != nil {
		return q.popClass(q.oldest())
	}
	w := q.peek()
	if w == nil {
		return nil
	}
	q.drop()
	q.counted(-1)
	w.queued = false
	return w
}

// remove takes w out of the queue wherever it stands: its slot is left to
// be skipped. w must be queued.
func (q *waiters[T]) remove(w *waiter[T]) {
	if q.by != nil {
		q.by[w.class].remove(w)
		q.live--
		return
	}
	w.queued = false
	w.ticket++
	q.counted(-1)
	if dead := q.n - q.live; dead > 32 && dead > q.live {
		q.compact()
	}
}

// drop forgets the front slot.
func (q *waiters[T]) drop() {
	q.ring[q.head] = slot[T]{}
	q.head = (q.head + 1) & (len(q.ring) - 1)
	q.n--
}

// grow makes room for one more slot.
func (q *waiters[T]) grow() {
	if q.n < len(q.ring) {
		return
	}
	size := max(2*len(q.ring), 8)
	ring := make([]slot[T], size)
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)&(len(q.ring)-1)]
	}
	q.ring, q.head = ring, 0
}

// compact drops every dead slot, keeping the order of the live ones.
func (q *waiters[T]) compact() {
	mask := len(q.ring) - 1
	kept := 0
	for i := range q.n {
		s := q.ring[(q.head+i)&mask]
		if s.alive() {
			q.ring[(q.head+kept)&mask] = s
			kept++
		}
	}
	for i := kept; i < q.n; i++ {
		q.ring[(q.head+i)&mask] = slot[T]{}
	}
	q.n = kept
}
