package engine_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// A built-in scenario, changed a little, run in virtual time.
func ExampleRun() {
	s, _ := engine.Builtin("burst")
	s.Limits.Size, s.Limits.Idle = 16, 16
	r, err := engine.Run(s, engine.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := r.Sum
	fmt.Printf("%d callers, p99 wait %v, %d connections opened, peak %d live\n",
		m.Arrived, m.P99.Round(time.Microsecond), m.Opened, m.Peak)
	// Output:
	// 3234 callers, p99 wait 258µs, 22 connections opened, peak 16 live
}

// A load from any pool's logs: when each caller asked, got and gave back.
func ExampleReadCSV() {
	rec, err := engine.ReadCSV(strings.NewReader(`asked,acquired,released
0.000,0.000,2.000
0.100,0.100,2.100
0.200,2.000,2.500
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := engine.Builtin("steady")
	s.Seconds, s.Dial = 3, 0
	for _, size := range []int{2, 3} {
		s.Limits.Size, s.Limits.Idle = size, size
		r, _ := engine.Run(s, engine.Options{Load: rec.Load(s.Hold)})
		fmt.Printf("Size %d: the third caller waits %v\n", size, r.Sum.Max)
	}
	// Output:
	// Size 2: the third caller waits 1.8s
	// Size 3: the third caller waits 0s
}
