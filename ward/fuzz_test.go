package ward

import (
	"math"
	"testing"
	"time"
)

// fuzzStep turns two bytes into a time step: mostly forward, sometimes back,
// from a nanosecond to about a minute.
func fuzzStep(kind, mag byte) time.Duration {
	d := time.Duration(mag) * time.Duration(1+int(kind>>4)) * 17 * time.Millisecond
	if kind&0x0f == 0x0f {
		return -d
	}
	if kind&0x0f == 0x0e {
		return time.Duration(mag)
	}
	return d
}

// fuzzRoll turns a byte into a draw, with the out-of-range ones callers may pass.
func fuzzRoll(b byte) float64 {
	switch b {
	case 255:
		return math.NaN()
	case 254:
		return 1
	case 253:
		return -0.5
	}
	return float64(b) / 253
}

func FuzzWindow(f *testing.F) {
	f.Add(4, int64(4*time.Second), []byte{0x01, 10, 0x11, 200, 0x0f, 30, 0x0e, 3})
	f.Fuzz(func(t *testing.T, size int, span int64, ops []byte) {
		w := NewWindow[int](size, time.Duration(span), t0)
		now, latest := t0, t0 // latest: the latest moment written at
		written := 0
		for i := 0; i+1 < len(ops); i += 2 {
			now = now.Add(fuzzStep(ops[i], ops[i+1]))
			if ops[i]&0x10 == 0 {
				*w.Slot(now)++
				written++
				if now.After(latest) {
					latest = now
				}
			}
			var sum, again, visited int
			w.Each(now, true, func(b *int) { sum += *b; visited++ })
			w.Each(now, true, func(b *int) { again += *b })
			if sum != again || visited > w.Size() || sum > written || sum < 0 {
				t.Fatalf("read at step %d: sum %d then %d, %d visited of %d, %d written", i/2, sum, again, visited, w.Size(), written)
			}
			var partial int
			w.Each(now, false, func(b *int) { partial += *b })
			if partial > sum {
				t.Fatalf("leaving out the current bucket added: %d > %d", partial, sum)
			}
			// Nothing outlives the latest write by more than a span: a write
			// lands at its own moment or in the newest bucket, which opened
			// no later than the latest write.
			if w.span > math.MaxInt64-w.width {
				continue // a span on is past what a Duration holds
			}
			w.Each(latest.Add(w.span+w.width), true, func(b *int) {
				if *b != 0 {
					t.Fatalf("window still holds %d a span after the latest write: it stopped ageing", *b)
				}
			})
		}
	})
}

func FuzzBreaker(f *testing.F) {
	f.Add(40, int64(10*time.Second), []byte{0x00, 1, 0x01, 2, 0x02, 100, 0x10, 255})
	f.Fuzz(func(t *testing.T, size int, window int64, ops []byte) {
		p := DefaultSre
		p.Size, p.Window = size%200, time.Duration(window)
		b := NewBreaker(p, t0)
		now := t0
		open := 0
		for i := 0; i+2 < len(ops); i += 3 {
			now = now.Add(fuzzStep(ops[i], ops[i+1]) / 8)
			switch ops[i] % 3 {
			case 0:
				r := b.Ratio(now)
				if !(r >= 0 && r < 1) {
					t.Fatalf("Ratio = %v", r)
				}
				roll := fuzzRoll(ops[i+2])
				if _, ok := b.Allow(now, roll); ok {
					open++
				} else if draw(roll) >= r {
					t.Fatalf("refused at draw %v over the ratio %v", roll, r)
				}
			case 1:
				if open > 0 {
					open--
					b.Pass(now)
				}
			case 2:
				if open > 0 {
					open--
					b.Fail(now)
				}
			}
			for _, tl := range b.win.buckets {
				if tl.Total != tl.Success+tl.Failure+tl.Drop || tl.Success < 0 || tl.Failure < 0 || tl.Drop < 0 {
					t.Fatalf("tally out of balance: %+v", tl)
				}
			}
		}
	})
}
