package ward

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// SharedPeriod is a [Period] whose count lives in a [Store], so that every
// replica holding one over the same store and key spends one quota together:
// "a thousand calls a minute to the payment provider", whichever replicas
// make them.
//
// Its periods are aligned: each starts on a multiple of the period since the
// Unix epoch, on the caller's clock. Every replica then names the same period
// from its own now, with no state to agree on but the count. The count of
// the period starting at s lives at key+":"+s (s in Unix nanoseconds) and
// is advanced by Store.Incr, an atomic increment, so that replicas taking at
// once never lose a count; it is created to live until well after its
// period ends, and then expires on the store's clock.
//
// Take costs one store round trip. Unlike [Period], it counts a refused
// event too (the increment is what decides, and it cannot be taken back
// without a race); the answers are the same, since over is over, and Left
// reads zero. Replicas' clocks should agree to well within the period, or
// the periods they name will drift apart at the edges.
//
// When the store fails, the quota fails open: Take admits ([Under]) and
// returns the error beside, so that a store outage costs the sharing, not
// the service. Keep a local [Period] in front as well where that matters.
//
// A SharedPeriod holds no state of its own and is safe for concurrent use
// when its Store is. A quota of zero or less admits nothing (as in Period).
type SharedPeriod struct {
	store  Store
	key    string
	quota  int64
	period time.Duration
}

// NewSharedPeriod returns a quota of quota events per period, counted in
// store under key. A period under a millisecond becomes one (the store's
// resolution for expiry).
func NewSharedPeriod(store Store, key string, quota int, period time.Duration) *SharedPeriod {
	return &SharedPeriod{store: store, key: key, quota: int64(max(quota, 0)), period: max(period, time.Millisecond)}
}

// start returns the start of the period holding now, in Unix nanoseconds.
func (p *SharedPeriod) start(now time.Time) int64 {
	n := now.UnixNano()
	return n - floorMod(n, int64(p.period))
}

// keyAt is the store key of the period holding now.
func (p *SharedPeriod) keyAt(now time.Time) string {
	return p.key + ":" + strconv.FormatInt(p.start(now), 10)
}

// Take counts one event at now and reports where the shared quota stands:
// [Under] or [Hit] when admitted, [Over] when refused. On a store error it
// admits the event and returns the error.
func (p *SharedPeriod) Take(ctx context.Context, now time.Time) (Quota, error) {
	if p.quota == 0 {
		return Over, nil // admits nothing: no need to ask
	}
	// The count lives its period's remainder plus one more period: long
	// enough for a store whose clock runs behind the caller's.
	n, err := p.store.Incr(ctx, p.keyAt(now), p.Next(now)+p.period)
	switch {
	case err != nil:
		return Under, err
	case n > p.quota:
		return Over, nil
	case n == p.quota:
		return Hit, nil
	}
	return Under, nil
}

// Left returns how many events the shared quota admits in the period
// holding now. On a store error it returns the whole quota and the error.
func (p *SharedPeriod) Left(ctx context.Context, now time.Time) (int, error) {
	v, ok, err := p.store.Get(ctx, p.keyAt(now))
	if err != nil || !ok {
		return int(p.quota), err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return int(p.quota), fmt.Errorf("%w: %q", ErrNotInteger, v)
	}
	return int(max(p.quota-n, 0)), nil
}

// Next returns how long after now the period holding now ends: never zero,
// since periods are aligned and one always holds now.
func (p *SharedPeriod) Next(now time.Time) time.Duration {
	return time.Duration(p.start(now) + int64(p.period) - now.UnixNano())
}

// Quota returns how many events each period allows.
func (p *SharedPeriod) Quota() int { return int(p.quota) }

// Period returns the length of each period.
func (p *SharedPeriod) Period() time.Duration { return p.period }
