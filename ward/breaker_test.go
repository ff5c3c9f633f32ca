package ward

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// drops sums the refusals the breaker's window holds.
func drops(b *Breaker) (n int64) {
	for _, t := range b.win.buckets {
		n += t.Drop
	}
	return n
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestBreakerLeavesBackendAloneUpToAThirdFailing(t *testing.T) {
	b := NewBreaker(DefaultSre, t0)
	now := t0
	// Twenty seconds of a backend failing one call in three, each call asked
	// with the draw most likely to be refused.
	for i := range 2000 {
		now = at(time.Duration(i) * 10 * time.Millisecond)
		call, ok := b.Allow(now, 0)
		if !ok {
			t.Fatalf("call %d refused at a third failing (ratio %v)", i, b.Ratio(now))
		}
		if i%3 == 2 {
			call.Fail(now)
		} else {
			call.Pass(now)
		}
	}
	if r := b.Ratio(now); r != 0 {
		t.Fatalf("Ratio at a third failing = %v, want 0", r)
	}

	// Two in five failing is more than a third: the breaker starts refusing.
	b = NewBreaker(DefaultSre, t0)
	for i := range 2000 {
		now = at(time.Duration(i) * 10 * time.Millisecond)
		call, _ := b.Allow(now, belowOne) // let every call through to keep the mix exact
		if i%5 == 1 || i%5 == 3 {
			call.Fail(now)
		} else {
			call.Pass(now)
		}
	}
	r := b.Ratio(now)
	if r <= 0 {
		t.Fatalf("Ratio at two in five failing = %v, want > 0", r)
	}
	if _, ok := b.Allow(now, 0); ok {
		t.Fatalf("a draw of 0 under a ratio of %v was let through", r)
	}
}

// outage drives b through one second of calls that all fail, one every
// 10 ms from start, each let through; it returns when the last was made.
func outage(t *testing.T, b *Breaker, start time.Time) time.Time {
	t.Helper()
	var now time.Time
	for i := range 100 {
		now = start.Add(time.Duration(i) * 10 * time.Millisecond)
		call, ok := b.Allow(now, belowOne)
		if !ok {
			t.Fatalf("call %d of the outage refused at the highest draw", i)
		}
		call.Fail(now)
	}
	return now
}

func TestBreakerProbesAfterASecondOfRefusing(t *testing.T) {
	b := NewBreaker(DefaultSre, t0)
	last := outage(t, b, t0) // last let through at 990 ms
	for d := 10 * time.Millisecond; d < time.Second; d += 100 * time.Millisecond {
		if _, ok := b.Allow(last.Add(d), 0); ok {
			t.Fatalf("let through %v after the last call, before the probe is due", d)
		}
	}
	probeAt := last.Add(time.Second)
	ratio := b.Ratio(probeAt)
	call, ok := b.Allow(probeAt, 0)
	if !ok {
		t.Fatalf("no probe one second after the last call let through")
	}
	if ratio < 0.9 {
		t.Fatalf("Ratio at the probe = %v, want the standing throttle (> 0.9), probe left out", ratio)
	}
	call.Fail(probeAt)
	if _, ok := b.Allow(probeAt.Add(time.Millisecond), 0); ok {
		t.Fatalf("a second call let through right after a failed probe")
	}
	if n := drops(b); n != 11 {
		t.Fatalf("window holds %d drops, want the 11 refusals", n)
	}
}

func TestBreakerRecoversOnceSuccessesReturn(t *testing.T) {
	b := NewBreaker(DefaultSre, t0)
	end := outage(t, b, t0)
	prev := b.Ratio(end)
	// The backend is healthy again: every call let through succeeds. The
	// draws (multiples of the golden ratio, mod 1) cover [0, 1) evenly at
	// every scale. The throttle must fall every second and be gone once the
	// outage has left the ten-second window.
	var now time.Time
	for i := 1; i <= 1100; i++ { // eleven seconds, one call every 10 ms
		now = end.Add(time.Duration(i) * 10 * time.Millisecond)
		call, ok := b.Allow(now, math.Mod(float64(i)*0.6180339887498949, 1))
		if ok {
			call.Pass(now)
		}
		if i%100 == 0 {
			r := b.Ratio(now)
			if prev > 0 && r >= prev {
				t.Fatalf("Ratio %v s into recovery = %v, not under the second before's %v", i/100, r, prev)
			}
			prev = r
		}
	}
	if prev != 0 {
		t.Fatalf("Ratio 11 s into recovery = %v, want 0", prev)
	}
	for i := range 100 {
		now = now.Add(10 * time.Millisecond)
		if _, ok := b.Allow(now, 0); !ok {
			t.Fatalf("call %d refused after recovery", i)
		}
	}
}

func TestBreakerFormulas(t *testing.T) {
	p := DefaultSre
	b := NewBreaker(p, t0)
	width := b.win.Width()
	// Five buckets of mixed outcomes, then twenty of failures only.
	for i := range 5 {
		now := at(time.Duration(i) * width)
		b.Pass(now)
		b.Pass(now)
		b.Fail(now)
	}
	for i := 5; i < 25; i++ {
		now := at(time.Duration(i) * width)
		for range 3 {
			b.Fail(now)
		}
	}
	now := at(25 * width) // bucket 24 is whole: it counts in the run
	total, accepts := 75.0, 10.0
	w := 1.5 - 0.4*20/40 // k decayed over a failing run of 20 buckets
	want := (total - 5 - w*accepts) / (total + 1)
	if got := b.Ratio(now); !near(got, want) {
		t.Fatalf("Ratio after a failing run of 20 = %v, want %v", got, want)
	}
	// Ten buckets that only succeed end the failing run and scale the drop.
	for i := 25; i < 35; i++ {
		b.Pass(at(time.Duration(i) * width))
	}
	now = at(35 * width)
	total, accepts = 85, 20
	want = (total - 5 - 1.5*accepts) / (total + 1) * (40 - 10) / 40.0
	if got := b.Ratio(now); !near(got, want) {
		t.Fatalf("Ratio after a working run of 10 = %v, want %v", got, want)
	}
	// The decision Allow takes reads the same figures.
	if _, ok := b.Allow(now, want+1e-9); !ok {
		t.Fatalf("a draw just over the ratio was refused")
	}
	if _, ok := b.Allow(now, want-1e-9); ok {
		t.Fatalf("a draw just under the ratio was let through")
	}
	// The bucket now falls in is partial: a failure in it starts no run.
	p.Protection = 0
	b = NewBreaker(p, t0)
	for i := range 4 {
		b.Pass(at(time.Duration(i) * width))
		b.Fail(at(time.Duration(i) * width))
	}
	b.Fail(at(4 * width))
	if got, want := b.Ratio(at(4*width)), (9-1.5*4)/10.0; !near(got, want) {
		t.Fatalf("Ratio with one failure in the partial bucket = %v, want %v (no decay)", got, want)
	}
}

func TestBreakerKDecaysToTheFloor(t *testing.T) {
	p := DefaultSre
	for _, c := range []struct {
		failing int
		w       float64
	}{{0, 1.5}, {10, 1.4}, {40, 1.1}, {400, 1.1}} {
		got := p.drop(100, 10, c.failing, 0)
		want := (100 - 5 - c.w*10) / 101
		if !near(got, want) {
			t.Errorf("drop with a failing run of %d = %v, want %v (w %v)", c.failing, got, want, c.w)
		}
	}
}

func TestBreakerRunsPassOverNeutralBuckets(t *testing.T) {
	for _, c := range []struct {
		name    string
		buckets []Tally
		f, w    int
	}{
		{"failing then empty", []Tally{{Total: 1, Failure: 1}, {}, {Total: 1, Failure: 1}}, 2, 0},
		{"drops only are neutral", []Tally{{Total: 1, Failure: 1}, {Total: 3, Drop: 3}}, 1, 0},
		{"a success ends the failing run", []Tally{{Total: 1, Failure: 1}, {Total: 1, Success: 1}}, 0, 1},
		{"mixed ends both", []Tally{{Total: 1, Success: 1}, {Total: 2, Success: 1, Failure: 1}}, 0, 0},
	} {
		var f, w int
		for _, t := range c.buckets {
			f, w = t.runs(f, w)
		}
		if f != c.f || w != c.w {
			t.Errorf("%s: runs = %d failing %d working, want %d %d", c.name, f, w, c.f, c.w)
		}
	}
}

func TestBreakerPolicyClamped(t *testing.T) {
	p := Sre{K: math.NaN(), Floor: 7, Protection: -3, Probe: -1, Size: 0, Window: -time.Second}
	got := NewBreaker(p, t0).Policy()
	want := Sre{K: 1.5, Floor: 1.5, Protection: 0, Probe: -1, Size: 1, Window: -time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("clamped policy (-want +got):\n%s", diff)
	}
	// A breaker with no probe never lets a refused call through by itself.
	p = DefaultSre
	p.Probe = 0
	b := NewBreaker(p, t0)
	last := outage(t, b, t0)
	for d := time.Second; d <= 5*time.Second; d += time.Second {
		if _, ok := b.Allow(last.Add(d), 0); ok {
			t.Fatalf("a breaker without a probe let a call through %v after the last", d)
		}
	}
}

func TestBreakerZeroCallSettlesNothing(t *testing.T) {
	b := NewBreaker(DefaultSre, t0)
	var c Call
	c.Pass(t0)
	c.Fail(t0)
	for _, tl := range b.win.buckets {
		if tl != (Tally{}) {
			t.Fatalf("zero Call wrote %+v", tl)
		}
	}
}
