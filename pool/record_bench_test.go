package pool

import (
	"context"
	"flag"
	"runtime"
	"testing"
	"time"
)

// BenchmarkRecordUncontended is one goroutine acquiring and releasing from
// a warm Keeper of 10, with the default clock, recording off and on, side
// by side in one run: through the lane (the default configuration: the
// pairs reach the recording later, as one Relent per fold) and locked, the
// lane shut by Config.LockEveryLoan (as a ward with a shedder or a limiter
// shuts it, here without those costs): every pair is a Take and a GiveSeat
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
				cfg := Config[*conn]{
					Limits: Limits{Size: 10, Idle: 10},
					Dial:   func(context.Context) (*conn, error) { return &conn{1}, nil },
					Close:  func(*conn) error { return nil },
				}
				if on {
					cfg.Recorder = NewRecorder(recordBenchLimit)
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
				cpu := startCPU()
				for b.Loop() {
					l, err := k.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					l.Release()
				}
				cpu.report(b)
			})
		}
	}
}

// BenchmarkRecordTakeGive is the Pool's own steady state (BenchmarkTakeGive)
// with recording off and on.
func BenchmarkRecordTakeGive(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "record=off"
		if on {
			name = "record=on"
		}
		b.Run(name, func(b *testing.B) {
			p := mustNew(b, DefaultLimits)
			if on {
				if err := p.Record(NewRecorder(0)); err != nil {
					b.Fatal(err)
				}
			}
			c := &conn{1}
			p.Take(at(0), 0, 0)
			p.Made(c, at(0))
			p.Give(c, at(0))
			b.ReportAllocs()
			cpu := startCPU()
			i := 0
			for b.Loop() {
				i++
				now := at(0).Add(time.Duration(i) * time.Microsecond)
				tk := p.Take(now, 0.5, 0)
				p.Give(tk.Item, now)
			}
			cpu.report(b)
		})
	}
}

// TestRecordingAllocatesNothing: once its halves have grown, a Recorder
// records Take and Give without allocating, rolls included.
func TestRecordingAllocatesNothing(t *testing.T) {
	p := mustNew(t, DefaultLimits)
	if err := p.Record(NewRecorder(MinRecordLimit)); err != nil {
		t.Fatal(err)
	}
	c := &conn{1}
	p.Take(at(0), 0, 0)
	p.Made(c, at(0))
	p.Give(c, at(0))
	i := 0
	step := func() {
		i++
		now := at(0).Add(time.Duration(i) * time.Microsecond)
		tk := p.Take(now, 0.5, 0)
		p.Give(tk.Item, now)
	}
	for range 2000 { // several rolls: both halves at full size
		step()
	}
	if n := testing.AllocsPerRun(2000, step); n != 0 {
		t.Fatalf("%v allocations a Take+Give recorded", n)
	}
}

// recordBenchLimit is the Recorder's limit in the benchmarks; zero is the
// default.
var recordBenchLimit = 0

func init() {
	flag.IntVar(&recordBenchLimit, "recordlimit", 0, "the Recorder's limit in BenchmarkRecordUncontended")
}

// threadCPU returns the CPU time of the calling thread, where the platform
// tells it (see record_bench_linux_test.go); nil elsewhere.
var threadCPU func() time.Duration

// cpuMeter measures a benchmark loop's CPU time on its own thread.
type cpuMeter struct{ start time.Duration }

// startCPU locks the benchmark to its thread and starts measuring.
func startCPU() cpuMeter {
	if threadCPU == nil {
		return cpuMeter{}
	}
	runtime.LockOSThread()
	return cpuMeter{threadCPU()}
}

// report adds cpu-ns/op to b's results and unlocks the thread.
func (c cpuMeter) report(b *testing.B) {
	if threadCPU == nil {
		return
	}
	used := threadCPU() - c.start
	runtime.UnlockOSThread()
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
