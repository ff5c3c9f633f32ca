package record

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// at is an instant n milliseconds after a fixed origin.
func at(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * time.Millisecond) }

// BenchmarkRecordTakeGive is the Pool's own steady state (BenchmarkTakeGive)
// with recording off and on.
func BenchmarkRecordTakeGive(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "record=off"
		if on {
			name = "record=on"
		}
		b.Run(name, func(b *testing.B) {
			raw, _ := pool.New[*int](pool.DefaultLimits, ward.Ward{})
			var p interface {
				Take(time.Time, float64, int) pool.Taken[*int]
				Made(*int, uint32, time.Time, time.Duration) bool
				Give(*int, time.Time) bool
			} = raw
			if on {
				w, err := Wrap(raw, New(0), at(0))
				if err != nil {
					b.Fatal(err)
				}
				p = w
			}
			c := new(int)
			p.Take(at(0), 0, 0)
			p.Made(c, 0, at(0), 0)
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
	raw, _ := pool.New[*int](pool.DefaultLimits, ward.Ward{})
	p, err := Wrap(raw, New(MinLimit), at(0))
	if err != nil {
		t.Fatal(err)
	}
	c := new(int)
	p.Take(at(0), 0, 0)
	p.Made(c, 0, at(0), 0)
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
