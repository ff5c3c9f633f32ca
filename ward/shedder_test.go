package ward

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// trained returns a shedder that has seen one second of ten calls per 100 ms
// bucket, each answered in 10 ms: a capacity of 10/100ms × 10ms = 1 call in
// flight. It returns the moment training ended, with nothing in flight.
func trained(t *testing.T) (*Shedder, time.Time) {
	t.Helper()
	s := NewShedder(DefaultShed, t0)
	var end time.Time
	for k := range 10 {
		for i := range 10 {
			start := at(time.Duration(k)*100*time.Millisecond + time.Duration(i)*time.Millisecond)
			tk, ok := s.Allow(start, 0)
			if !ok {
				t.Fatalf("refused while training")
			}
			end = start.Add(10 * time.Millisecond)
			tk.Pass(end)
		}
	}
	end = at(time.Second + 50*time.Millisecond)
	if got := s.capacity(end); got != 1 {
		t.Fatalf("trained capacity = %v, want 1", got)
	}
	if s.Flying() != 0 {
		t.Fatalf("flying after training = %d", s.Flying())
	}
	return s, end
}

func TestShedderCPUSpikeWithNothingInFlightShedsNothing(t *testing.T) {
	s, now := trained(t)
	for i := range 100 {
		tk, ok := s.Allow(now, 1000)
		if !ok {
			t.Fatalf("call %d refused with nothing in flight", i)
		}
		tk.Pass(now.Add(time.Millisecond)) // each finishes before the next
		now = now.Add(2 * time.Millisecond)
	}
	fresh := NewShedder(DefaultShed, t0)
	if _, ok := fresh.Allow(t0, 1000); !ok {
		t.Fatalf("a fresh shedder refused its first call at full CPU")
	}
}

func TestShedderLongQueueOnIdleCPUShedsNothing(t *testing.T) {
	s, now := trained(t)
	for i := range 1000 {
		if _, ok := s.Allow(now, 100); !ok {
			t.Fatalf("call %d refused at 10%% CPU with %d in flight", i, s.Flying())
		}
	}
	if s.Flying() != 1000 {
		t.Fatalf("Flying = %d, want 1000", s.Flying())
	}
}

func TestShedderHotAndFullSheds(t *testing.T) {
	s, now := trained(t)
	for range 20 { // a queue builds on an idle CPU
		s.Allow(now, 100)
	}
	// The CPU spikes: 950‰ halves the capacity of 1 to 0.5, and both the
	// average and the count in flight are over it.
	if _, ok := s.Allow(now, 950); ok {
		t.Fatalf("admitted while hot and full (flying %d, average %v)", s.Flying(), s.average)
	}
	// The CPU falls back, but the shedder refused: it stays hot for Cool.
	if _, ok := s.Allow(now.Add(500*time.Millisecond), 300); ok {
		t.Fatalf("admitted 0.5 s after a refusal at high CPU, within the cooling time")
	}
	if _, ok := s.Allow(now.Add(time.Second), 300); !ok {
		t.Fatalf("refused one second after the last hot reading: it should have cooled")
	}
	// Hot again and refusing; then the clock is stepped back an hour. The
	// shedder must not stay hot until the clock catches up.
	s.Allow(now.Add(2*time.Second), 950)
	if _, ok := s.Allow(now.Add(2*time.Second), 950); ok {
		t.Fatalf("admitted while hot and full")
	}
	if _, ok := s.Allow(now.Add(-time.Hour), 300); !ok {
		t.Fatalf("still hot after the clock was stepped back an hour")
	}
}

func TestShedderHotWithoutRefusingDoesNotLinger(t *testing.T) {
	s, now := trained(t)
	if _, ok := s.Allow(now, 950); !ok { // hot, but nothing in flight: admitted
		t.Fatalf("refused with nothing in flight")
	}
	for range 20 {
		s.Allow(now.Add(time.Millisecond), 100) // the CPU has fallen: not hot
	}
	if _, ok := s.Allow(now.Add(2*time.Millisecond), 300); !ok {
		t.Fatalf("refused at 30%% CPU although the shedder never refused while hot")
	}
}

