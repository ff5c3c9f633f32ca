package ward

import (
	"math"
	"testing"
	"time"
)

// TestLimitersRun is the seed's run: a burst of forty calls, 2.5 ms apart,
// every two seconds, twenty on each side of the turn of a second, offered to
// a bucket, a sliding window and an aligned period of twenty a second.
func TestLimitersRun(t *testing.T) {
	bucket := NewBucket(20, 20, t0)
	sliding := NewSliding(20, time.Second)
	period := NewPeriod(20, time.Second, true)
	for burst := range 4 {
		turn := at(time.Duration(2*burst+1) * time.Second)
		var b, s, p int
		for i := range 40 {
			now := turn.Add(time.Duration(i-20) * 2500 * time.Microsecond)
			if bucket.Take(now, 1) {
				b++
			}
			if sliding.Take(now) {
				s++
			}
			if period.Take(now) != Over {
				p++
			}
		}
		if b != 21 || s != 20 || p != 40 {
			t.Errorf("burst %d: bucket %d sliding %d period %d, want 21 20 40", burst, b, s, p)
		}
	}
}

// TestCounterLesson is the sliding-counter lesson's scenario: limit 3 over a
// window of 10, three events at 0, 1 and 2, then three at 15.
func TestCounterLesson(t *testing.T) {
	tick := func(n int) time.Time { return time.Unix(int64(n), 0) }
	c := NewCounter(3, 10*time.Second)
	for _, n := range []int{0, 1, 2} {
		if !c.Take(tick(n)) {
			t.Fatalf("event at tick %d refused", n)
		}
	}
	for i, want := range []struct {
		estimate float64
		ok       bool
	}{{1.5, true}, {2.5, true}, {3.5, false}} {
		if got := c.Estimate(tick(15)); got != want.estimate {
			t.Errorf("event %d at tick 15: estimate %v, want %v", i, got, want.estimate)
		}
		if got := c.Take(tick(15)); got != want.ok {
			t.Errorf("event %d at tick 15: allowed %v, want %v", i, got, want.ok)
		}
	}
	// The refused event was not counted: the estimate stays 3.5.
	if got := c.Estimate(tick(15)); got != 3.5 {
		t.Errorf("estimate after the refusal = %v, want 3.5", got)
	}
}

func TestCounterWindows(t *testing.T) {
	c := NewCounter(2, 10*time.Second)
	tick := func(n float64) time.Time { return time.Unix(0, int64(n*1e9)) }
	c.Take(tick(3))
	c.Take(tick(4))
	if c.Take(tick(5)) {
		t.Fatal("third event in a window of limit 2 admitted")
	}
	// Two windows on, the old counts are gone.
	if got := c.Estimate(tick(25)); got != 0 {
		t.Fatalf("estimate two windows on = %v, want 0", got)
	}
	// Just after the turn the previous window weighs almost fully.
	if got := c.Estimate(tick(10)); got != 2 {
		t.Fatalf("estimate at the turn = %v, want 2", got)
	}
	// A clock stepped back into an earlier window counts at the current start.
	if !c.Take(tick(12)) { // estimate 0 + 2 × 0.8 = 1.6, under 2
		t.Fatal("event at 12 s refused at an estimate of 1.6")
	}
	if got := c.Estimate(tick(3)); got != 3 {
		t.Fatalf("estimate stepped back = %v, want 3 (cur 1 + prev 2 × overlap 1)", got)
	}
	if c.Take(tick(3)) {
		t.Fatal("event stepped back admitted at an estimate of 3")
	}
	// Further back than the window before: the counter starts over there.
	if got := c.Estimate(tick(-30)); got != 0 {
		t.Fatalf("estimate stepped back three windows = %v, want 0", got)
	}
	if !c.Take(tick(-30)) || !c.Take(tick(-29)) || c.Take(tick(-28)) {
		t.Fatal("after a big step back the counter did not count afresh to its limit")
	}
	// Before 1970 the windows still sit on multiples of the window.
	c = NewCounter(1, 10*time.Second)
	if !c.Take(tick(-5)) || c.Take(tick(-1)) {
		t.Fatal("two events in the window [-10 s, 0) with limit 1")
	}
	if got := c.Estimate(tick(5)); got != 0.5 {
		t.Fatalf("estimate at 5 s after one event in [-10 s, 0) = %v, want 0.5", got)
	}
	// A limit of zero or less admits nothing; a zero window is one nanosecond.
	if NewCounter(0, time.Second).Take(t0) || NewCounter(-3, time.Second).Take(t0) {
		t.Fatal("a limit of zero admitted an event")
	}
	z := NewCounter(1, 0)
	if !z.Take(t0) || !z.Take(t0.Add(2)) {
		t.Fatal("a one-nanosecond window did not age")
	}
}

