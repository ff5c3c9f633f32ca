package ward

import "time"

// Counter is the two-window sliding counter: it keeps only the count of the
// current fixed window and of the one before, and estimates the count over
// the last window-long stretch as
//
//	estimate = current + previous × overlap
//
// where overlap is the share of the previous window still inside that
// stretch: (window − elapsed) / window, elapsed being how far now is into the
// current window. An event is admitted only while the estimate is strictly
// under the limit, and an admitted event adds one to current.
//
// Choose Counter over [Sliding] when the quota is large or there are many
// keys: it takes constant memory (two counts) where Sliding keeps a moment
// per admitted event. Choose Sliding when the count must be exact: Counter
// assumes the previous window's events were spread evenly, so a client whose
// previous events bunched at its end is let through slightly more than the
// limit in some stretches, and one whose events bunched at its start slightly
// less.
//
// Windows sit on multiples of window since the Unix epoch (UnixNano), so this
// is the one guard besides an aligned [Period] that reads the wall clock's
// position rather than only elapsed time. A now in the window just before
// the current one is counted in the current one, at its start (overlap 1). A
// now further back means the clock was stepped back: the counter starts over
// in that now's window, so it never waits for the clock to catch up.
//
// The zero Counter admits nothing; build one with [NewCounter]. A Counter is
// not safe for concurrent use. Take allocates nothing.
type Counter struct {
	limit     int
	window    int64 // nanoseconds
	idx       int64 // which window current counts
	cur, prev int
	started   bool // whether idx has been set by an event
}

// NewCounter returns a counter admitting fewer than limit by its estimate per
// window. A limit of zero or less admits nothing; a window under a
// nanosecond becomes one.
func NewCounter(limit int, window time.Duration) *Counter {
	return &Counter{limit: max(limit, 0), window: int64(max(window, 1))}
}

// roll returns the counts and overlap that hold at now, without storing them.
func (c *Counter) roll(now time.Time) (idx int64, cur, prev int, overlap float64) {
	ns := now.UnixNano()
	idx, into := floorDiv(ns, c.window), floorMod(ns, c.window)
	switch {
	case !c.started, idx < c.idx-1: // the first event, or a clock stepped back: start over
	case idx < c.idx: // the window before: count it at the current one's start
		return c.idx, c.cur, c.prev, 1
	case idx == c.idx:
		cur, prev = c.cur, c.prev
	case idx == c.idx+1:
		prev = c.cur
	}
	return idx, cur, prev, float64(c.window-into) / float64(c.window)
}

// Estimate returns the estimated count over the window-long stretch ending at
// now. It changes nothing.
func (c *Counter) Estimate(now time.Time) float64 {
	_, cur, prev, overlap := c.roll(now)
	return float64(cur) + float64(prev)*overlap
}

// Take reports whether an event at now is admitted: whether the estimate is
// strictly under the limit. An admitted event is counted; a refused one is
// not.
func (c *Counter) Take(now time.Time) bool {
	idx, cur, prev, overlap := c.roll(now)
	c.idx, c.cur, c.prev, c.started = idx, cur, prev, true
	if float64(cur)+float64(prev)*overlap >= float64(c.limit) {
		return false
	}
	c.cur++
	return true
}