func TestShedderCapacityScalesWithCPUDownToTheFloor(t *testing.T) {
	s := NewShedder(DefaultShed, t0)
	for _, c := range []struct {
		cpu  int
		want float64
	}{{0, 1}, {900, 1}, {950, 0.5}, {990, 0.1}, {1000, 0.1}, {5000, 0.1}, {-7, 1}} {
		if got := s.factor(thousandths(c.cpu)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("factor(%d) = %v, want %v", c.cpu, got, c.want)
		}
	}
	// With a threshold of 1000 the server is only hot at 1000, and then at the floor.
	p := DefaultShed
	p.CPU = 1000
	if got := NewShedder(p, t0).factor(1000); got != 0.1 {
		t.Errorf("factor at a threshold of 1000 = %v, want the floor", got)
	}
}

func TestShedderFastestBucketAndBusiestBucket(t *testing.T) {
	s := NewShedder(DefaultShed, t0)
	// Nothing seen: one pass per 100 ms bucket at the assumed 1 s: 10.
	if got := s.capacity(t0); got != 10 {
		t.Fatalf("capacity of a fresh shedder = %v, want 10", got)
	}
	// Bucket 0: 4 passes of 50 ms. Bucket 1: 2 passes of 20 ms. Bucket 2 is
	// partial and very fast, and must be left out.
	for range 4 {
		s.Done(at(0), at(50*time.Millisecond), true)
	}
	for range 2 {
		s.Done(at(80*time.Millisecond), at(100*time.Millisecond), true)
	}
	for range 50 {
		s.Done(at(200*time.Millisecond), at(201*time.Millisecond), true)
	}
	// busiest 4 per 100 ms × fastest 20 ms = 0.8
	if got := s.capacity(at(250 * time.Millisecond)); math.Abs(got-0.8) > 1e-12 {
		t.Fatalf("capacity = %v, want 0.8", got)
	}
	// Failures leave flight and teach nothing.
	s.Done(at(300*time.Millisecond), at(300*time.Millisecond+time.Nanosecond), false)
	if got := s.capacity(at(350 * time.Millisecond)); got != 50*1e6/1e8 {
		t.Fatalf("capacity after a failure = %v, want %v", got, 50*1e6/1e8)
	}
}

func TestShedderTicketsAndFlying(t *testing.T) {
	s := NewShedder(DefaultShed, t0)
	a, _ := s.Allow(t0, 0)
	b, _ := s.Allow(t0, 0)
	if s.Flying() != 2 {
		t.Fatalf("Flying = %d, want 2", s.Flying())
	}
	a.Pass(at(time.Millisecond))
	b.Fail()
	if s.Flying() != 0 {
		t.Fatalf("Flying = %d, want 0", s.Flying())
	}
	s.Done(t0, t0, false) // more settled than admitted: held at zero
	var zero Ticket
	zero.Pass(t0)
	zero.Fail()
	if s.Flying() != 0 {
		t.Fatalf("Flying = %d after over-settling, want 0", s.Flying())
	}
	// A response time below zero counts as zero.
	s.Done(at(time.Second), at(0), true)
	var sum int64
	for _, tl := range s.win.buckets {
		sum += tl.Sum
	}
	if sum != int64(time.Millisecond) {
		t.Fatalf("response times sum to %v, want 1ms", time.Duration(sum))
	}
}

func TestShedPolicyClamped(t *testing.T) {
	got := NewShedder(Shed{Size: -1, CPU: 4000, Latency: -1, Beta: math.NaN(), Cool: -time.Second, Floor: 3}, t0).Policy()
	want := Shed{Size: 1, CPU: 1000, Latency: time.Second, Beta: 0.9, Cool: 0, Floor: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("clamped (-want +got):\n%s", diff)
	}
	got = NewShedder(Shed{Beta: 7, Floor: math.NaN(), CPU: -4}, t0).Policy()
	if got.Beta != 1 || got.Floor != 0.1 || got.CPU != 0 {
		t.Fatalf("clamped = %+v", got)
	}
}