func TestBucket(t *testing.T) {
	b := NewBucket(10, 5, t0)
	for i := range 5 {
		if !b.Take(t0, 1) {
			t.Fatalf("take %d of a full burst of 5 refused", i)
		}
	}
	if b.Take(t0, 1) {
		t.Fatal("sixth take from a burst of 5 admitted")
	}
	if got := b.Next(t0, 1); got != 100*time.Millisecond {
		t.Fatalf("Next(1) on an empty bucket at 10/s = %v, want 100ms", got)
	}
	if got := b.Next(t0, 3); got != 300*time.Millisecond {
		t.Fatalf("Next(3) = %v, want 300ms", got)
	}
	if got := b.Tokens(at(250 * time.Millisecond)); math.Abs(got-2.5) > 1e-9 {
		t.Fatalf("Tokens after 250 ms = %v, want 2.5", got)
	}
	if got := b.Tokens(at(time.Hour)); got != 5 {
		t.Fatalf("Tokens after an hour = %v, want the burst 5", got)
	}
	if b.Next(t0, 6) != Never || b.Next(t0, -1) != Never || b.Next(t0, math.NaN()) != Never {
		t.Fatal("Next for more than the burst, or a bad n, is not Never")
	}
	if b.Take(at(time.Hour), math.NaN()) || b.Take(at(time.Hour), -1) {
		t.Fatal("Take of NaN or negative tokens succeeded")
	}
	if got := b.Tokens(at(time.Hour)); got != 5 {
		t.Fatalf("Tokens after refused bad takes = %v, want 5", got)
	}
	if !b.Take(at(time.Hour), 0) {
		t.Fatal("Take(0) refused")
	}
}

func TestBucketClamps(t *testing.T) {
	for _, c := range []struct {
		rate, burst         float64
		wantRate, wantBurst float64
	}{
		{10, 0, 10, 10},
		{0.5, 0, 0.5, 1},
		{-3, 4, 0, 4},
		{math.NaN(), math.NaN(), 0, 1},
		{10, 0.2, 10, 1},
		{10, -7, 10, 10},
	} {
		b := NewBucket(c.rate, c.burst, t0)
		if b.Rate() != c.wantRate || b.Burst() != c.wantBurst || b.Tokens(t0) != c.wantBurst {
			t.Errorf("NewBucket(%v, %v): rate %v burst %v tokens %v, want %v %v full",
				c.rate, c.burst, b.Rate(), b.Burst(), b.Tokens(t0), c.wantRate, c.wantBurst)
		}
	}
	b := NewBucket(0, 2, t0)
	b.Take(t0, 2)
	if b.Next(at(time.Hour), 1) != Never || b.Take(at(time.Hour), 1) {
		t.Fatal("a bucket with no rate refilled")
	}
}

func TestBucketClockSteppedBack(t *testing.T) {
	b := NewBucket(10, 1, t0)
	b.Take(at(time.Hour), 1) // empty at one hour
	// The clock is stepped back to t0: the bucket re-anchors there and
	// refills from it rather than waiting an hour.
	if b.Take(t0, 1) {
		t.Fatal("a step back added tokens")
	}
	if !b.Take(at(100*time.Millisecond), 1) {
		t.Fatal("no token 100 ms after a step back: the bucket stalled")
	}
}

