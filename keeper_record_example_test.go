package wardpool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// A Keeper with a Recorder writes down every call it makes into its Pool.
// The recording is written to a file (what a user attaches to a bug
// report), read back and replayed into a fresh Pool, which must give every
// answer the Keeper's Pool gave.
func ExampleReadRecording() {
	n := 0
	k, err := wardpool.NewKeeper(wardpool.Config[*session]{
		Limits: pool.Limits{Size: 2},
		Dial: func(ctx context.Context) (*session, error) {
			n++
			return &session{id: n}, nil
		},
		Close:    func(s *session) error { return nil },
		Recorder: pool.NewRecorder(64 << 10),
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		loan, err := k.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		loan.Release()
	}
	if err := k.Close(ctx); err != nil {
		panic(err)
	}

	dir, err := os.MkdirTemp("", "recording")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "pool.rec")
	if err := os.WriteFile(file, k.Recording(), 0o644); err != nil {
		panic(err)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		panic(err)
	}
	rc, err := pool.ReadRecording(data)
	if err != nil {
		panic(err)
	}
	fmt.Println("size", rc.Limits.Size)
	// The first Acquire asks the pool (Take, Made) and so does the first
	// Release (Give); the later ones may pass through the lane, and
	// reach the recording when Close folds it, or through the lock, as
	// timing has it. Close comes last either way.
	for _, s := range rc.Steps[:3] {
		fmt.Println(s.Op, "→", s.Answer())
	}
	last := rc.Steps[len(rc.Steps)-1]
	fmt.Println(last.Op, "→", last.Answer())
	fmt.Println("replay:", rc.Replay())
	// Output:
	// size 2
	// Take → Make
	// Made → true
	// Give → true
	// Close → seats [0]
	// replay: <nil>
}

// A Pool records the same way, through Record; here with a clock of its
// own, so the instants print as they were given.
func ExamplePool_Record() {
	p, err := pool.New[*session](pool.Limits{Size: 1, Keep: time.Minute}, ward.Ward{})
	if err != nil {
		panic(err)
	}
	if err := p.Record(pool.NewRecorder(0)); err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &session{id: 1}
	p.Take(t0, 0, 0)
	p.Made(s, t0, 0)
	p.Give(s, t0.Add(time.Second))
	p.Take(t0.Add(2*time.Minute), 0, 0) // idle past Keep: Stale

	rc, err := pool.ReadRecording(p.Recording(nil))
	if err != nil {
		panic(err)
	}
	for _, st := range rc.Steps {
		fmt.Println(st)
	}
	fmt.Println("replay:", rc.Replay())
	// Output:
	// #0 Take at=0s roll=0 cpu=0 → Make
	// #1 Made ref=0 at=0s extra=0s → true
	// #2 Give ref=1 at=1s → true
	// #3 Take at=2m0s roll=0 cpu=0 → Stale seat=0
	// replay: <nil>
}
