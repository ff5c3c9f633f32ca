package ward_test

import (
	"fmt"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// The limiters run: one burst of forty calls every two seconds, straddling
// the turn of a second, offered to three quotas of twenty a second.
func Example_limiters() {
	start := time.Unix(1_700_000_000, 0)
	bucket := ward.NewBucket(20, 20, start)
	sliding := ward.NewSliding(20, time.Second)
	period := ward.NewPeriod(20, time.Second, true)

	fmt.Println("burst  bucket  sliding  period")
	for burst := range 4 {
		turn := start.Add(time.Duration(2*burst+1) * time.Second)
		var b, s, p int
		for i := range 40 {
			now := turn.Add(time.Duration(i-20) * 2500 * time.Microsecond)
			if bucket.Take(now, 1) {
				b++
			}
			if sliding.Take(now) {
				s++
			}
			if period.Take(now) != ward.Over {
				p++
			}
		}
		fmt.Printf("%-6d %-7d %-8d %d\n", burst, b, s, p)
	}
	// Output:
	// burst  bucket  sliding  period
	// 0      21      20       40
	// 1      21      20       40
	// 2      21      20       40
	// 3      21      20       40
}

func ExampleBreaker() {
	now := time.Unix(0, 0)
	b := ward.NewBreaker(ward.DefaultSre, now)
	// A backend that fails every call for half a second.
	for range 50 {
		now = now.Add(10 * time.Millisecond)
		if call, ok := b.Allow(now, 0.99); ok {
			call.Fail(now)
		}
	}
	fmt.Printf("refusing %.0f%% of calls\n", 100*b.Ratio(now))
	if _, ok := b.Allow(now, 0.5); !ok {
		fmt.Println("refused")
	}
	// Output:
	// refusing 88% of calls
	// refused
}

func ExampleBucket() {
	now := time.Unix(0, 0)
	b := ward.NewBucket(10, 2, now) // ten a second, two at once
	fmt.Println(b.Take(now, 1), b.Take(now, 1), b.Take(now, 1))
	fmt.Println("next in", b.Next(now, 1))
	// Output:
	// true true false
	// next in 100ms
}

func ExampleCounter() {
	c := ward.NewCounter(3, 10*time.Second)
	for tick := range 3 {
		c.Take(time.Unix(int64(tick), 0))
	}
	at15 := time.Unix(15, 0)
	for range 3 {
		estimate := c.Estimate(at15)
		fmt.Println(estimate, c.Take(at15))
	}
	// Output:
	// 1.5 true
	// 2.5 true
	// 3.5 false
}

func ExampleBackoff() {
	b := ward.DefaultBackoff
	for made := 1; b.More(made); made++ {
		fmt.Printf("retry %d: ceiling %v, at a draw of 0.1 wait %v\n",
			made, b.Ceiling(made), b.Delay(made, 0.1, 0))
	}
	// Output:
	// retry 1: ceiling 100ms, at a draw of 0.1 wait 84ms
	// retry 2: ceiling 200ms, at a draw of 0.1 wait 168ms
}

func ExampleShedder() {
	now := time.Unix(0, 0)
	s := ward.NewShedder(ward.DefaultShed, now)
	// At full CPU with nothing in flight, nothing is shed.
	t, ok := s.Allow(now, 1000)
	fmt.Println(ok, s.Flying())
	t.Pass(now.Add(20 * time.Millisecond))
	fmt.Println(s.Flying())
	// Output:
	// true 1
	// 0
}

func ExampleLimiter() {
	now := time.Unix(0, 0)
	l := ward.NewLimiter(ward.DefaultAimd)
	fmt.Println("limit", l.Limit())
	for l.Acquire(now) {
	}
	fmt.Println("out", l.Inflight())
	for range 10 {
		l.Release(now, now.Add(5*time.Millisecond), true) // quick: grow
	}
	fmt.Println("limit", l.Limit())
	// Output:
	// limit 10
	// out 10
	// limit 14
}

func ExampleWard() {
	now := time.Unix(0, 0)
	var none ward.Ward
	backoff := ward.DefaultBackoff
	w := ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, now), Backoff: &backoff}
	fmt.Println(none.IsZero(), w.IsZero(), ward.GuardBreaker)
	// Output:
	// true false breaker
}
