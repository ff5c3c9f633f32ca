package pool

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
	"pgregory.net/rapid"
)

// Pair against what it stands for: two pools built alike are driven with
// the same Takes and Gives, and wherever LanePairs lets a pair pass, one is
// told of it with Pair and the other with GiveSeat and a Take. Every answer
// after that must agree, and the pools, their guards included, must be
// equal field for field.
func TestPairIsGiveThenTake(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		t0 := time.Unix(1000, 0)
		shed := rapid.Bool().Draw(rt, "shedder")
		limit := !shed || rapid.Bool().Draw(rt, "limiter")
		size := rapid.IntRange(1, 8).Draw(rt, "size")
		idle := rapid.IntRange(0, size).Draw(rt, "idle")
		keep := time.Duration(rapid.SampledFrom([]int{0, 800, 3000}).Draw(rt, "keep")) * time.Millisecond
		slow := time.Duration(rapid.SampledFrom([]int{0, 300, 1000}).Draw(rt, "slow")) * time.Millisecond
		initial := rapid.IntRange(1, 8).Draw(rt, "initial")
		build := func() *Pool[int] {
			var w ward.Ward
			if shed {
				s := ward.DefaultShed
				s.Size, s.Window, s.Latency = 4, 2*time.Second, 200*time.Millisecond
				w.Shedder = ward.NewShedder(s, t0)
			}
			if limit {
				w.Limiter = ward.NewLimiter(ward.Aimd{Initial: initial, Min: 1, Max: 8, Slow: slow, Backoff: 0.5})
			}
			p, err := New[int](Limits{Size: size, Idle: idle, Keep: keep}, w)
			if err != nil {
				rt.Fatal(err)
			}
			return p
		}
		a, b := build(), build() // a hears of pairs with Pair, b with GiveSeat and Take
		now, next := t0, 1
		start := map[int]time.Time{} // lent item -> its loan's start
		var lent []int
		pairs := 0
		same := func(what string) {
			if !reflect.DeepEqual(a, b) {
				rt.Fatalf("after %s the pools differ:\nPair:          %+v %+v %+v\nGive and Take: %+v %+v %+v",
					what, a.Books(), a.ward.Shedder, a.ward.Limiter, b.Books(), b.ward.Shedder, b.ward.Limiter)
			}
		}
		for range rapid.IntRange(1, 150).Draw(rt, "steps") {
			cpu := rapid.SampledFrom([]int{0, 0, 500, 950, 1000}).Draw(rt, "cpu")
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); min(op, 3) {
			case 0:
				now = now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(rt, "ms")) * time.Millisecond)
			case 1:
				ta, tb := a.Take(now, 0.5, cpu), b.Take(now, 0.5, cpu)
				if ta != tb {
					rt.Fatalf("Take: %+v against %+v", ta, tb)
				}
				switch ta.Kind {
				case Make:
					a.Made(next, now)
					b.Made(next, now)
					lent, start[next] = append(lent, next), now
					next++
				case Ready:
					lent, start[ta.Item] = append(lent, ta.Item), now
				}
				same("Take")
			case 2:
				if len(lent) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(lent)-1).Draw(rt, "give")
				x := lent[i]
				lent = append(lent[:i], lent[i+1:]...)
				if ka, kb := a.GiveSeat(a.SeatOf(x), x, now), b.GiveSeat(b.SeatOf(x), x, now); ka != kb {
					rt.Fatalf("GiveSeat: %v against %v", ka, kb)
				}
				same("GiveSeat")
			case 3:
				if len(lent) == 0 {
					continue
				}
				x := lent[rapid.IntRange(0, len(lent)-1).Draw(rt, "pair")]
				hold, ok := a.LanePairs(cpu)
				if hb, okb := b.LanePairs(cpu); hb != hold || okb != ok {
					rt.Fatal("LanePairs differs between equal pools")
				}
				gave := now.Add(time.Duration(rapid.IntRange(0, 1200).Draw(rt, "held")) * time.Millisecond)
				took := gave.Add(time.Duration(rapid.IntRange(0, 400).Draw(rt, "idle")) * time.Millisecond)
				if !ok || (hold > 0 && gave.Sub(start[x]) > hold) || keep > 0 && took.Sub(gave) > keep {
					continue // not a pair the pool let pass, or not fresh
				}
				if !a.Pair(a.SeatOf(x), x, gave, took) {
					rt.Fatalf("Pair of lent %d refused", x)
				}
				if !b.GiveSeat(b.SeatOf(x), x, gave) {
					rt.Fatalf("the pool did not keep %d, which LanePairs said it would", x)
				}
				if tk := b.Take(took, 0.5, cpu); tk.Kind != Ready || tk.Item != x {
					rt.Fatalf("LanePairs let a pair by, and Take answered %+v, not Ready with %d", tk, x)
				}
				now, start[x] = took, took
				pairs++
				same("a pair")
			}
		}
		// Pair refuses what it cannot stand for: a resource not lent.
		for _, x := range lent {
			a.GiveSeat(a.SeatOf(x), x, now)
		}
		before := a.Books()
		if next > 1 && a.Pair(a.SeatOf(1), 1, now, now) {
			rt.Fatal("Pair of a resource not lent")
		}
		if a.Books() != before {
			rt.Fatal("a refused Pair changed the books")
		}
	})
}

