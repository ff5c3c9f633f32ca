package ward

import (
	"time"
)

// Window is a rolling window: Size buckets of equal width that together cover
// the last span of time, the oldest falling off as time moves on.
//
// The bucket type B is the caller's: a [Breaker] keeps a [Tally] per bucket, a
// [Shedder] a [Total]. A bucket is cleared by overwriting it with the zero
// value of B, so B must be a type whose zero value means "empty" and which
// holds no pointers the window would need to release.
//
// Time never moves by itself: every call carries the now it happens at.
// Writing ([Window.Slot]) at a later now clears the buckets the gap swept past
// and snaps the head to a bucket boundary, so buckets keep their width rather
// than drifting with each write. Reading ([Window.Each]) at a later now skips
// those buckets without clearing them, so a window nobody writes to still ages
// out, and two reads at the same now agree.
//
// A now earlier than the newest bucket but within one span of it is counted
// in the newest bucket. A now further back than that means the clock was
// stepped back: a write starts the window over, empty, at now, and a read sees
// nothing. So the window never waits longer than one span for the clock.
//
// The zero Window is not usable; build one with [NewWindow]. A Window is not
// safe for concurrent use.
type Window[B any] struct {
	width   time.Duration
	span    time.Duration // width × len(buckets)
	buckets []B
	head    int       // index of the newest bucket
	start   time.Time // when the newest bucket opened; on a bucket boundary
	gen     uint64    // changes whenever head or start moves
}

// NewWindow returns an empty window of size buckets covering span, its first
// bucket opening at now. A size below one is raised to one, and a bucket
// narrower than a nanosecond (including any span of zero or less) is widened
// to one nanosecond.
func NewWindow[B any](size int, span time.Duration, now time.Time) *Window[B] {
	size = max(size, 1)
	width := max(span/time.Duration(size), 1)
	return &Window[B]{
		width:   width,
		span:    width * time.Duration(size),
		buckets: make([]B, size),
		start:   now,
	}
}

// Size returns how many buckets the window has.
func (w *Window[B]) Size() int { return len(w.buckets) }

// Width returns how much time one bucket covers.
func (w *Window[B]) Width() time.Duration { return w.width }

// Slot returns the bucket now falls in, for the caller to add to. Buckets the
// gap since the last write swept past are cleared first. The pointer is valid
// until the next call that moves the window.
func (w *Window[B]) Slot(now time.Time) *B {
	w.advance(now)
	return &w.buckets[w.head]
}

// advance moves the head to the bucket now falls in, clearing what it passes.
func (w *Window[B]) advance(now time.Time) {
	d := now.Sub(w.start) // saturates
	if d < w.width {
		if d >= -w.span {
			return // in the newest bucket, or a little before it: count it there
		}
		w.restart(now)
		return
	}
	n := int64(d / w.width)
	size := int64(len(w.buckets))
	var zero B
	for i := int64(1); i <= min(n, size); i++ {
		w.buckets[(int64(w.head)+i)%size] = zero
	}
	w.head = int((int64(w.head) + n%size) % size)
	w.start = w.start.Add(time.Duration(n) * w.width)
	w.gen++
}

// restart empties the window and opens its first bucket at now.
func (w *Window[B]) restart(now time.Time) {
	clear(w.buckets)
	w.head = 0
	w.start = now
	w.gen++
}

// current returns the newest bucket when now falls in it, nil otherwise. It
// changes nothing.
func (w *Window[B]) current(now time.Time) *B {
	if d := now.Sub(w.start); d < w.width && d >= -w.span {
		return &w.buckets[w.head]
	}
	return nil
}

// Each calls f with every bucket still inside the window at now, oldest
// first. With current false the bucket now falls in is left out: it has seen
// only part of its time, and a reading that takes the busiest or the fastest
// bucket should not weigh a partial one against whole ones. Each changes
// nothing; f must not keep or change the bucket it is given.
func (w *Window[B]) Each(now time.Time, current bool, f func(b *B)) {
	d := now.Sub(w.start)
	if d < -w.span {
		return // the clock was stepped back past the whole window
	}
	var n int64 // buckets the head is behind now
	if d >= w.width {
		n = int64(d / w.width)
	}
	size := int64(len(w.buckets))
	for age := size - 1 - n; age >= 0; age-- {
		if age == 0 && n == 0 && !current {
			continue
		}
		f(&w.buckets[(int64(w.head)-age+size)%size])
	}
}
