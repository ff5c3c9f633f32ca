package ward

import (
	"math"
	"time"
)

// Jitter is how much randomness goes into a retry's wait. Retries without
// jitter make every client that failed together try again together, which is
// how one outage becomes a second. Rigid, Full, Equal and Decorrelated are the
// shapes AWS's "Exponential Backoff and Jitter" names and measures; Spread
// keeps the wait within a fraction of the ceiling, which is easier to explain
// when the schedule is fixed by something else. The zero Jitter is Rigid.
// Jitters are comparable with ==.
type Jitter struct {
	kind   uint8
	spread float64
}

const (
	rigid uint8 = iota
	full
	equal
	decorrelated
	spread
)

var (
	// Rigid waits exactly the ceiling: reproducible, and it synchronises
	// clients.
	Rigid = Jitter{kind: rigid}
	// Full waits uniformly over [0, ceiling]: it spreads clients furthest.
	Full = Jitter{kind: full}
	// Equal waits half the ceiling plus uniformly over [0, ceiling/2]: a
	// floor under the wait.
	Equal = Jitter{kind: equal}
	// Decorrelated waits uniformly over [Base, 3 × previous], held to the
	// Cap: it grows from where the last wait landed rather than from the
	// retry number.
	Decorrelated = Jitter{kind: decorrelated}
)

// Spread waits uniformly over [ceiling × (1 − f), ceiling × (1 + f)], so the
// wait can pass the ceiling by f. f is held to [0, 1]; NaN becomes 0.
func Spread(f float64) Jitter {
	if !(f > 0) {
		f = 0
	}
	return Jitter{kind: spread, spread: min(f, 1)}
}

// String names the jitter, as "spread(0.2)" for a Spread.
func (j Jitter) String() string {
	switch j.kind {
	case full:
		return "full"
	case equal:
		return "equal"
	case decorrelated:
		return "decorrelated"
	case spread:
		return "spread(" + ftoa(j.spread) + ")"
	}
	return "rigid"
}

// Backoff says when to try again and how long to wait first. It is a value:
// copy [DefaultBackoff] and change a field, b := ward.DefaultBackoff;
// b.Attempts = 5. Its methods take the draws they need and keep no state.
type Backoff struct {
	// Base is the wait before the first retry. Negative counts as 0.
	Base time.Duration
	// Factor multiplies each wait; under 1, NaN and infinities count as 1.
	Factor float64
	// Cap holds the multiplied wait down; zero or less means no cap.
	Cap time.Duration
	// Attempts is how many calls are allowed in all, the first included, so
	// 3 allows two retries. One or less allows no retry.
	Attempts int
	// Jitter is how the wait is drawn within the ceiling.
	Jitter Jitter
}

// DefaultBackoff is the preset: three attempts, 100 ms doubling to a one
// second cap, each wait spread by a fifth either way. So the second retry
// waits between 160 and 240 ms, 168 ms at a draw of 0.1.
var DefaultBackoff = Backoff{
	Base:     100 * time.Millisecond,
	Factor:   2,
	Cap:      time.Second,
	Attempts: 3,
	Jitter:   Spread(0.2),
}

// Ceiling returns the wait before the retry-th retry without jitter, the
// first retry being 1: min(Base × Factor^(retry−1), Cap). It is what a
// jitter-free client sleeps and what every jitter draws within. Zero for a
// retry under 1.
func (b Backoff) Ceiling(retry int) time.Duration {
	if retry < 1 {
		return 0
	}
	base := float64(max(b.Base, 0))
	factor := b.Factor
	if !finite(factor) || factor < 1 {
		factor = 1
	}
	c := base * math.Pow(factor, float64(retry-1))
	if b.Cap > 0 {
		c = min(c, float64(b.Cap))
	}
	return dur(c)
}

// Delay returns how long to wait before the retry-th retry, the first being
// 1. draw is the caller's draw in [0, 1), scaled by the jitter: the same draw
// gives the same wait. previous is what the last wait turned out to be, read
// only by Decorrelated (zero or less: Base). Zero for a retry under 1.
func (b Backoff) Delay(retry int, draw float64, previous time.Duration) time.Duration {
	if retry < 1 {
		return 0
	}
	c := float64(b.Ceiling(retry))
	r := drawOf(draw)
	switch b.Jitter.kind {
	case full:
		return dur(c * r)
	case equal:
		return dur(c/2 + c/2*r)
	case decorrelated:
		lo := float64(max(b.Base, 0))
		hi := max(3*float64(max(previous, b.Base)), lo)
		d := lo + (hi-lo)*r
		if b.Cap > 0 {
			d = min(d, float64(b.Cap))
		}
		return dur(d)
	case spread:
		f := b.Jitter.spread
		return dur(c * (1 - f + 2*f*r))
	}
	return dur(c)
}

// More reports whether a call that has made made attempts, the first being
// 1, may make another.
func (b Backoff) More(made int) bool { return made < b.Attempts }

// Schedule returns every wait a run of retries would make under b, one per
// retry the policy allows (at most [MaxSchedule]), for a test or a log line
// explaining a plan. draws
// supplies one draw per retry; when it runs short the rest use zero, the low
// end of the jitter. Decorrelated grows each wait from the one before.
func (b Backoff) Schedule(draws []float64) []time.Duration {
	n := min(max(b.Attempts-1, 0), MaxSchedule)
	out := make([]time.Duration, n)
	var prev time.Duration
	for i := range out {
		var r float64
		if i < len(draws) {
			r = draws[i]
		}
		out[i] = b.Delay(i+1, r, prev)
		prev = out[i]
	}
	return out
}

// MaxSchedule is the most waits [Backoff.Schedule] returns, so that a policy
// with a huge Attempts cannot make it allocate without bound.
const MaxSchedule = 4096

// drawOf is draw under a name that does not clash with Delay's parameter.
func drawOf(r float64) float64 { return draw(r) }

// dur converts nanoseconds held in a float to a Duration, rounding to the
// nearest and saturating at the largest Duration.
func dur(ns float64) time.Duration {
	switch {
	case !(ns > 0):
		return 0
	case ns >= float64(math.MaxInt64):
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}
