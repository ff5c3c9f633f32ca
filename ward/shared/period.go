package shared

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// Period is a [ward.Period] whose count lives in a [Store], so that every
// replica holding one over the same store and key spends one quota together:
// "a thousand calls a minute to the payment provider", whichever replicas
// make them.
//
// Its periods are aligned: each starts on a multiple of the period since the
// Unix epoch, on the caller's clock. Every replica then names the same period
// from its own now, with no state to agree on but the count. The count of
// the period starting at s lives at {key}:s (s in Unix nanoseconds) and is
// advanced by Store.Incr, an atomic increment, so that replicas taking at
// once never lose a count; it is created to live until well after its
// period ends, and then expires on the store's clock.
//
// Take costs one round trip. Unlike ward.Period, it counts a refused event
// too (the increment is what decides, and it cannot be taken back without a
// race); the answers are the same, since over is over, and Left reads zero.
// Replicas' clocks should agree to well within the period. Where a period's
// edge matters, [Counter] smooths it.
//
// When the store does not answer within the link's timeout, a local aligned
// ward.Period of the local quota decides (counted in Stats.Fallbacks) and
// the error is returned beside; a negative local quota admits every event
// then. Give each replica its part of the quota (quota ÷ replicas) to keep
// the fleet within it during an outage.
//
// A Period is safe for concurrent use when its Store is. A quota of zero or
// less admits nothing.
type Period struct {
	link   Link
	key    string
	quota  int64
	period time.Duration
	tally

	mu    sync.Mutex // guards local
	local *ward.Period
	open  bool // local < 0: fail open
}

// NewPeriod returns a quota of quota events per period, counted in the
// link's store under key (which must not contain braces), with local the
// quota applied alone while the store is unreachable. A period under a
// millisecond becomes one (the store's resolution for expiry).
func NewPeriod(link Link, key string, quota int, period time.Duration, local int) *Period {
	period = max(period, time.Millisecond)
	return &Period{
		link: link, key: "{" + key + "}", quota: int64(max(quota, 0)), period: period,
		local: ward.NewPeriod(local, period, true), open: local < 0,
	}
}

// Stats returns the quota's counters.
func (p *Period) Stats() Stats { return p.tally.stats() }

// start returns the start of the period holding now, in Unix nanoseconds.
func (p *Period) start(now time.Time) int64 {
	n, d := now.UnixNano(), int64(p.period)
	m := n % d
	if m < 0 {
		m += d
	}
	return n - m
}

// keyAt is the store key of the period holding now.
func (p *Period) keyAt(now time.Time) string {
	return p.key + ":" + strconv.FormatInt(p.start(now), 10)
}

// Take counts one event at now and reports where the shared quota stands:
// ward.Under or ward.Hit when admitted, ward.Over when refused. When the
// store does not answer, the local quota decides and the error is returned.
func (p *Period) Take(ctx context.Context, now time.Time) (ward.Quota, error) {
	if p.quota == 0 {
		return ward.Over, nil // admits nothing: no need to ask
	}
	ctx, cancel := p.trip(ctx, p.link)
	defer cancel()
	// The count lives its period's remainder plus one more period: long
	// enough for a store whose clock runs behind the caller's.
	n, err := p.link.store().Incr(ctx, p.keyAt(now), p.Next(now)+p.period)
	switch {
	case p.failed(err):
		p.fallbacks.Add(1)
		if p.open {
			return ward.Under, err
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.local.Take(now), err
	case n > p.quota:
		return ward.Over, nil
	case n == p.quota:
		return ward.Hit, nil
	}
	return ward.Under, nil
}

// Left returns how many events the shared quota admits in the period
// holding now. On a store error it returns the whole quota and the error.
func (p *Period) Left(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := p.trip(ctx, p.link)
	defer cancel()
	v, ok, err := p.link.store().Get(ctx, p.keyAt(now))
	if p.failed(err) || !ok {
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
func (p *Period) Next(now time.Time) time.Duration {
	return time.Duration(p.start(now) + int64(p.period) - now.UnixNano())
}

// Quota returns how many events each period allows.
func (p *Period) Quota() int { return int(p.quota) }

// Period returns the length of each period.
func (p *Period) Period() time.Duration { return p.period }
