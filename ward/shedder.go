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

// Cold reports whether Allow, at any now and with the CPU at cpu
// thousandths (held to 0..1000), admits without weighing how full the
// server is: the reading is under the policy's CPU and the shedder is not
// cooling after a refusal. Calls starting and ending leave that as it is;
// only a reading at or over CPU, given to Allow, changes it. So while the
// reading stands, a runtime may let calls through without asking, and tell
// the shedder of each afterwards, in the order they happened, with Admit
// and Done: the shedder ends as Allow and Done would have left it.
func (s *Shedder) Cold(cpu int) bool { return thousandths(cpu) < s.p.CPU && !s.dropped }

// Admit counts a call as started without asking: exactly what Allow does
// for a call it admits while Cold. Call Done (or Settle) when it ends.
func (s *Shedder) Admit() {
	s.sample()
	s.flying++
}

// Done settles a call that started at start and ended at now, for a caller
// that did not keep the [Ticket]. With ok the response time counts towards
// capacity; without, the call only leaves flight. A now before start counts
// as a response time of zero.
func (s *Shedder) Done(start, now time.Time, ok bool) { s.Settle(now, now.Sub(start), ok) }

// Settle is Done for a caller that knows how long the call took: it ended
// at now, after held (a negative held counts as zero).
func (s *Shedder) Settle(now time.Time, held time.Duration, ok bool) {
	s.SettleAfter(now, 0, held, ok)
}

// SettleAfter is Settle for a call that ended at base.Add(at): a caller
// that reports many calls as offsets from one base spares building an
// instant for each.
func (s *Shedder) SettleAfter(base time.Time, at, held time.Duration, ok bool) {
	if ok {
		s.win.SlotAfter(base, at).Add(int64(max(held, 0)))
	}
	s.leave()
}

// Relay reports a run of calls a runtime let through while the shedder
// was Cold, in which each call that ended well was followed at once by
// another: each [Relay.Pass] is exactly SettleAfter(base, at, held, true)
// and then Admit. A runtime that lends the same resource again and again
// without asking reports its loans so, many at a time, at a fraction of
// the cost of the two calls: base is read against the window once rather
// than for every call, and once a pass leaves the moving average and the
// count in flight as it found them, the passes after it (which would
// compute the same numbers again) leave them alone.
//
// Skipping is exact, not an estimate: a pass's effect on the two depends
// on nothing but the two, so a pass that leaves them as they were would
// leave them so again. A Relay is good for one run: while it is in use,
// ask the shedder nothing else. The zero Relay is not usable.
func (s *Shedder) Relay(base time.Time) Relay {
	return Relay{s: s, base: base}
}

// Relay is a run of calls reported to a [Shedder]; see [Shedder.Relay].
type Relay struct {
	s     *Shedder
	base  time.Time
	d     time.Duration // base − the window's newest bucket's start, at gen
	gen   uint64        // the window's gen when d was read, plus one (0: not read)
	still bool          // the last pass left average and flying as it found them
}

// Pass reports one call that ended well at base plus at, after held, and
// the call admitted at once after it.
func (r *Relay) Pass(at, held time.Duration) {
	r.s.win.moveTo(sum(r.offset(), at), r.base, at)
	r.Passes(1, held) // in the newest bucket now
}

// offset is base − the window's newest bucket's start, read again only
// when the window has moved since.
func (r *Relay) offset() time.Duration {
	if w := r.s.win; r.gen != w.gen+1 {
		r.d, r.gen = r.base.Sub(w.start), w.gen+1
	}
	return r.d
}

// Span returns the offsets from the relay's base at which a pass lands in
// the window's newest bucket without moving the window: from lo up to, not
// including, hi. It holds until the next Pass. With base or the window so
// far out that the sums could overflow, the span is empty.
func (r *Relay) Span() (lo, hi time.Duration) {
	d, w := r.offset(), r.s.win
	if d > relayNear || d < -relayNear || w.span > relayNear {
		return 0, 0
	}
	return -w.span - d, w.width - d
}

// relayNear bounds the numbers Span adds, so that no sum of two overflows.
const relayNear = 1 << 61

// Passes is n passes at once, each ending at an offset within the Span
// last returned, with no Pass since: exactly n calls of Pass. held is
// their response times summed, each counted as Pass counts it (a negative
// one as zero), so a negative sum counts as zero too. An n of zero or less
// changes nothing.
func (r *Relay) Passes(n int, held time.Duration) {
	if n <= 0 {
		return
	}
	w := r.s.win
	b := &w.buckets[w.head]
	b.Sum += int64(max(held, 0))
	b.Count += int64(n)
	for ; n > 0 && !r.still; n-- {
		r.flights()
	}
}

// flights is Pass's leave and Admit, which compute the same numbers again
// once they leave the average and the count in flight as they found them.
func (r *Relay) flights() {
	s := r.s
	avg, f := s.average, s.flying
	s.leave()
	s.Admit()
	r.still = s.average == avg && s.flying == f
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
