package shared

import "time"

// t0 is an arbitrary whole second on the wall clock; tests count from it.
var t0 = time.Unix(1_700_000_000, 0)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }
