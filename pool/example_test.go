package pool_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// t0 is the instant the examples start at. Only differences matter to a
// pool, so any instant would do.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// The six answers of Take, and what a caller does with each. The pool never
// opens or closes anything: the caller does, and reports back.
func ExamplePool_Take() {
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	// One slot, and an idle resource is retired after a minute.
	p, _ := pool.New[string](pool.Limits{Size: 1, Keep: time.Minute}, ward.Ward{})

	fmt.Println(p.Take(at(0), 0, 0).Kind) // room: open one and report Made
	p.Made("conn-1", p.Gen(), at(0), 0)
	fmt.Println(p.Take(at(0), 0, 0).Kind) // the one slot is lent: queue

	p.Give("conn-1", at(time.Second))
	ready := p.Take(at(3*time.Second), 0, 0) // the one just given back
	fmt.Println(ready.Kind, ready.Item, "after", ready.Idle, "idle")

	p.Give("conn-1", at(4*time.Second))
	stale := p.Take(at(2*time.Minute), 0, 0) // idle too long: close it, ask again
	fmt.Println(stale.Kind, stale.Item, "live", p.Books().Live)

	// A token bucket in the ward spaces makes out: one a second.
	spaced, _ := pool.New[string](pool.Limits{}, ward.Ward{Bucket: ward.NewBucket(1, 1, at(0))})
	spaced.Take(at(0), 0, 0)
	spaced.Made("conn-2", spaced.Gen(), at(0), 0)
	later := spaced.Take(at(0), 0, 0) // try again after Delay
	fmt.Println(later.Kind, later.Delay, "by the", later.Guard)

	// A breaker in the ward refuses new connections to a failing backend.
	sre := ward.DefaultSre
	sre.Protection = 0 // no free calls: the first failure already counts
	guarded, _ := pool.New[string](pool.Limits{}, ward.Ward{Breaker: ward.NewBreaker(sre, at(0))})
	guarded.Take(at(0), 0.9, 0)
	guarded.Unmade(at(0), 0, ward.GuardNone) // the dial failed
	fmt.Println("refusing", guarded.Refusal(at(0)), "of new connections")
	shed := guarded.Take(at(0), 0.1, 0) // a draw under the refusal: fail fast
	fmt.Println(shed.Kind, "by the", shed.Guard)

	// And after Close, one answer only.
	p.Close()
	fmt.Println(p.Take(at(3*time.Minute), 0, 0).Kind)

	// Output:
	// Make
	// Wait
	// Ready conn-1 after 2s idle
	// Stale conn-1 live 0
	// Later 1s by the bucket
	// refusing 0.5 of new connections
	// Shed by the breaker
	// Closed
}

// The books after one resource is made and then reused: two loans, one of
// them out of idle, so one resource was made for the asker.
func ExamplePool_Books() {
	p, _ := pool.New[int](pool.Limits{Size: 8}, ward.Ward{})
	p.Take(t0, 0, 0) // Make
	p.Made(1, p.Gen(), t0, 0)
	p.Give(1, t0.Add(100*time.Millisecond))
	p.Take(t0.Add(200*time.Millisecond), 0, 0) // Ready 1

	b := p.Books()
	fmt.Println("live", b.Live, "idle", b.Idle, "busy", b.Busy)
	fmt.Println("loans", b.Loans, "reused", b.Reused, "made", b.Made)
	fmt.Println("made for the asker", b.Loans-b.Reused)
	// Output:
	// live 1 idle 0 busy 1
	// loans 2 reused 1 made 1
	// made for the asker 1
}

// A leak found with Loans: the pool says what is out and for how long, and
// the caller, who knows how long its work may take, sets the threshold.
func ExamplePool_Loans() {
	p, _ := pool.New[int](pool.Limits{Size: 8}, ward.Ward{})
	p.Take(t0, 0, 0)
	p.Made(1, p.Gen(), t0, 0)
	p.Give(1, t0.Add(100*time.Millisecond))
	p.Take(t0.Add(200*time.Millisecond), 0, 0) // 1 is out again from here
	p.Take(t0.Add(450*time.Millisecond), 0, 0)
	p.Made(2, p.Gen(), t0.Add(450*time.Millisecond), 0)

	const threshold = 250 * time.Millisecond
	for _, l := range p.Loans(t0.Add(500 * time.Millisecond)) {
		if l.Held > threshold {
			fmt.Println("leak? item", l.Item, "held", l.Held)
		} else {
			fmt.Println("fine: item", l.Item, "held", l.Held)
		}
	}
	// Output:
	// leak? item 1 held 300ms
	// fine: item 2 held 50ms
}

// Pick chooses between pools to one service by two random choices: the one
// whose breaker refuses less, then the one with fewer in use.
func ExamplePick() {
	open := func(n int) *pool.Pool[int] {
		p, _ := pool.New[int](pool.Limits{}, ward.Ward{})
		for i := range n {
			p.Take(t0, 0, 0)
			p.Made(i+1, p.Gen(), t0, 0)
		}
		return p
	}
	pools := []*pool.Pool[int]{open(3), open(1), open(0)}

	// The draws name pools 0 and 1: pool 1 has fewer busy.
	fmt.Println(pool.Pick(pools, t0, 0.1, 0.1))
	// The draws name pools 0 and 2: pool 2 has none busy.
	fmt.Println(pool.Pick(pools, t0, 0.1, 0.9))

	// A closed pool is passed over.
	pools[2].Close()
	fmt.Println(pool.Pick(pools, t0, 0.1, 0.9))
	fmt.Println(pool.Pick([]*pool.Pool[int]{}, t0, 0.5, 0.5))
	// Output:
	// 1
	// 2
	// 0
	// -1
}

// RoundRobin takes turns; its cursor wraps at the count it is given, so
// targets may come and go.
func ExampleRoundRobin() {
	var rr pool.RoundRobin
	var turns []int
	for range 5 {
		turns = append(turns, rr.Pick(3))
	}
	fmt.Println(turns)
	turns = turns[:0]
	for range 3 {
		turns = append(turns, rr.Pick(2)) // one target left
	}
	fmt.Println(turns)
	fmt.Println(rr.Pick(0))
	// Output:
	// [0 1 2 0 1]
	// [0 1 0]
	// -1
}

// Weighted is nginx's smooth weighted round-robin: with weights 5, 1 and 1,
// a gets five turns in seven, interleaved with b and c rather than five in a
// row.
func ExampleWeighted() {
	var w pool.Weighted
	targets := []pool.Target{{Name: "a", Weight: 5}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	var turns []string
	for range 14 {
		turns = append(turns, targets[w.Pick(targets)].Name)
	}
	fmt.Println(strings.Join(turns, " "))
	fmt.Println(w.Pick([]pool.Target{{Name: "off", Weight: 0}}))
	// Output:
	// a a b a c a a a a b a c a a
	// -1
}