func TestSliding(t *testing.T) {
	s := NewSliding(3, time.Second)
	for _, ms := range []int{0, 100, 200} {
		if !s.Take(at(time.Duration(ms) * time.Millisecond)) {
			t.Fatalf("event at %d ms refused", ms)
		}
	}
	if s.Take(at(999 * time.Millisecond)) {
		t.Fatal("fourth event within a second admitted")
	}
	if got := s.Left(at(999 * time.Millisecond)); got != 0 {
		t.Fatalf("Left = %d, want 0", got)
	}
	if got := s.Next(at(900 * time.Millisecond)); got != 100*time.Millisecond {
		t.Fatalf("Next = %v, want 100ms until the first event leaves", got)
	}
	if got := s.Left(at(1100 * time.Millisecond)); got != 2 {
		t.Fatalf("Left at 1.1 s = %d, want 2", got)
	}
	if got := s.Next(at(1100 * time.Millisecond)); got != 0 {
		t.Fatalf("Next with room = %v, want 0", got)
	}
	if !s.Take(at(time.Second)) { // exactly one window after the first: it has left
		t.Fatal("event one window after the first refused")
	}
	// A step back counts at the newest event's moment.
	s.Take(at(1150 * time.Millisecond)) // refused or not, keeps order
	z := NewSliding(0, time.Second)
	if z.Take(t0) || z.Next(t0) != Never || z.Left(t0) != 0 {
		t.Fatal("a quota of zero admitted or promised room")
	}
	n := NewSliding(-2, -time.Second)
	if n.Take(t0) || n.window != 1 {
		t.Fatal("negative quota or window not clamped")
	}
}

func TestSlidingGrowsAndKeepsOrder(t *testing.T) {
	s := NewSliding(100, time.Second)
	for i := range 100 {
		if !s.Take(at(time.Duration(i) * time.Millisecond)) {
			t.Fatalf("event %d refused", i)
		}
	}
	if len(s.ring) != 100 {
		t.Fatalf("ring grew to %d, want exactly the quota 100", len(s.ring))
	}
	// Half leave; the ring wraps while staying in order.
	for i := range 50 {
		if !s.Take(at(time.Second + time.Duration(i)*time.Millisecond)) {
			t.Fatalf("event %d after the first half left refused", i)
		}
	}
	if s.Take(at(time.Second + 49*time.Millisecond)) {
		t.Fatal("event over the quota admitted after wrapping")
	}
	// A step back of a window or more starts the log over.
	s = NewSliding(1, time.Second)
	s.Take(at(time.Hour))
	if s.Left(at(0)) != 1 || !s.Take(at(0)) {
		t.Fatal("a clock stepped back an hour left the log full")
	}
	// A small step back is stamped at the newest moment, so it leaves with it.
	s = NewSliding(2, time.Second)
	s.Take(at(time.Second))
	s.Take(at(ms(500))) // stamped at 1 s
	if got := s.Left(at(1999 * time.Millisecond)); got != 0 {
		t.Fatalf("Left = %d, want 0", got)
	}
	if got := s.Left(at(2 * time.Second)); got != 2 {
		t.Fatalf("Left a window after = %d, want 2", got)
	}
}

