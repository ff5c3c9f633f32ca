package ward

import (
	"math"
	"time"
)

// Never is what a wait returns when the thing waited for cannot happen.
const Never time.Duration = math.MaxInt64

// Bucket is a token bucket: tokens accrue at a rate per second up to a burst,
// and each call takes some. It starts full, which is what lets the first
// burst through: nobody should be refused for two requests in one second
// after an hour of none. Time is the caller's, as everywhere in this package.
//
// A now earlier than the last one seen re-anchors the bucket there without
// adding tokens, so a clock stepped back does not stall it; the price is that
// out-of-order readings can credit the same short span twice.
//
// The zero Bucket is not usable; build one with [NewBucket]. A Bucket is not
// safe for concurrent use. Take allocates nothing.
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64 // the most it holds
	tokens float64 // as of at
	at     time.Time
}

// NewBucket returns a full bucket accruing rate tokens per second up to
// burst. A rate that is NaN or negative becomes 0 (nothing accrues after the
// first burst). A burst that is NaN or zero or less becomes the rate, and one
// under 1 becomes 1, since a bucket that cannot hold one token passes nothing.
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	if !(rate >= 0) {
		rate = 0
	}
	if !(burst > 0) {
		burst = rate
	}
	burst = max(burst, 1)
	return &Bucket{rate: rate, burst: burst, tokens: burst, at: now}
}

// Rate returns the tokens accrued per second.
func (b *Bucket) Rate() float64 { return b.rate }

// Burst returns the most tokens the bucket holds.
func (b *Bucket) Burst() float64 { return b.burst }

// level returns the tokens at now and the moment they are counted from.
func (b *Bucket) level(now time.Time) float64 {
	d := now.Sub(b.at)
	if d <= 0 {
		return b.tokens
	}
	return min(b.tokens+b.rate*d.Seconds(), b.burst)
}

// Take reports whether n tokens are available at now, taking them if they
// are. n of zero always succeeds; n that is NaN or negative never does and
// takes nothing.
func (b *Bucket) Take(now time.Time, n float64) bool {
	if !(n >= 0) {
		return false
	}
	t := b.level(now)
	if now.Before(b.at) {
		b.at = now // the clock stepped back: count from here on
	}
	if t < n {
		return false // nothing stored, so a wait from Next holds exactly
	}
	b.tokens, b.at = t-n, now
	return true
}

// Tokens returns how many tokens the bucket holds at now. It changes nothing.
func (b *Bucket) Tokens(now time.Time) float64 { return b.level(now) }

// Next returns how long after now n tokens will be available, without taking
// them: zero when they are available now, [Never] when they never will be
// (n over the burst, n NaN or negative, or a rate of zero). It is what a
// caller sleeps rather than spinning, and what a Retry-After is made of.
func (b *Bucket) Next(now time.Time, n float64) time.Duration {
	if !(n >= 0) || n > b.burst {
		return Never
	}
	need := n - b.level(now)
	if need <= 0 {
		return 0
	}
	if b.rate <= 0 {
		return Never
	}
	secs := need / b.rate
	if secs >= float64(Never/time.Second) {
		return Never
	}
	d := time.Duration(math.Ceil(secs * float64(time.Second)))
	if gap := b.at.Sub(now); gap > 0 {
		// Read at a now before the last reading (a clock stepped back):
		// the bucket fills from that reading on, not from now.
		if d > Never-gap {
			return Never
		}
		d += gap
	}
	// Rounding can leave the level a hair under n at now+d; step past it so
	// that a Take at the promised moment succeeds.
	for step := time.Duration(1); b.level(now.Add(d)) < n; step *= 2 {
		if d > Never-step {
			return Never
		}
		d += step
	}
	return d
}
