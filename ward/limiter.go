package ward

import (
	"time"
)

// Aimd is the policy of a [Limiter]: additive increase, multiplicative
// decrease of a concurrency limit, driven by how long each lease was held.
// Copy [DefaultAimd] and change a field: a := ward.DefaultAimd; a.Max = 50.
//
// Why AIMD. Netflix's concurrency-limits offers Vegas, Gradient2 and AIMD.
// Gradient2 follows the ratio of a long-term to a short-term latency average,
// so a backend that answers every call with the same steady timeout shows no
// gradient at all and the limit climbs to its maximum (concurrency-limits
// issue 137, "Gradient2Limit in stable timeout situation", and the queue
// growth discussed on pull request 134). Vegas compares each sample with the
// lowest latency seen, and that baseline drifts or must be reset by hand
// (issue 165). AIMD reads only the sample in front of it against a fixed
// threshold the operator chose, so a steady timeout shrinks the limit every
// time, and there is no baseline to drift. Its own known failure, growing
// without bound while the caller never uses the limit, is closed the way
// concurrency-limits closes it: the limit only grows while at least half of
// it is in use.
type Aimd struct {
	// Initial is the limit a new Limiter starts at, held to [Min, Max].
	Initial int
	// Min and Max bound the limit; Min is at least 1 and Max at least Min.
	Min, Max int
	// Slow is the hold time over which a lease counts as a sign of
	// overload, like a failure. Zero or less: only failures count.
	Slow time.Duration
	// Backoff multiplies the limit on each sign of overload, held to
	// (0, 1); out of range or NaN becomes the preset's.
	Backoff float64
}

// DefaultAimd is the preset: start at 10, between 1 and 100, shrink by a
// tenth for every failure or lease held over one second, and grow by one for
// every quick success while at least half the limit is out.
var DefaultAimd = Aimd{Initial: 10, Min: 1, Max: 100, Slow: time.Second, Backoff: 0.9}

// clean returns a with every field held to its documented range.
func (a Aimd) clean() Aimd {
	a.Min = max(a.Min, 1)
	a.Max = max(a.Max, a.Min)
	a.Initial = min(max(a.Initial, a.Min), a.Max)
	if !(a.Backoff > 0 && a.Backoff < 1) {
		a.Backoff = DefaultAimd.Backoff
	}
	return a
}

// Limiter is an adaptive concurrency limit: it holds a lease for every call
// (every loan, in a pool) and moves the limit with how those leases go, so a
// quiet backend is allowed more at once and a slow one fewer. The algorithm
// is AIMD; [Aimd] says why.
//
// Every Acquire that answers true must be ended by exactly one Release (with
// a sample) or Abandon (without one, e.g. for a dial that failed, which the
// breaker already counts).
//
// The zero Limiter is not usable; build one with [NewLimiter]. A Limiter is
// not safe for concurrent use. Its methods allocate nothing.
type Limiter struct {
	p        Aimd
	limit    float64
	inflight int
}

// NewLimiter returns a limiter with policy p (clamped as [Aimd] documents),
// its limit at p.Initial and nothing in flight.
func NewLimiter(p Aimd) *Limiter {
	p = p.clean()
	return &Limiter{p: p, limit: float64(p.Initial)}
}

// Policy returns the policy in force, after clamping.
func (l *Limiter) Policy() Aimd { return l.p }

// Acquire reports whether a lease is free at now, taking it if it is; false
// means the limit is out on loan.
func (l *Limiter) Acquire(now time.Time) bool {
	if l.inflight >= l.Limit() {
		return false
	}
	l.inflight++
	return true
}

// Release ends a lease held from start to now and learns from it. ok false
// (a failure or a drop) or a hold longer than Slow shrinks the limit by
// Backoff; a quick success grows it by one while at least half of the limit
// was in use, counting this lease.
func (l *Limiter) Release(start, now time.Time, ok bool) { l.Settle(now.Sub(start), ok) }

// Settle is Release for a caller that knows how long the lease was held.
func (l *Limiter) Settle(held time.Duration, ok bool) {
	used := l.inflight
	l.inflight = max(l.inflight-1, 0)
	switch {
	case !ok || (l.p.Slow > 0 && held > l.p.Slow):
		l.limit = max(l.limit*l.p.Backoff, float64(l.p.Min))
	case 2*used >= l.Limit():
		l.limit = min(l.limit+1, float64(l.p.Max))
	}
}

// Abandon ends a lease without a sample: the limit stays where it is.
func (l *Limiter) Abandon() { l.inflight = max(l.inflight-1, 0) }

// Limit returns how many leases may be out at once.
func (l *Limiter) Limit() int {
	// The limit never falls below Min, at least 1, and a conversion cuts a
	// positive number down to the integer below it, as Floor would.
	return int(l.limit)
}

// Inflight returns how many leases are out.
func (l *Limiter) Inflight() int { return l.inflight }