func TestPeriod(t *testing.T) {
	p := NewPeriod(3, time.Second, false)
	want := []Quota{Under, Under, Hit, Over, Over}
	for i, w := range want {
		if got := p.Take(at(ms(300 + 100*float64(i)))); got != w {
			t.Fatalf("event %d: %v, want %v", i, got, w)
		}
	}
	// Unaligned: the period opened at 300 ms and ends at 1.3 s.
	if got := p.Next(at(ms(800))); got != ms(500) {
		t.Fatalf("Next = %v, want 500ms", got)
	}
	if got := p.Left(at(ms(1299))); got != 0 {
		t.Fatalf("Left = %d, want 0", got)
	}
	if got := p.Left(at(ms(1300))); got != 3 {
		t.Fatalf("Left after the period = %d, want 3", got)
	}
	if got := p.Next(at(ms(1300))); got != 0 {
		t.Fatalf("Next with no period open = %v, want 0", got)
	}
	if got := p.Take(at(ms(1300))); got != Under {
		t.Fatalf("first event of the next period: %v", got)
	}

	// Aligned: the period opens on the whole second.
	a := NewPeriod(2, time.Second, true)
	a.Take(at(ms(700)))
	if got := a.Next(at(ms(700))); got != ms(300) {
		t.Fatalf("aligned Next = %v, want 300ms", got)
	}
	if a.Take(at(ms(999))) != Hit || a.Take(at(ms(1000))) != Under {
		t.Fatal("aligned period did not start afresh on the second")
	}

	// A step back within a period counts in it; further back opens one there.
	if got := a.Take(at(ms(500))); got != Hit {
		t.Fatalf("event stepped back within a period: %v, want Hit", got)
	}
	if got := a.Take(at(-time.Hour)); got != Under {
		t.Fatalf("event an hour back: %v, want Under in a new period", got)
	}
	if NewPeriod(0, time.Second, false).Take(t0) != Over {
		t.Fatal("a quota of zero admitted an event")
	}
	for _, q := range []Quota{Under, Hit, Over, 9} {
		if q.String() == "" {
			t.Fatal("empty Quota name")
		}
	}
}

func TestGate(t *testing.T) {
	g := NewGate(2)
	first, second, third := g.Enter(), g.Enter(), g.Enter()
	if !first || !second || third {
		t.Fatal("a gate of 2 did not admit exactly two")
	}
	g.Leave()
	if g.Held() != 1 || !g.Enter() {
		t.Fatal("Leave did not give a place back")
	}
	g.Leave()
	g.Leave()
	g.Leave() // one more than entered: held at zero
	if g.Held() != 0 {
		t.Fatalf("Held = %d after over-leaving", g.Held())
	}
	var open Gate
	for range 1000 {
		if !open.Enter() {
			t.Fatal("the zero Gate has a ceiling")
		}
	}
	if NewGate(-1).Limit() != 0 {
		t.Fatal("a negative limit is not 'no ceiling'")
	}
}

func TestDeadline(t *testing.T) {
	d := StartDeadline(time.Second, t0)
	if d.Expired(at(ms(999))) || !d.Expired(at(time.Second)) {
		t.Fatal("a one-second deadline did not expire at exactly one second")
	}
	if r, ok := d.Remaining(at(ms(250))); !ok || r != ms(750) {
		t.Fatalf("Remaining = %v %v, want 750ms true", r, ok)
	}
	if r, _ := d.Remaining(at(time.Hour)); r != 0 {
		t.Fatalf("Remaining past the deadline = %v, want 0", r)
	}
	if r, _ := d.Remaining(at(-time.Hour)); r != time.Second {
		t.Fatalf("Remaining before the start = %v, want the whole budget", r)
	}
	for _, budget := range []time.Duration{0, -time.Second} {
		n := StartDeadline(budget, t0)
		if n.Expired(at(1000 * time.Hour)) {
			t.Fatalf("a budget of %v expired", budget)
		}
		if _, ok := n.Remaining(t0); ok {
			t.Fatalf("a budget of %v reported a remainder", budget)
		}
	}
	var zero Deadline
	if zero.Expired(at(time.Hour)) {
		t.Fatal("the zero Deadline expired")
	}
}

func TestBucketNextAfterTheClockSteppedBack(t *testing.T) {
	// Read at a now before the bucket's last reading, the wait counts the
	// fill from that reading: exact, not a search's overshoot.
	t0 := time.Unix(1000, 0)
	b := NewBucket(2, 2, t0)
	if !b.Take(t0.Add(-250*time.Millisecond), 1) {
		t.Fatal("take from a full bucket")
	}
	now := t0.Add(-500 * time.Millisecond)
	if got := b.Next(now, 2); got != 750*time.Millisecond {
		t.Fatalf("Next = %v, want 750ms (250ms to the last reading, then 500ms for one token at 2/s)", got)
	}
	if !b.Take(now.Add(750*time.Millisecond), 2) {
		t.Fatal("a take at the moment Next named failed")
	}
}
