package engine

import (
	"testing"
	"time"
)

// TestQueueSlotOfACallerGone: a caller who gave up in the queue is
// recycled for the next to arrive, and the slot it left must not serve
// that one ahead of the callers queued before it. A pool of 1 lent to A
// until 150 ms; B (10 ms) gives up at 110 ms, C (100 ms) waits, D (115
// ms) comes in B's place: the return at 150 ms is C's, first come first
// served, and D gives up at 215 ms.
func TestQueueSlotOfACallerGone(t *testing.T) {
	s := builtin(t, "steady")
	s.Seconds = 2
	s.Dial = 0
	s.Limits.Size, s.Limits.Idle = 1, 1
	s.Timeout = 100 * time.Millisecond
	ms := time.Millisecond
	load := &Slice{A: []Arrival{
		{At: 0, Hold: 150 * ms},
		{At: 10 * ms, Hold: time.Second},
		{At: 100 * ms, Hold: time.Second},
		{At: 115 * ms, Hold: time.Second},
	}}
	waits := map[uint64]time.Duration{}
	r, err := Run(s, Options{Load: load, Wait: func(c uint64, w time.Duration) { waits[c] = w }})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]time.Duration{0: 0, 1: 100 * ms, 2: 50 * ms, 3: 100 * ms}
	for c, w := range want {
		if waits[c] != w {
			t.Errorf("caller %d waited %v, want %v (all: %v)", c, waits[c], w, waits)
		}
	}
	if r.Sum.Served != 2 || r.Sum.TimedOut != 2 {
		t.Errorf("%d served and %d timed out, want 2 and 2", r.Sum.Served, r.Sum.TimedOut)
	}
}
