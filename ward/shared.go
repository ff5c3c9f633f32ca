package ward

import (
	"context"
	"strconv"
	"time"
)

// Shared is the policy of a [SharedBreaker]. Copy [DefaultShared] and change a
// field: s := ward.DefaultShared; s.Failures = 10.
type Shared struct {
	// Failures is how many failures within Window open the breaker; at
	// least 1.
	Failures int
	// Window is how long the failure count lives from its first failure
	// (the store's clock); at least a millisecond, the store's resolution.
	Window time.Duration
	// Cooldown is how long after opening the breaker refuses every call
	// before it lets a probe through; zero or less probes at once.
	Cooldown time.Duration
	// Lease is how long one probe holds the half-open state before another
	// replica may probe; at least a millisecond. A probe that neither
	// passes nor fails is given up on when its lease ends.
	Lease time.Duration
	// Hold is the longest the open marker lives (the store's clock), after
	// which the breaker closes by itself even without a successful probe;
	// at least Cooldown plus Lease.
	Hold time.Duration
}

// DefaultShared is the preset: five failures within ten seconds open the
// breaker for five seconds, then one probe at a time, each leased for five
// seconds; a breaker left open is forgotten after ten minutes.
var DefaultShared = Shared{
	Failures: 5,
	Window:   10 * time.Second,
	Cooldown: 5 * time.Second,
	Lease:    5 * time.Second,
	Hold:     10 * time.Minute,
}

func (s Shared) clean() Shared {
	s.Failures = max(s.Failures, 1)
	s.Window = max(s.Window, time.Millisecond)
	s.Cooldown = max(s.Cooldown, 0)
	s.Lease = max(s.Lease, time.Millisecond)
	s.Hold = max(s.Hold, s.Cooldown+s.Lease)
	return s
}

// SharedBreaker is a circuit breaker whose state lives in a [Store], so that
// every replica holding one over the same store and key acts as one breaker:
// a failing backend is opened by the replicas' failures together, and on
// recovery one probe goes out across all of them rather than one each, which
// would be the very stampede the breaker exists to prevent.
//
// It is the classic three-state breaker, kept in three keys:
//
//   - key+":failures" counts failures with Store.Incr, an atomic increment: a
//     read-modify-write would lose increments exactly when many replicas fail
//     at once, and the breaker would never trip. The count lives Window
//     from its first failure.
//   - key+":open" marks the breaker open. The failure that brings the count
//     to Failures sets it with SetIfAbsent, holding the caller's now, so the
//     marker keeps the moment of the first opener rather than every later
//     failure pushing the cooldown forward.
//   - key+":probe" is the half-open lease: once Cooldown has passed since the
//     marker's moment, exactly one caller wins SetIfAbsent and probes; the
//     rest are refused until the probe settles or its Lease ends.
//
// A probe that passes closes the breaker by deleting all three keys. A probe
// that fails leaves the lease to run out, which spaces the next probe. A
// success that is not a probe writes nothing: the count is of failures in a
// window, which costs one round trip per failure and none per success.
//
// Each Allow costs one store round trip (Get) while closed or open, and a
// second (SetIfAbsent) while half-open; each Fail one (Incr), plus one more
// once the count is at the line. In front of a pool that is per dial, not per
// loan. Replicas compare their own now with the opener's moment, so their
// clocks should agree to well within Cooldown.
//
// When the store fails, the breaker fails open: Allow lets the call through
// and returns the error beside it, and Fail and Pass return it. A store
// outage then costs the protection of sharing, never the service itself;
// keep a local [Breaker] in front as well where that matters.
//
// A SharedBreaker holds no state of its own and is safe for concurrent use
// when its Store is.
type SharedBreaker struct {
	store                 Store
	p                     Shared
	failures, open, probe string
}

// NewSharedBreaker returns a breaker keeping its state in store under key,
// with policy p (clamped as [Shared] documents).
func NewSharedBreaker(store Store, key string, p Shared) *SharedBreaker {
	return &SharedBreaker{
		store:    store,
		p:        p.clean(),
		failures: key + ":failures",
		open:     key + ":open",
		probe:    key + ":probe",
	}
}

// Policy returns the policy in force, after clamping.
func (b *SharedBreaker) Policy() Shared { return b.p }

// BreakerState is where a [SharedBreaker] stands.
type BreakerState uint8

const (
	Closed   BreakerState = iota // calls go through
	Open                         // calls are refused until the cooldown ends
	HalfOpen                     // one probe at a time goes through
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// SharedCall is one call a [SharedBreaker] let through. Settle it with Pass
// or Fail.
type SharedCall struct {
	b *SharedBreaker
	// Probe reports whether the call is the half-open probe.
	Probe bool
}

// State returns where the breaker stands at now. It changes nothing.
func (b *SharedBreaker) State(ctx context.Context, now time.Time) (BreakerState, error) {
	v, ok, err := b.store.Get(ctx, b.open)
	if err != nil || !ok {
		return Closed, err
	}
	if b.cooling(v, now) {
		return Open, nil
	}
	return HalfOpen, nil
}

// cooling reports whether now is within Cooldown of the moment in marker v.
// A marker that does not parse counts as cooled: the breaker probes.
func (b *SharedBreaker) cooling(v string, now time.Time) bool {
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return now.Sub(time.Unix(0, ns)) < b.p.Cooldown
}

// Allow asks to make one call at now. It reports true when the breaker is
// closed, or when it is half-open and this caller won the probe lease
// (call.Probe). On a store error it reports true with the error: the breaker
// fails open.
func (b *SharedBreaker) Allow(ctx context.Context, now time.Time) (SharedCall, bool, error) {
	v, ok, err := b.store.Get(ctx, b.open)
	if err != nil {
		return SharedCall{b: b}, true, err
	}
	if !ok {
		return SharedCall{b: b}, true, nil
	}
	if b.cooling(v, now) {
		return SharedCall{}, false, nil
	}
	won, err := b.store.SetIfAbsent(ctx, b.probe, strconv.FormatInt(now.UnixNano(), 10), b.p.Lease)
	if err != nil {
		return SharedCall{b: b}, true, err
	}
	if !won {
		return SharedCall{}, false, nil
	}
	return SharedCall{b: b, Probe: true}, true, nil
}

// Pass records that the call succeeded. A probe that passes closes the
// breaker for every replica.
func (c SharedCall) Pass(ctx context.Context) error {
	if c.b == nil || !c.Probe {
		return nil
	}
	return c.b.store.Del(ctx, c.b.open, c.b.probe, c.b.failures)
}

// Fail records that the call failed at now.
func (c SharedCall) Fail(ctx context.Context, now time.Time) error {
	if c.b == nil {
		return nil
	}
	return c.b.Fail(ctx, now)
}

// Fail counts one failure at now, for a caller that did not keep the
// [SharedCall], and opens the breaker if the count has reached Failures.
func (b *SharedBreaker) Fail(ctx context.Context, now time.Time) error {
	n, err := b.store.Incr(ctx, b.failures, b.p.Window)
	if err != nil || n < int64(b.p.Failures) {
		return err
	}
	// Every failure at or past the line tries, so a crosser whose write was
	// lost is covered by the next; SetIfAbsent keeps the first moment.
	_, err = b.store.SetIfAbsent(ctx, b.open, strconv.FormatInt(now.UnixNano(), 10), b.p.Hold)
	return err
}
