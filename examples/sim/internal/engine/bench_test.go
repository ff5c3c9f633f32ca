package engine

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// hour is the yardstick: an hour of virtual time at 1,000 acquires
// a second, each held 40 ms on average, against 64 resources.
func hour() Scenario {
	s, _ := Builtin("steady")
	s.Seconds, s.Rate = 3600, 1000
	s.Limits.Size, s.Limits.Idle = 64, 64
	return s
}

// BenchmarkHourAt1000PerSecond runs the hour; one op is the whole hour
// (3.6 million callers). ns/acquire is the cost of one caller, to set
// beside BenchmarkBareTakeGive's ns/op: the simulator's overhead over the
// pool's own work.
func BenchmarkHourAt1000PerSecond(b *testing.B) {
	b.ReportAllocs()
	s := hour()
	var callers int
	for b.Loop() {
		r, err := Run(s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		callers = r.Sum.Arrived
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(callers), "ns/acquire")
}

// BenchmarkBareTakeGive is the floor: one Take and one Give of an idle
// resource on the same pool, with no simulation around them.
func BenchmarkBareTakeGive(b *testing.B) {
	b.ReportAllocs()
	p, err := pool.New[int32](hour().Limits, ward.Ward{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Unix(0, 0)
	if p.Take(now, 0, 0).Kind != pool.Make || !p.Made(1, 0, now, 0) || !p.Give(1, now) {
		b.Fatal("setup")
	}
	for b.Loop() {
		now = now.Add(time.Millisecond)
		t := p.Take(now, 0, 0)
		if t.Kind != pool.Ready {
			b.Fatal(t.Kind)
		}
		p.Give(t.Item, now)
	}
}
