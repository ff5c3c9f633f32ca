package ward

import "time"

// t0 is an arbitrary whole second on the wall clock; tests count from it.
var t0 = time.Unix(1_700_000_000, 0)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// ms and sec are short for building offsets in tables.
func ms(n float64) time.Duration  { return time.Duration(n * float64(time.Millisecond)) }
func sec(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
