// Command limiters offers the same bursty traffic to three quotas of twenty
// calls a second: a token bucket, an exact sliding window and an aligned
// fixed period. Every two seconds a burst of forty calls, 2.5 ms apart,
// straddles the turn of a second, twenty on each side. It prints how many of
// each burst every limiter let through:
//
//	burst  bucket  sliding  period
//	0      21      20       40
//	...
//
// The bucket spends the twenty it saved and then holds the rate, which adds
// one more token during the burst's 97.5 ms. The sliding window refuses the
// twenty-first call in any one-second stretch. The period starts a fresh
// twenty when the second turns, so it lets all forty through: the price of a
// fixed window. Then it asks the bucket how long until five tokens are back.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/wardpool/wardpool/ward"
)

func main() {
	start := time.Unix(1_700_000_000, 0) // any whole second
	bucket := ward.NewBucket(20, 20, start)
	sliding := ward.NewSliding(20, time.Second)
	period := ward.NewPeriod(20, time.Second, true)

	fmt.Fprintln(os.Stdout, "burst  bucket  sliding  period")
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
		fmt.Fprintf(os.Stdout, "%-6d %-7d %-8d %d\n", burst, b, s, p)
	}
	end := start.Add(7*time.Second + 50*time.Millisecond) // one step after the last call
	fmt.Fprintf(os.Stdout, "five tokens in %v\n", bucket.Next(end, 5).Round(time.Millisecond))
}
