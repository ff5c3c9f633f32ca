package ward

import (
	"slices"
	"testing"
	"time"
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
	if got, want := counts(w, at(sec(3)), true), []int{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("full window = %v, want %v", got, want)
	}
	*w.Slot(at(sec(5.5))) += 10 // sweeps past 4 s and 5 s: clears 1 and 2
	if got, want := counts(w, at(sec(5.5)), true), []int{3, 4, 0, 10}; !slices.Equal(got, want) {
		t.Fatalf("after a gap = %v, want %v", got, want)
	}
	*w.Slot(at(sec(100))) += 7 // sweeps past everything
	if got, want := counts(w, at(sec(100)), true), []int{0, 0, 0, 7}; !slices.Equal(got, want) {
		t.Fatalf("after a long gap = %v, want %v", got, want)
	}
}

func TestWindowReadSkipsWithoutClearing(t *testing.T) {
	w := NewWindow[int](4, 4*time.Second, t0)
	for i := range 4 {
		*w.Slot(at(sec(float64(i)))) += i + 1
	}
	// Two seconds on, the two oldest have aged out of a read.
	if got, want := counts(w, at(sec(5)), true), []int{3, 4}; !slices.Equal(got, want) {
		t.Fatalf("read at 5 s = %v, want %v", got, want)
	}
	// Reading again at the same now agrees, and an earlier read still sees all:
	// the read cleared nothing.
	if got, want := counts(w, at(sec(5)), true), []int{3, 4}; !slices.Equal(got, want) {
		t.Fatalf("second read at 5 s = %v, want %v", got, want)
	}
	if got, want := counts(w, at(sec(3)), true), []int{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("read at 3 s after later reads = %v, want %v", got, want)
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
	if got, want := counts(w, at(sec(1.5)), false), []int{0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("without current = %v, want %v (the partial bucket left out)", got, want)
	}
	// Once now has moved into a bucket nothing wrote, the head is whole.
	if got, want := counts(w, at(sec(2.5)), false), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("without current a bucket later = %v, want %v", got, want)
	}
}

func TestWindowSnapsToBucketBoundaries(t *testing.T) {
	w := NewWindow[int](10, time.Second, t0) // 100 ms buckets
	*w.Slot(at(ms(250))) += 1                // head opens at 200 ms, not 250
	*w.Slot(at(ms(299))) += 1                // same bucket
	*w.Slot(at(ms(300))) += 1                // the next
	if got, want := counts(w, at(ms(300)), true), []int{0, 0, 0, 0, 0, 0, 0, 0, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("buckets = %v, want %v", got, want)
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
	if got, want := counts(w, at(sec(3)), true), []int{0, 0, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("after a small step back = %v, want %v", got, want)
	}
	// Further back than the span: reads see nothing, a write starts over there,
	// and the window ages from the new reading at once.
	back := at(-sec(60))
	if got := counts(w, back, true); len(got) != 0 {
		t.Fatalf("read far back = %v, want nothing", got)
	}
	*w.Slot(back) += 5
	if got, want := counts(w, back, true), []int{0, 0, 0, 5}; !slices.Equal(got, want) {
		t.Fatalf("after a restart = %v, want %v", got, want)
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
