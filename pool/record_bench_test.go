package pool

import (
	"testing"
	"time"
)

// BenchmarkRecordTakeGive is the Pool's own steady state (BenchmarkTakeGive)
// with recording off and on.
func BenchmarkRecordTakeGive(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "record=off"
		if on {
			name = "record=on"
		}
		b.Run(name, func(b *testing.B) {
			p := mustNew(b, DefaultLimits)
			if on {
				if err := p.Record(NewRecorder(0)); err != nil {
					b.Fatal(err)
				}
			}
			c := &conn{1}
			p.Take(at(0), 0, 0)
			p.Made(c, at(0), 0)
			p.Give(c, at(0))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				now := at(0).Add(time.Duration(i) * time.Microsecond)
				tk := p.Take(now, 0.5, 0)
				p.Give(tk.Item, now)
			}
		})
	}
}

// TestRecordingAllocatesNothing: once its halves have grown, a Recorder
// records Take and Give without allocating, rolls included.
func TestRecordingAllocatesNothing(t *testing.T) {
	p := mustNew(t, DefaultLimits)
	if err := p.Record(NewRecorder(MinRecordLimit)); err != nil {
		t.Fatal(err)
	}
	c := &conn{1}
	p.Take(at(0), 0, 0)
	p.Made(c, at(0), 0)
	p.Give(c, at(0))
	i := 0
	step := func() {
		i++
		now := at(0).Add(time.Duration(i) * time.Microsecond)
		tk := p.Take(now, 0.5, 0)
		p.Give(tk.Item, now)
	}
	for range 2000 { // several rolls: both halves at full size
		step()
	}
	if n := testing.AllocsPerRun(2000, step); n != 0 {
		t.Fatalf("%v allocations a Take+Give recorded", n)
	}
}
