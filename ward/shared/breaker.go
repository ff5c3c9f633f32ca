package shared

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// BreakerPolicy is the policy of a [Breaker]. Copy [DefaultBreaker] and
// change a field: p := shared.DefaultBreaker; p.Failures = 10.
type BreakerPolicy struct {
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

// DefaultBreaker is the preset: five failures within ten seconds open the
// breaker for five seconds, then one probe at a time, each leased for five
// seconds; a breaker left open is forgotten after ten minutes.
var DefaultBreaker = BreakerPolicy{
	Failures: 5,
	Window:   10 * time.Second,
	Cooldown: 5 * time.Second,
	Lease:    5 * time.Second,
	Hold:     10 * time.Minute,
}

func (s BreakerPolicy) clean() BreakerPolicy {
	s.Failures = max(s.Failures, 1)
	s.Window = max(s.Window, time.Millisecond)
	s.Cooldown = max(s.Cooldown, 0)
	s.Lease = max(s.Lease, time.Millisecond)
	s.Hold = max(s.Hold, s.Cooldown+s.Lease)
	return s
}

// Breaker is a circuit breaker whose state lives in a [Store], so that every
// replica holding one over the same store and key acts as one breaker: a
// failing backend is opened by the replicas' failures together, and on
// recovery one probe goes out across all of them rather than one each, which
// would be the very stampede the breaker exists to prevent.
//
// It is the classic three-state breaker, kept in three keys that share the
// hash tag {key}:
//
//   - {key}:failures counts failures with Store.Incr, an atomic increment: a
//     read-modify-write would lose increments exactly when many replicas fail
//     at once, and the breaker would never trip. The count lives Window
//     from its first failure.
//   - {key}:open marks the breaker open. The failure that brings the count
//     to Failures sets it with SetIfAbsent, holding the caller's now, so the
//     marker keeps the moment of the first opener rather than every later
//     failure pushing the cooldown forward. It lives Hold.
//   - {key}:probe is the half-open lease: once Cooldown has passed since the
//     marker's moment, exactly one caller wins SetIfAbsent and probes; the
//     rest are refused until the probe settles or its Lease ends.
//
// A probe that passes closes the breaker by deleting all three keys (one
// DEL). A probe that fails leaves the lease to run out, which spaces the
// next probe. A success that is not a probe writes nothing.
//
// Each Allow costs one round trip (GET) while closed or open, and a second
// (SET NX) while half-open; each Fail one (the increment), plus one more
// once the count is at the line. In front of a pool that is per dial, not
// per loan. Replicas compare their own now with the opener's moment, so
// their clocks should agree to well within Cooldown.
//
// Every round trip is bounded by the link's Timeout. When the store does not
// answer in time the breaker falls back to a local one with the same policy:
// this replica counts its own failures (Failures within Window open it for
// Cooldown, after which calls go through again), so an outage of the store
// costs the sharing and never the protection or the service. Each such
// decision is counted in Stats.Fallbacks, and the error is returned beside
// the answer.
//
// A Breaker is safe for concurrent use when its Store is.
type Breaker struct {
	link                  Link
	p                     BreakerPolicy
	failures, open, probe string
	tally

	mu        sync.Mutex // guards the fields below: the last state seen and the local fallback
	seen      State
	localN    int       // failures counted locally since localFrom
	localFrom time.Time // first local failure of the current window
	localOpen time.Time // when the local fallback opened; zero: closed
}

// NewBreaker returns a breaker keeping its state in the link's store under
// key, with policy p (clamped as [BreakerPolicy] documents). key must not
// contain braces: it becomes the keys' hash tag.
func NewBreaker(link Link, key string, p BreakerPolicy) *Breaker {
	tag := "{" + key + "}"
	return &Breaker{
		link:     link,
		p:        p.clean(),
		failures: tag + ":failures",
		open:     tag + ":open",
		probe:    tag + ":probe",
	}
}

// Policy returns the policy in force, after clamping.
func (b *Breaker) Policy() BreakerPolicy { return b.p }

// Stats returns the breaker's counters.
func (b *Breaker) Stats() Stats { return b.tally.stats() }

// Seen returns the state the breaker last read from its store (or decided
// locally while the store was unreachable), for metrics. It costs no round
// trip.
func (b *Breaker) Seen() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen
}

func (b *Breaker) see(s State) {
	b.mu.Lock()
	b.seen = s
	b.mu.Unlock()
}

// State is where a [Breaker] stands.
type State uint8

