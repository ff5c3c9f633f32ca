package ward_test

import (
	"fmt"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// A breaker's state written out and read back into a new one, against an
// origin an hour later: the copy answers as the original would an hour
// later, because every instant it holds moved with the origin.
func ExampleBreaker_AppendState() {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := ward.NewBreaker(ward.DefaultSre, t0)
	for i := range 20 {
		b.Fail(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	state := b.AppendState(nil, t0)

	later := t0.Add(time.Hour)
	c := new(ward.Breaker)
	if _, err := c.ReadState(state, later); err != nil {
		panic(err)
	}
	at := 2 * time.Second
	fmt.Printf("original refuses %.2f, copy refuses %.2f\n", b.Ratio(t0.Add(at)), c.Ratio(later.Add(at)))
	// Output: original refuses 0.71, copy refuses 0.71
}
