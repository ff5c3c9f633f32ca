package wardpool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
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
		Recorder: record.New(64 << 10),
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
	rc, err := record.ReadRecording(data)
	if err != nil {
		panic(err)
	}
	fmt.Println("size", rc.Limits.Size)
	// The first Acquire asks the pool (Take, Made), the first Release
	// gives back (Give), and Close comes last.
	for _, s := range rc.Steps[:3] {
		fmt.Println(s.Op, "→", s.Answer())
	}
	last := rc.Steps[len(rc.Steps)-1]
	fmt.Println(last.Op, "→", last.Answer())
	fmt.Println("replay:", rc.Replay())
	// Output:
	// size 2
	// Take → Make gen=0
	// Made → true
	// Give → true
	// Close → seats [0]
	// replay: <nil>
}