// A limit shrunk below the leases out shuts the way for pairs: a quick
// Give then grows it by one, and the Take after finds no lease free.
func TestLanePairsShutWhileLeasesOutnumberTheLimit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p, _ := New[int](Limits{Size: 8}, ward.Ward{Limiter: ward.NewLimiter(ward.Aimd{Initial: 6, Min: 1, Max: 6, Slow: 300 * time.Millisecond, Backoff: 0.5})})
	for i := 1; i <= 6; i++ {
		if p.Take(t0, 0, 0).Kind != Make || !p.Made(i, t0) {
			t.Fatal("make")
		}
	}
	if hold, ok := p.LanePairs(0); !ok || hold != 300*time.Millisecond {
		t.Fatalf("LanePairs = %v, %v with six leases of six out; want 300ms, true", hold, ok)
	}
	p.GiveSeat(p.SeatOf(6), 6, t0.Add(time.Second)) // slow: the limit halves to 3, five out
	if _, ok := p.LanePairs(0); ok {
		t.Fatal("LanePairs let pairs by with five leases out under a limit of three")
	}
	// The resource given back waits idle, and no lease is free for it.
	if tk := p.Take(t0.Add(time.Second), 0, 0); tk.Kind != Wait || tk.Guard != ward.GuardLimiter {
		t.Fatalf("Take = %+v with the limit out, want Wait on the limiter", tk)
	}
}

// Pairs takes pairs in order up to the first it refuses, and says how many.
func TestPairsStopsAtTheFirstRefused(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p, _ := New[int](Limits{Size: 4}, ward.Ward{Limiter: ward.NewLimiter(ward.DefaultAimd)})
	for i := 1; i <= 2; i++ {
		if p.Take(t0, 0, 0).Kind != Make || !p.Made(i, t0) {
			t.Fatal("make")
		}
	}
	before := p.Books()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	got := p.Pairs(t0, []PairAt[int]{
		{Seat: p.SeatOf(1), Item: 1, Gave: ms(1), Took: ms(2)},
		{Seat: p.SeatOf(2), Item: 2, Gave: ms(3), Took: ms(4)},
		{Seat: p.SeatOf(2), Item: 7, Gave: ms(5), Took: ms(6)}, // not what the seat holds
		{Seat: p.SeatOf(1), Item: 1, Gave: ms(7), Took: ms(8)},
	})
	if got != 2 {
		t.Fatalf("Pairs took %d, want the 2 before the foreign one", got)
	}
	if b := p.Books(); b.Loans != before.Loans+2 || b.Reused != before.Reused+2 {
		t.Fatalf("books %+v after two pairs, from %+v", b, before)
	}
	if l := p.Loans(t0.Add(ms(10))); len(l) != 2 {
		t.Fatalf("loans %+v", l)
	}
	// The pool's clock stands at the last pair it took.
	if d := p.Loans(t0.Add(ms(10))); d[0].Held+d[1].Held != ms(10-2)+ms(10-4) {
		t.Fatalf("loans held %v and %v, want 8ms and 6ms", d[0].Held, d[1].Held)
	}
}

