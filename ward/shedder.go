package ward

import (
	"math"
	"time"
)

// Shed holds the constants of adaptive load shedding. Copy [DefaultShed] and
// change a field to build another: s := ward.DefaultShed; s.CPU = 800.
type Shed struct {
	// Size is the number of buckets in the window, at least 1.
	Size int
	// Window is how far back the window reaches.
	Window time.Duration
	// CPU is the use, in thousandths, at or over which the server is hot;
	// held to 0..1000.
	CPU int
	// Latency is the response time assumed while the window has none. Zero
	// or less becomes the preset's.
	Latency time.Duration
	// Beta is the weight of the old value in the moving average of calls in
	// flight, held to [0, 1]; NaN becomes the preset's.
	Beta float64
	// Cool is how long the server stays hot after the CPU falls back, when
	// the shedder refused while it was over. Negative becomes 0.
	Cool time.Duration
	// Floor is the least share of capacity admitted however high the CPU,
	// held to [0, 1]; NaN becomes the preset's.
	Floor float64
}

// DefaultShed is the preset: five seconds in fifty buckets, hot at 90% CPU, a
// one-second assumed response time, an average weighted 0.9, one second to
// cool, and never less than a tenth of capacity.
var DefaultShed = Shed{
	Size:    50,
	Window:  5 * time.Second,
	CPU:     900,
	Latency: time.Second,
	Beta:    0.9,
	Cool:    time.Second,
	Floor:   0.1,
}

// clean returns s with every field held to its documented range.
func (s Shed) clean() Shed {
	s.Size = max(s.Size, 1)
	s.CPU = thousandths(s.CPU)
	if s.Latency <= 0 {
		s.Latency = DefaultShed.Latency
	}
	if math.IsNaN(s.Beta) {
		s.Beta = DefaultShed.Beta
	}
	s.Beta = min(max(s.Beta, 0), 1)
	s.Cool = max(s.Cool, 0)
	if math.IsNaN(s.Floor) {
		s.Floor = DefaultShed.Floor
	}
	s.Floor = min(max(s.Floor, 0), 1)
	return s
}

// Total is a sum and how many values went into it. A [Shedder] keeps one per
// bucket: Count is the calls that passed, Sum their response times in
// nanoseconds.
type Total struct {
	Sum, Count int64
}

// Add folds one value into the total.
func (t *Total) Add(v int64) {
	t.Sum += v
	t.Count++
}

// Shedder refuses work only when the server is both hot and full.
//
// Hot: the CPU reading passed to Allow is at or over the policy's CPU, or it
// was within the last Cool and the shedder has refused a call since.
//
// Full: the moving average of calls in flight and the current count both
// exceed the capacity the server has shown, which is the busiest whole
// bucket's passes per unit of time times the fastest whole bucket's mean
// response time (never more than the policy's Latency, which stands alone
// while no bucket has passes), scaled by
// (1000 − cpu) / (1000 − CPU) as the CPU nears 100%, but never under Floor.
// A window with no passes yet counts one pass per bucket, so a fresh shedder
// does not read as having no capacity at all.
//
// So a CPU spike with nothing queued sheds nothing, and neither does a long
// queue on an idle CPU. The scheme is the BBR-style shedder of go-zero and
// Kratos. The average is sampled at every arrival and every completion.
//
// The zero Shedder is not usable; build one with [NewShedder]. A Shedder is
// not safe for concurrent use. Allow and Done allocate nothing.
type Shedder struct {
	p       Shed
	win     *Window[Total]
	flying  int
	average float64
	hotAt   time.Time // the last reading at or over the CPU threshold
	dropped bool      // whether it refused since that reading

	// The whole buckets only change when the window moves, so the capacity
	// they show is kept here and refreshed when win.gen changes.
	gen   uint64
	valid bool
	shown float64
}

// NewShedder returns a shedder with policy p (clamped as [Shed] documents)
// and an empty window opening at now.
func NewShedder(p Shed, now time.Time) *Shedder {
	p = p.clean()
	return &Shedder{p: p, win: NewWindow[Total](p.Size, p.Window, now)}
}

