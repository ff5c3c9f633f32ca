package ward

import "time"

// Sliding is a sliding-window log: at most a quota of events in any
// window-long stretch of time, counted exactly. It keeps the moment of every
// event still inside the window, so its memory grows with the quota (up to
// 24 bytes per event); [Counter] answers a similar question in constant
// memory, approximately.
//
// Where a [Bucket] smooths, a window counts: "a thousand a day" is a window,
// and a bucket would let a client spend the whole day's allowance at once.
//
// An event is inside the window at now while now is less than one window
// after it. A now earlier than the newest event, but by less than a window,
// counts as that event's moment, so the log stays in order. A now a whole
// window or more before the newest event means the clock was stepped back:
// the log starts over, so it never waits for the clock to catch up.
//
// The zero Sliding admits nothing; build one with [NewSliding]. A Sliding is
// not safe for concurrent use. Take allocates nothing once the log has grown
// to the quota.
type Sliding struct {
	quota  int
	window time.Duration
	ring   []time.Time // grows up to quota, in order from first
	first  int
	n      int
}

// NewSliding returns an empty log admitting quota events per window. A quota
// of zero or less admits nothing; a window under a nanosecond becomes one.
func NewSliding(quota int, window time.Duration) *Sliding {
	return &Sliding{quota: max(quota, 0), window: max(window, 1)}
}

// newest returns the moment of the newest event; the log must not be empty.
func (s *Sliding) newest() time.Time { return s.ring[(s.first+s.n-1)%len(s.ring)] }

// stepped reports whether now is a window or more before the newest event.
func (s *Sliding) stepped(now time.Time) bool {
	return s.n > 0 && s.newest().Sub(now) >= s.window
}

// evict drops the events that have left the window at now.
func (s *Sliding) evict(now time.Time) {
	if s.stepped(now) {
		s.first, s.n = 0, 0
		return
	}
	for s.n > 0 && now.Sub(s.ring[s.first]) >= s.window {
		s.first = (s.first + 1) % len(s.ring)
		s.n--
	}
}

// live returns how many events are inside the window at now, changing nothing.
func (s *Sliding) live(now time.Time) int {
	if s.stepped(now) {
		return 0
	}
	n := s.n
	for i := 0; i < s.n && now.Sub(s.ring[(s.first+i)%len(s.ring)]) >= s.window; i++ {
		n--
	}
	return n
}

// Take reports whether an event at now is within the quota, counting it if
// it is.
func (s *Sliding) Take(now time.Time) bool {
	s.evict(now)
	if s.n >= s.quota {
		return false
	}
	if s.n > 0 && now.Before(s.newest()) {
		now = s.newest()
	}
	if s.n == len(s.ring) {
		s.grow()
	}
	s.ring[(s.first+s.n)%len(s.ring)] = now
	s.n++
	return true
}

// grow doubles the ring, up to the quota, keeping the events in order.
func (s *Sliding) grow() {
	ring := make([]time.Time, min(max(2*len(s.ring), 8), s.quota))
	for i := range s.n {
		ring[i] = s.ring[(s.first+i)%len(s.ring)]
	}
	s.ring, s.first = ring, 0
}

// Left returns how many more events the window admits at now.
func (s *Sliding) Left(now time.Time) int { return s.quota - s.live(now) }

// Next returns how long after now the window will next have room: zero when
// it has room now, the time until its oldest event falls out otherwise, and
// [Never] for a quota of zero.
func (s *Sliding) Next(now time.Time) time.Duration {
	if s.quota == 0 {
		return Never
	}
	live := s.live(now)
	if live < s.quota {
		return 0
	}
	oldest := s.ring[(s.first+s.n-live)%len(s.ring)]
	return s.window - now.Sub(oldest)
}
