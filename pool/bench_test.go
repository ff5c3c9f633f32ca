package pool

import (
	"fmt"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// BenchmarkTakeGive is the steady state: one idle resource lent and given
// back, at a fixed instant (the runtime supplies a cached clock reading).
func BenchmarkTakeGive(b *testing.B) {
	for _, l := range []Limits{{Size: 10, Idle: 10}, DefaultLimits, {Size: 10, Keep: time.Minute, Life: time.Hour}} {
		b.Run(fmt.Sprintf("keep=%v/life=%v", l.Keep, l.Life), func(b *testing.B) {
			p := mustNew(b, l)
			c := &conn{1}
			p.Take(at(0), 0, 0)
			p.Made(c, p.Gen(), at(0), 0)
			p.Give(c, at(0))
			now := at(1)
			b.ReportAllocs()
			for b.Loop() {
				tk := p.Take(now, 0.5, 0)
				p.Give(tk.Item, now)
			}
		})
	}
}

// BenchmarkTakeGiveWarded is the same with every guard of the ward in place
// but none refusing.
func BenchmarkTakeGiveWarded(b *testing.B) {
	now := at(0)
	w := ward.Ward{
		Breaker: ward.NewBreaker(ward.DefaultSre, now),
		Shedder: ward.NewShedder(ward.DefaultShed, now),
		Limiter: ward.NewLimiter(ward.DefaultAimd),
	}
	p, err := New[*conn](DefaultLimits, w)
	if err != nil {
		b.Fatal(err)
	}
	c := &conn{1}
	p.Take(now, 0.5, 0)
	p.Made(c, p.Gen(), now, 0)
	p.Give(c, now)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		t := now.Add(time.Duration(i) * time.Microsecond)
		tk := p.Take(t, 0.5, 0)
		p.Give(tk.Item, t)
	}
}

// BenchmarkTakeStale is Take answering Stale, then the Make that replaces
// the stale one, then Made and Give: the full cost of a recycle.
func BenchmarkTakeStale(b *testing.B) {
	p := mustNew(b, Limits{Size: 10, Life: time.Nanosecond})
	cs := [2]*conn{{1}, {2}}
	p.Take(at(0), 0, 0)
	p.Made(cs[0], p.Gen(), at(0), 0)
	p.Give(cs[0], at(0))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		now := at(i)
		tk := p.Take(now, 0, 0)
		if tk.Kind != Stale {
			b.Fatalf("take = %v", tk.Kind)
		}
		p.Take(now, 0, 0)
		c := cs[i%2]
		p.Made(c, p.Gen(), now, 0)
		p.Give(c, now)
	}
}

// BenchmarkEvictNothingDue is Evict over n idle resources none of which is
// due: it must not depend on n.
func BenchmarkEvictNothingDue(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := fill(b, n)
			now := at(1)
			b.ReportAllocs()
			for b.Loop() {
				p.Evict(now)
			}
		})
	}
}

// BenchmarkEvictOneDue is Evict removing one expired resource from among n
// idle, and putting a fresh one back: the per-expired cost.
func BenchmarkEvictOneDue(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := fill(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				now := at(0).Add(time.Hour + time.Duration(i)*time.Nanosecond)
				for _, c := range p.Evict(now) {
					p.Take(now, 0, 0)
					p.Made(c, p.Gen(), now, 0)
					p.Give(c, now)
				}
			}
		})
	}
}

// fill makes a pool of n idle resources born over the first n ns, with a Life
// of an hour and a Keep of two.
func fill(b *testing.B, n int) *Pool[*conn] {
	p := mustNew(b, Limits{Keep: 2 * time.Hour, Life: time.Hour})
	for i := range n {
		now := at(0).Add(time.Duration(i))
		p.Take(now, 0, 0)
		c := &conn{i}
		p.Made(c, p.Gen(), now, 0)
		p.Give(c, now)
	}
	return p
}

// BenchmarkGiveByItem is Give finding what it is handed from the item
// alone (not the seat lent last), among n resources: a Give and a Take
// of a resource other than the one lent last, every time.
func BenchmarkGiveByItem(b *testing.B) {
	for _, n := range []int{16, 10000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			p := mustNew(b, Limits{Size: n, Idle: n})
			now := at(0)
			items := make([]*conn, n)
			for i := range items {
				p.Take(now, 0.5, 0)
				items[i] = &conn{i}
				p.Made(items[i], p.Gen(), now, 0)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := items[i]
				p.Give(c, now)
				if tk := p.Take(now, 0.5, 0); tk.Item != c {
					b.Fatalf("took %v, want %v back", tk.Item, c)
				}
				// The next resource is another: Give looks it up.
				i = (i + 7919) % n
			}
		})
	}
}