// Pairs against Pair one at a time: runs of pairs with loans quick and
// slow, Gives in one bucket of the shedder's window and across many, some
// standing still and some a window apart. Pairs tells its guards in
// batches where it can; the pools, guards included, must come out equal
// field for field after every run.
func TestPairsIsPairAfterPair(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		t0 := time.Unix(1000, 0)
		shed := rapid.Bool().Draw(rt, "shedder")
		limit := !shed || rapid.Bool().Draw(rt, "limiter")
		size := rapid.IntRange(1, 6).Draw(rt, "size")
		slow := time.Duration(rapid.SampledFrom([]int{0, 5, 300}).Draw(rt, "slow")) * time.Millisecond
		initial := rapid.IntRange(size, 8).Draw(rt, "initial") // room to lend them all
		// Windows from a nanosecond (every Give its own bucket) to the
		// longest a Duration holds (one bucket, and no span to batch in).
		window := rapid.SampledFrom([]time.Duration{1, time.Microsecond, 200 * time.Millisecond, time.Hour, math.MaxInt64}).Draw(rt, "window")
		buckets := rapid.IntRange(1, 50).Draw(rt, "buckets")
		build := func() *Pool[int] {
			var w ward.Ward
			if shed {
				s := ward.DefaultShed
				s.Size, s.Window, s.Latency = buckets, window, 20*time.Millisecond
				w.Shedder = ward.NewShedder(s, t0)
			}
			if limit {
				w.Limiter = ward.NewLimiter(ward.Aimd{Initial: initial, Min: 1, Max: 8, Slow: slow, Backoff: 0.5})
			}
			p, err := New[int](Limits{Size: size}, w)
			if err != nil {
				rt.Fatal(err)
			}
			for i := 1; i <= size; i++ {
				if p.Take(t0, 0.5, 0).Kind != Make || !p.Made(i, t0) {
					rt.Fatal("could not lend every resource")
				}
			}
			return p
		}
		a, b := build(), build() // a is told with Pairs, b with Pair
		now := t0
		for range rapid.IntRange(1, 8).Draw(rt, "runs") {
			base := now
			at := time.Duration(0)
			var run []PairAt[int]
			for range rapid.IntRange(0, 60).Draw(rt, "pairs") {
				switch rapid.IntRange(0, 5).Draw(rt, "gap") {
				case 0:
					at += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(rt, "long"))
				case 1:
					at += time.Duration(rapid.Int64Range(0, int64(60*time.Millisecond)).Draw(rt, "bucket"))
				default:
					at += time.Duration(rapid.Int64Range(0, int64(time.Millisecond)).Draw(rt, "short"))
				}
				item := rapid.IntRange(1, size).Draw(rt, "item")
				took := at + time.Duration(rapid.Int64Range(0, int64(time.Millisecond)).Draw(rt, "idle"))
				run = append(run, PairAt[int]{Seat: a.SeatOf(item), Item: item, Gave: at, Took: took})
				at = took
			}
			if n := a.Pairs(base, run); n != len(run) {
				rt.Fatalf("Pairs took %d of %d", n, len(run))
			}
			for _, x := range run {
				if !b.Pair(b.SeatOf(x.Item), x.Item, base.Add(x.Gave), base.Add(x.Took)) {
					rt.Fatalf("Pair refused %+v", x)
				}
			}
			if !reflect.DeepEqual(a.ward, b.ward) || a.Books() != b.Books() || !reflect.DeepEqual(a.z, b.z) || a.last != b.last {
				rt.Fatalf("after a run of %d pairs the pools differ:\nPairs: %+v %+v %+v\nPair:  %+v %+v %+v",
					len(run), a.Books(), a.ward.Shedder, a.ward.Limiter, b.Books(), b.ward.Shedder, b.ward.Limiter)
			}
			now = base.Add(at)
		}
	})
}