const (
	Closed   State = iota // calls go through
	Open                  // calls are refused until the cooldown ends
	HalfOpen              // one probe at a time goes through
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
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

// Call is one call a [Breaker] let through. Settle it with Pass or Fail.
type Call struct {
	b *Breaker
	// Probe reports whether the call is the half-open probe.
	Probe bool
}

// State returns where the breaker stands at now, by its store. It changes
// nothing in the store.
func (b *Breaker) State(ctx context.Context, now time.Time) (State, error) {
	ctx, cancel := b.trip(ctx, b.link)
	defer cancel()
	v, ok, err := b.link.store().Get(ctx, b.open)
	if b.failed(err) || !ok {
		return Closed, err
	}
	if b.cooling(v, now) {
		return Open, nil
	}
	return HalfOpen, nil
}

// cooling reports whether now is within Cooldown of the moment in marker v.
// A marker that does not parse counts as cooled: the breaker probes.
func (b *Breaker) cooling(v string, now time.Time) bool {
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return now.Sub(time.Unix(0, ns)) < b.p.Cooldown
}

// Allow asks to make one call at now. It reports true when the breaker is
// closed, or when it is half-open and this caller won the probe lease
// (call.Probe). When the store does not answer within the timeout, the
// local fallback decides and the store's error is returned beside.
func (b *Breaker) Allow(ctx context.Context, now time.Time) (Call, bool, error) {
	tctx, cancel := b.trip(ctx, b.link)
	v, ok, err := b.link.store().Get(tctx, b.open)
	cancel()
	if b.failed(err) {
		c, ok := b.local(now)
		return c, ok, err
	}
	if !ok {
		b.see(Closed)
		return Call{b: b}, true, nil
	}
	if b.cooling(v, now) {
		b.see(Open)
		return Call{}, false, nil
	}
	b.see(HalfOpen)
	tctx, cancel = b.trip(ctx, b.link)
	won, err := b.link.store().SetIfAbsent(tctx, b.probe, strconv.FormatInt(now.UnixNano(), 10), b.p.Lease)
	cancel()
	if b.failed(err) {
		c, ok := b.local(now)
		return c, ok, err
	}
	if !won {
		return Call{}, false, nil
	}
	return Call{b: b, Probe: true}, true, nil
}

// local counts a fallback decision at now and makes it: the call to
// settle (a plain one: a local decision never probes for the fleet) and
// whether it may go.
func (b *Breaker) local(now time.Time) (Call, bool) {
	b.fallbacks.Add(1)
	if b.localRefuses(now) {
		return Call{}, false
	}
	return Call{b: b}, true
}

// localRefuses reports whether the local fallback is open at now.
func (b *Breaker) localRefuses(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.localOpen.IsZero() {
		return false
	}
	if now.Sub(b.localOpen) < b.p.Cooldown {
		b.seen = Open
		return true
	}
	b.localOpen, b.localN = time.Time{}, 0
	return false
}

// failLocal counts a failure at now in the local fallback.
func (b *Breaker) failLocal(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.localN == 0 || now.Sub(b.localFrom) >= b.p.Window {
		b.localN, b.localFrom = 0, now
	}
	b.localN++
	if b.localN >= b.p.Failures && b.localOpen.IsZero() {
		b.localOpen = now
		b.seen = Open
	}
}

// Pass records that the call succeeded. A probe that passes closes the
// breaker for every replica.
func (c Call) Pass(ctx context.Context) error {
	if c.b == nil || !c.Probe {
		return nil
	}
	b := c.b
	ctx, cancel := b.trip(ctx, b.link)
	defer cancel()
	err := b.link.store().Del(ctx, b.open, b.probe, b.failures)
	if !b.failed(err) {
		b.see(Closed)
	}
	return err
}

// Fail records that the call failed at now.
func (c Call) Fail(ctx context.Context, now time.Time) error {
	if c.b == nil {
		return nil
	}
	return c.b.Fail(ctx, now)
}

// Fail counts one failure at now, for a caller that did not keep the
// [Call], and opens the breaker if the count has reached Failures. When the
// store does not answer, the failure is counted by the local fallback.
func (b *Breaker) Fail(ctx context.Context, now time.Time) error {
	tctx, cancel := b.trip(ctx, b.link)
	n, err := b.link.store().Incr(tctx, b.failures, b.p.Window)
	cancel()
	if b.failed(err) {
		b.failLocal(now)
		return err
	}
	if n < int64(b.p.Failures) {
		return nil
	}
	// Every failure at or past the line tries, so a crosser whose write was
	// lost is covered by the next; SetIfAbsent keeps the first moment.
	tctx, cancel = b.trip(ctx, b.link)
	_, err = b.link.store().SetIfAbsent(tctx, b.open, strconv.FormatInt(now.UnixNano(), 10), b.p.Hold)
	cancel()
	if b.failed(err) {
		b.failLocal(now)
		return err
	}
	b.see(Open)
	return nil
}
