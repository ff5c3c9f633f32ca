package wardpool

import (
	"context"
	"flag"
	"testing"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// BenchmarkRecordUncontended is one goroutine acquiring and releasing from
// a warm Keeper of 10, recording off and on, side by side in one run:
// every pair is a Take and a Give step.
func BenchmarkRecordUncontended(b *testing.B) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		name := "record=off"
		if on {
			name = "record=on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config[*benchConn]{
				Limits: pool.Limits{Size: 10, Idle: 10},
				Dial:   func(context.Context) (*benchConn, error) { return &benchConn{1}, nil },
				Close:  func(*benchConn) error { return nil },
			}
			if on {
				cfg.Recorder = record.New(recordBenchLimit)
			}
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

// recordBenchLimit is the Recorder's limit in the benchmarks; zero is the
// default.
var recordBenchLimit = 0

func init() {
	flag.IntVar(&recordBenchLimit, "recordlimit", 0, "the Recorder's limit in BenchmarkRecordUncontended")
}

// benchConn is the resource of the Keeper benchmarks here.
type benchConn struct{ n int }
