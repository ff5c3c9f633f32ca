package wardpool

import (
	"context"
	"flag"
	"testing"

	"github.com/wardpool/wardpool/pool"
)

// BenchmarkRecordUncontended is one goroutine acquiring and releasing from
// a warm Keeper of 10, with the default clock, recording off and on, side
// by side in one run: through the lane (the default configuration: the
// pairs reach the recording later, as one Relent per fold) and locked, the
// lane shut by Config.LockEveryLoan (as a ward with a shedder or a limiter
// shuts it, here without those costs): every pair is a Take and a Give
// step.
func BenchmarkRecordUncontended(b *testing.B) {
	ctx := context.Background()
	for _, v := range []struct {
		name   string
		locked bool
	}{{"lane", false}, {"locked", true}} {
		for _, on := range []bool{false, true} {
			name := v.name + "/record=off"
			if on {
				name = v.name + "/record=on"
			}
			b.Run(name, func(b *testing.B) {
				cfg := Config[*benchConn]{
					Limits: pool.Limits{Size: 10, Idle: 10},
					Dial:   func(context.Context) (*benchConn, error) { return &benchConn{1}, nil },
					Close:  func(*benchConn) error { return nil },
				}
				if on {
					cfg.Recorder = pool.NewRecorder(recordBenchLimit)
				}
				cfg.LockEveryLoan = v.locked
				k, err := NewKeeper(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer k.Close(ctx)
				l, _ := k.Acquire(ctx)
				l.Release()
				b.ReportAllocs()
				for b.Loop() {
					l, err := k.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					l.Release()
				}
			})
		}
	}
}

// recordBenchLimit is the Recorder's limit in the benchmarks; zero is the
// default.
var recordBenchLimit = 0

func init() {
	flag.IntVar(&recordBenchLimit, "recordlimit", 0, "the Recorder's limit in BenchmarkRecordUncontended")
}

// benchConn is the resource of the Keeper benchmarks here.
type benchConn struct{ n int }
