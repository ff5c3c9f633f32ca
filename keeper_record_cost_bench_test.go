package wardpool

import (
	"context"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// BenchmarkRecordCost measures what recording costs an uncontended Acquire
// and Release on a machine whose cores are shared: two warm Keepers of 10
// (recording off and on) take turns
// in chunks of 2000 pairs within one process, and each reports the fastest
// chunk it ran, so a chunk another process interrupted counts for nothing.
// One b.N is one round of two chunks; run it with -benchtime 400x. The
// metrics are ns/op of each Keeper's fastest chunk and the ratio of
// recording on to off (goal at most 1.2). The B/op are the recorders' halves growing to their
// full size once, spread over the rounds: the steady state allocates
// nothing (pool's TestRecordingAllocatesNothing).
func BenchmarkRecordCost(b *testing.B) {
	ctx := context.Background()
	mk := func(rec bool) *Keeper[*benchConn] {
		cfg := Config[*benchConn]{
			Limits: pool.Limits{Size: 10, Idle: 10},
			Dial:   func(context.Context) (*benchConn, error) { return &benchConn{1}, nil },
			Close:  func(*benchConn) error { return nil },
		}
		if rec {
			cfg.Recorder = record.New(recordBenchLimit)
		}
		k, err := NewKeeper(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { k.Close(ctx) })
		l, _ := k.Acquire(ctx)
		l.Release()
		return k
	}
	ks := [2]*Keeper[*benchConn]{mk(false), mk(true)}
	best := [2]float64{1e18, 1e18}
	const chunk = 2000
	b.ReportAllocs()
	for b.Loop() {
		for i, k := range ks {
			start := time.Now()
			for range chunk {
				l, err := k.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
			best[i] = min(best[i], float64(time.Since(start).Nanoseconds())/chunk)
		}
	}
	b.ReportMetric(best[0], "off-ns")
	b.ReportMetric(best[1], "on-ns")
	b.ReportMetric(best[1]/best[0], "ratio")
}
