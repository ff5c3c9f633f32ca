package shared

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// Counter is the two-window sliding counter of [ward.Counter] with its two
// counts in a [Store], so that every replica holding one over the same store
// and key spends one rate together. It estimates the count over the last
// window-long stretch as
//
//	estimate = current + previous × overlap
//
// and admits an event only while the estimate is strictly under the limit;
// an admitted event adds one to current, a refused one adds nothing. Unlike
// a shared [Period], a fleet cannot spend one limit at the end of a window
// and another at the start of the next.
//
// Windows sit on multiples of window since the Unix epoch, on the caller's
// clock; the count of the window starting at s lives at {key}:s (s in Unix
// nanoseconds) and expires two windows after it was created. Take is one
// round trip: Store.IncrUnder reads both counts, compares and increments in
// one atomic step (one script in Redis; the two keys share the hash tag), so
// replicas taking at once never admit past the limit between them.
// Replicas' clocks should agree to well within the window.
//
// When the store does not answer within the link's timeout, a local
// ward.Counter with the local limit decides (counted in Stats.Fallbacks) and
// the error is returned beside; a negative local limit admits every event
// then. Give each replica its part (limit ÷ replicas) to keep the fleet
// within the limit during an outage.
//
// A Counter is safe for concurrent use when its Store is. A limit of zero or
// less admits nothing.
type Counter struct {
	link   Link
	key    string
	limit  int64
	window time.Duration
	tally

	mu    sync.Mutex // guards local
	local *ward.Counter
	open  bool // local < 0: fail open
}

// NewCounter returns a counter admitting fewer than limit events per window
// by its estimate, counted in the link's store under key (which must not
// contain braces), with local the limit applied alone while the store is
// unreachable. A window under a millisecond becomes one.
func NewCounter(link Link, key string, limit int, window time.Duration, local int) *Counter {
	window = max(window, time.Millisecond)
	return &Counter{
		link: link, key: "{" + key + "}", limit: int64(max(limit, 0)), window: window,
		local: ward.NewCounter(local, window), open: local < 0,
	}
}

// Stats returns the counter's counters.
func (c *Counter) Stats() Stats { return c.tally.stats() }

// windows returns the keys of the window holding now and of the one before,
// and the share of the one before still inside the stretch ending at now.
func (c *Counter) windows(now time.Time) (cur, prev string, overlap float64) {
	n, d := now.UnixNano(), int64(c.window)
	into := n % d
	if into < 0 {
		into += d
	}
	start := n - into
	cur = c.key + ":" + strconv.FormatInt(start, 10)
	prev = c.key + ":" + strconv.FormatInt(start-d, 10)
	return cur, prev, float64(d-into) / float64(d)
}

// Take reports whether an event at now is admitted, counting it if it is.
// When the store does not answer, the local counter decides and the error
// is returned beside.
func (c *Counter) Take(ctx context.Context, now time.Time) (bool, error) {
	if c.limit == 0 {
		return false, nil
	}
	cur, prev, overlap := c.windows(now)
	ctx, cancel := c.trip(ctx, c.link)
	defer cancel()
	_, ok, err := c.link.store().IncrUnder(ctx, cur, prev, overlap, c.limit, 2*c.window)
	if c.failed(err) {
		c.fallbacks.Add(1)
		if c.open {
			return true, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.local.Take(now), err
	}
	return ok, nil
}

// Limit returns the limit per window.
func (c *Counter) Limit() int { return int(c.limit) }

// Window returns the window's length.
func (c *Counter) Window() time.Duration { return c.window }
