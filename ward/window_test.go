package ward

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// counts lists the buckets Each visits at now, oldest first.
func counts(w *Window[int], now time.Time, current bool) []int {
	var out []int
	w.Each(now, current, func(b *int) { out = append(out, *b) })
	return out
}

func TestWindowWriteClearsWhatTheGapSweptPast(t *testing.T) {
	w := NewWindow[int](4, 4*time.Second, t0) // 1 s buckets
	for i := range 4 {
		*w.Slot(at(sec(float64(i)))) += i + 1 // buckets hold 1 2 3 4
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4}, counts(w, at(sec(3)), true)); diff != "" {
		t.Fatalf("full window (-want +got):\n%s", diff)
	}
	*w.Slot(at(sec(5.5))) += 10 // sweeps past 4 s and 5 s: clears 1 and 2
	if diff := cmp.Diff([]int{3, 4, 0, 10}, counts(w, at(sec(5.5)), true)); diff != "" {
		t.Fatalf("after a gap (-want +got):\n%s", diff)
	}
	*w.Slot(at(sec(100))) += 7 // sweeps past everything
	if diff := cmp.Diff([]int{0, 0, 0, 7}, counts(w, at(sec(100)), true)); diff != "" {
		t.Fatalf("after a long gap (-want +got):\n%s", diff)
	}
}

func TestWindowReadSkipsWithoutClearing(t *testing.T) {
	w := NewWindow[int](4, 4*time.Second, t0)
	for i := range 4 {
		*w.Slot(at(sec(float64(i)))) += i + 1
	}
	// Two seconds on, the two oldest have aged out of a read.
	if diff := cmp.Diff([]int{3, 4}, counts(w, at(sec(5)), true)); diff != "" {
		t.Fatalf("read at 5 s (-want +got):\n%s", diff)
	}
	// Reading again at the same now agrees, and an earlier read still sees all:
	// the read cleared nothing.
	if diff := cmp.Diff([]int{3, 4}, counts(w, at(sec(5)), true)); diff != "" {
		t.Fatalf("second read at 5 s (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4}, counts(w, at(sec(3)), true)); diff != "" {
		t.Fatalf("read at 3 s after later reads (-want +got):\n%s", diff)
	}
	// A window nobody writes to ages out completely.
	if got := counts(w, at(sec(8)), true); len(got) != 0 {
		t.Fatalf("read at 8 s = %v, want nothing", got)
	}
}

func TestWindowCurrentBucketLeftOut(t *testing.T) {
	w := NewWindow[int](4, 4*time.Second, t0)
	*w.Slot(at(sec(0))) = 1
	*w.Slot(at(sec(1.5))) = 2
	if diff := cmp.Diff([]int{0, 0, 1}, counts(w, at(sec(1.5)), false)); diff != "" {
		t.Fatalf("without current, the partial bucket left out (-want +got):\n%s", diff)
	}
	// Once now has moved into a bucket nothing wrote, the head is whole.
	if diff := cmp.Diff([]int{0, 1, 2}, counts(w, at(sec(2.5)), false)); diff != "" {
		t.Fatalf("without current a bucket later (-want +got):\n%s", diff)
	}
}

func TestWindowSnapsToBucketBoundaries(t *testing.T) {
	w := NewWindow[int](10, time.Second, t0) // 100 ms buckets
	*w.Slot(at(ms(250))) += 1                // head opens at 200 ms, not 250
	*w.Slot(at(ms(299))) += 1                // same bucket
	*w.Slot(at(ms(300))) += 1                // the next
	if diff := cmp.Diff([]int{0, 0, 0, 0, 0, 0, 0, 0, 2, 1}, counts(w, at(ms(300)), true)); diff != "" {
		t.Fatalf("buckets (-want +got):\n%s", diff)
	}
	if w.start != at(ms(300)) {
		t.Fatalf("head opened at %v, want 300ms", w.start.Sub(t0))
	}
}

func TestWindowClockSteppedBack(t *testing.T) {
	w := NewWindow[int](4, 4*time.Second, t0)
	*w.Slot(at(sec(3))) += 1
	// Within one span back: counted in the newest bucket.
	*w.Slot(at(sec(0.5))) += 1
	if diff := cmp.Diff([]int{0, 0, 0, 2}, counts(w, at(sec(3)), true)); diff != "" {
		t.Fatalf("after a small step back (-want +got):\n%s", diff)
	}
	// Further back than the span: reads see nothing, a write starts over there,
	// and the window ages from the new reading at once.
	back := at(-sec(60))
	if got := counts(w, back, true); len(got) != 0 {
		t.Fatalf("read far back = %v, want nothing", got)
	}
	*w.Slot(back) += 5
	if diff := cmp.Diff([]int{0, 0, 0, 5}, counts(w, back, true)); diff != "" {
		t.Fatalf("after a restart (-want +got):\n%s", diff)
	}
	if got := counts(w, back.Add(4*time.Second), true); len(got) != 0 {
		t.Fatalf("one span after the restart = %v, want nothing: the window must age", got)
	}
}

func TestWindowClampsSizeAndSpan(t *testing.T) {
	for _, c := range []struct {
		size      int
		span      time.Duration
		wantSize  int
		wantWidth time.Duration
	}{
		{0, time.Second, 1, time.Second},
		{-5, time.Second, 1, time.Second},
		{10, 0, 10, 1},
		{10, -time.Second, 10, 1},
		{10, 5, 10, 1},
	} {
		w := NewWindow[int](c.size, c.span, t0)
		if w.Size() != c.wantSize || w.Width() != c.wantWidth {
			t.Errorf("NewWindow(%d, %v): size %d width %v, want %d %v",
				c.size, c.span, w.Size(), w.Width(), c.wantSize, c.wantWidth)
		}
		// It still ages: a write long after leaves only itself.
		*w.Slot(t0) = 1
		*w.Slot(at(time.Hour)) = 2
		if got := counts(w, at(time.Hour), true); got[len(got)-1] != 2 || slices.Contains(got[:len(got)-1], 1) {
			t.Errorf("NewWindow(%d, %v) after an hour = %v", c.size, c.span, got)
		}
	}
}
