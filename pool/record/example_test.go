package record_test

import (
	"fmt"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// A pool of one's own, recorded: every call goes through the wrapper, and
// the recording replays. The instants print as they were given, counted
// from the one Wrap was given.
func ExampleWrap() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw, err := pool.New[*int](pool.Limits{Size: 1, Keep: time.Minute}, ward.Ward{})
	if err != nil {
		panic(err)
	}
	p, err := record.Wrap(raw, record.New(0), t0)
	if err != nil {
		panic(err)
	}
	s := new(int)
	tk := p.Take(t0, 0, 0)
	p.Made(s, tk.Gen, t0, 0)
	p.Give(s, t0.Add(time.Second))
	p.Take(t0.Add(2*time.Minute), 0, 0) // idle past Keep: Stale

	rc, err := record.ReadRecording(p.Recording(nil))
	if err != nil {
		panic(err)
	}
	for _, st := range rc.Steps {
		fmt.Println(st)
	}
	fmt.Println("replay:", rc.Replay())
	// Output:
	// #0 Take at=0s roll=0 cpu=0 → Make gen=0
	// #1 Made ref=0 at=0s gen=0 extra=0s → true
	// #2 Give ref=1 at=1s → true
	// #3 Take at=2m0s roll=0 cpu=0 → Stale seat=0
	// replay: <nil>
}