// Policy returns the policy in force, after clamping.
func (s *Shedder) Policy() Shed { return s.p }

// Flying returns how many calls are in flight: let through and not settled.
func (s *Shedder) Flying() int { return s.flying }

// Ticket is one call a [Shedder] let through. Settle it exactly once with
// Pass or Fail. The zero Ticket settles nothing.
type Ticket struct {
	s     *Shedder
	start time.Time
}

// Pass records that the call succeeded at now; its response time counts
// towards the capacity the server has shown.
func (t Ticket) Pass(now time.Time) {
	if t.s != nil {
		t.s.Done(t.start, now, true)
	}
}

// Fail records that the call failed. It leaves flight but says nothing about
// capacity.
func (t Ticket) Fail() {
	if t.s != nil {
		t.s.leave()
	}
}

// Allow asks to start one call at now with the CPU at cpu thousandths (held
// to 0..1000). On true, settle the Ticket (or call Done) when the call ends.
func (s *Shedder) Allow(now time.Time, cpu int) (Ticket, bool) {
	cpu = thousandths(cpu)
	s.sample()
	hot := cpu >= s.p.CPU
	if hot {
		s.hotAt, s.dropped = now, false
	} else if s.dropped {
		// A clock stepped back by more than Cool forgets the hot reading
		// rather than staying hot until the clock catches up.
		d := now.Sub(s.hotAt)
		hot = d < s.p.Cool && d > -s.p.Cool
		s.dropped = hot
	}
	if hot && s.full(now, cpu) {
		s.dropped = true
		return Ticket{}, false
	}
	s.flying++
	return Ticket{s: s, start: now}, true
}

// Done settles a call that started at start and ended at now, for a caller
// that did not keep the [Ticket]. With ok the response time counts towards
// capacity; without, the call only leaves flight. A now before start counts
// as a response time of zero.
func (s *Shedder) Done(start, now time.Time, ok bool) { s.Settle(now, now.Sub(start), ok) }

// Settle is Done for a caller that knows how long the call took: it ended
// at now, after held (a negative held counts as zero).
func (s *Shedder) Settle(now time.Time, held time.Duration, ok bool) {
	if ok {
		s.win.Slot(now).Add(int64(max(held, 0)))
	}
	s.leave()
}

func (s *Shedder) leave() {
	s.flying = max(s.flying-1, 0)
	s.sample()
}

// sample folds the current count in flight into the moving average.
func (s *Shedder) sample() {
	s.average = s.average*s.p.Beta + float64(s.flying)*(1-s.p.Beta)
}

// full reports whether both the average and the count in flight exceed the
// capacity the window shows, scaled for cpu.
func (s *Shedder) full(now time.Time, cpu int) bool {
	c := s.capacity(now) * s.factor(cpu)
	return s.average > c && float64(s.flying) > c
}

// capacity is the busiest whole bucket's passes per nanosecond times the
// fastest whole bucket's mean response time in nanoseconds. It moves the
// window to now first, which clears only buckets a read would skip anyway.
func (s *Shedder) capacity(now time.Time) float64 {
	s.win.advance(now)
	if s.valid && s.gen == s.win.gen {
		return s.shown
	}
	busiest, fastest := 1.0, float64(s.p.Latency)
	s.win.Each(now, false, func(t *Total) {
		if t.Count <= 0 {
			return
		}
		busiest = max(busiest, float64(t.Count))
		fastest = min(fastest, float64(t.Sum)/float64(t.Count))
	})
	s.shown = busiest / float64(s.win.width) * fastest
	s.gen, s.valid = s.win.gen, true
	return s.shown
}

// factor scales capacity down as the CPU nears 1000‰, never under Floor.
func (s *Shedder) factor(cpu int) float64 {
	if s.p.CPU >= 1000 {
		return s.p.Floor
	}
	f := float64(1000-cpu) / float64(1000-s.p.CPU)
	return min(max(f, s.p.Floor), 1)
}
