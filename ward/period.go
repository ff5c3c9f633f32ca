package ward

import "time"

// Quota is where a [Period] stands after an event.
type Quota uint8

const (
	// Under: the event was admitted and more will be.
	Under Quota = iota
	// Hit: the event was admitted and was the last the period allows, the
	// moment a caller would warn that the next will be refused.
	Hit
	// Over: the event was refused.
	Over
)

// String returns "under", "hit" or "over".
func (q Quota) String() string {
	switch q {
	case Under:
		return "under"
	case Hit:
		return "hit"
	case Over:
		return "over"
	}
	return "quota(?)"
}

// Period is a fixed-window counter: at most a quota of events per period,
// the count starting again when a period ends. It is cheaper and coarser than
// [Sliding]: a client can spend one quota at the end of a period and another
// at the start of the next, so twice the quota can pass in one period-long
// stretch.
//
// A period opens with the first event after the last one closed. With align
// it opens instead on a multiple of the period since the Unix epoch
// (UnixNano), so a daily quota on a UTC clock resets at midnight rather than a
// day after first use.
//
// A now before the open period's start counts in the open period when it is
// within one period of it; further back, it opens a new period there, so a
// clock stepped back never stalls the counter.
//
// The zero Period admits nothing; build one with [NewPeriod]. A Period is not
// safe for concurrent use. Take allocates nothing.
type Period struct {
	quota  int
	period time.Duration
	align  bool
	open   bool
	start  time.Time
	count  int
}

// NewPeriod returns a counter no event has touched, admitting quota events
// per period. A quota of zero or less admits nothing; a period under a
// nanosecond becomes one.
func NewPeriod(quota int, period time.Duration, align bool) *Period {
	return &Period{quota: max(quota, 0), period: max(period, 1), align: align}
}

// current reports whether the open period still holds at now.
func (p *Period) current(now time.Time) bool {
	if !p.open {
		return false
	}
	d := now.Sub(p.start)
	return d < p.period && d > -p.period
}

// Take counts one event at now and reports where the quota stands. A refused
// event ([Over]) is not counted.
func (p *Period) Take(now time.Time) Quota {
	if !p.current(now) {
		p.open, p.count, p.start = true, 0, now
		if p.align {
			off := floorMod(now.UnixNano(), int64(p.period))
			p.start = now.Add(-time.Duration(off))
		}
	}
	if p.count >= p.quota {
		return Over
	}
	p.count++
	if p.count == p.quota {
		return Hit
	}
	return Under
}

// Left returns how many events the period admits at now.
func (p *Period) Left(now time.Time) int {
	if !p.current(now) {
		return p.quota
	}
	return p.quota - p.count
}

// Next returns how long after now the open period ends; zero when no period
// is open at now, because the next event would open one.
func (p *Period) Next(now time.Time) time.Duration {
	if !p.current(now) {
		return 0
	}
	return p.period - now.Sub(p.start)
}
