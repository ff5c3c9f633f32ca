package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/puddle/v2"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// How cost grows. The benchmarks below hold one thing fixed and grow
// another by powers of ten, so that a line of the table in README.md reads
// flat where the design says an operation is O(1):
//
//   - ScaleSize: one Acquire and Release on a Keeper of Size n, all n idle,
//     and again with all but one lent (the busy side of the books full);
//   - ScaleWaiters: a release handed to the oldest of w queued callers;
//   - ScaleEvict: pool.Pool.Evict over n idle resources, when nothing is
//     due and when one is;
//   - ScaleMemory: bytes per idle resource and per queued waiter, from
//     runtime.MemStats.
//
// They need no server and run in seconds with
//
//	go test -run '^$' -bench '^BenchmarkScale' -benchtime 1x ./bench   # memory
//	go test -run '^$' -bench '^BenchmarkScale(Size|Waiters|Evict)' ./bench

// scaleSizes are the pool sizes the size and eviction lines are read at.
var scaleSizes = []int{1, 10, 100, 1_000, 10_000, 100_000}

// intDial makes distinct ints: a resource that is only its handle, so that
// what a pool holds per resource is the pool's own.
func intDial() func(context.Context) (int, error) {
	var n atomic.Int64
	return func(context.Context) (int, error) { return int(n.Add(1)), nil }
}

func intClose(int) error { return nil }

// fillKeeper makes k hold n resources, all idle, and returns with none
// lent.
func fillKeeper[T comparable](b testing.TB, k *wardpool.Keeper[T], n int) {
	ls := make([]wardpool.Loan[T], 0, n)
	for range n {
		l, err := k.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	// A dial's goroutine finishes its bookkeeping after its caller has the
	// loan: let every one end before anything is timed.
	for k.Stats().Dialing > 0 {
		runtime.Gosched()
	}
}

// BenchmarkScaleSize is one goroutine's Acquire and Release on a Keeper of
// Size n: with all n idle ("idle=n"), and with n-1 of them lent for the
// whole run so that one resource goes round ("lent=n-1"). Each for the
// Keeper as configured by default (every loan through the mutex and the
// Pool; sets before 2026-12-03 had a lock-free lane, and measured this
// path as "wardpool-lockevery"), and for puddle.
func BenchmarkScaleSize(b *testing.B) {
	ctx := context.Background()
	for _, n := range scaleSizes {
		for _, lentAll := range []bool{false, true} {
			shape := "idle"
			if lentAll {
				shape = "lent"
			}
			name := fmt.Sprintf("%s/size=%d", shape, n)
			for _, pname := range []string{"wardpool"} {
				b.Run(name+"/pool="+pname, func(b *testing.B) {
					k, err := wardpool.NewKeeper(wardpool.Config[int]{
						Limits: pool.Limits{Size: n, Idle: n},
						Dial:   intDial(),
						Close:  intClose,
					})
					if err != nil {
						b.Fatal(err)
					}
					defer k.Close(ctx)
					fillKeeper(b, k, n)
					if lentAll {
						held := make([]wardpool.Loan[int], 0, n-1)
						for range n - 1 {
							l, err := k.Acquire(ctx)
							if err != nil {
								b.Fatal(err)
							}
							held = append(held, l)
						}
						defer func() {
							for _, l := range held {
								l.Release()
							}
						}()
					}
					runtime.GC() // the fill's garbage, not the ops'
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						l, err := k.Acquire(ctx)
						if err != nil {
							b.Fatal(err)
						}
						l.Release()
					}
					b.StopTimer() // the deferred releases and Close are not the op
				})
			}
			b.Run(name+"/pool=puddle", func(b *testing.B) {
				p := newPuddle(b, n)
				warmPuddle(b, p, n)
				if lentAll {
					held := make([]*puddle.Resource[*thing], 0, n-1)
					for range n - 1 {
						r, err := p.Acquire(ctx)
						if err != nil {
							b.Fatal(err)
						}
						held = append(held, r)
					}
					defer func() {
						for _, r := range held {
							r.Release()
						}
					}()
				}
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					r, err := p.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					r.Release()
				}
				b.StopTimer()
			})
		}
	}
}

// BenchmarkScaleWaiters is a pool of one resource and w goroutines, each
// acquiring and releasing it in a loop. The benchmark holds the resource
// until all w are queued behind it, then lets go: from then on one holds it
// and the other w-1 wait, so every release hands it to the oldest of w-1
// queued callers and every acquire joins the back of the queue. An op is
// one loan. (Without that start, two goroutines on two CPUs can run the
// whole loop before the scheduler starts the others: nobody queues.) The Keeper's queue is a FIFO ring whose push, pop
// and removal of a cancelled waiter are O(1), so its part should stay flat;
// what grows with w is the Go scheduler's (more goroutines, colder
// stacks).
func BenchmarkScaleWaiters(b *testing.B) {
	ctx := context.Background()
	for _, w := range []int{2, 101, 10_001} {
		name := fmt.Sprintf("waiters=%d", w-1)
		// run starts w goroutines doing op b.N times in all, while the
		// resource is held; queued reports how many are waiting, given how
		// many goroutines have started; release lets the held resource go
		// once all w are.
		run := func(b *testing.B, op func() error, queued func(started int) int, release func()) {
			b.ReportAllocs()
			var next, started atomic.Int64
			var failed atomic.Pointer[error]
			var wg sync.WaitGroup
			for range w {
				wg.Go(func() {
					started.Add(1)
					for next.Add(1) <= int64(b.N) {
						if err := op(); err != nil {
							e := err // only this copy escapes, not every op's err
							failed.CompareAndSwap(nil, &e)
							return
						}
					}
				})
			}
			// Each goroutine takes a ticket before it acquires, so with
			// fewer ops than goroutines only b.N of them queue.
			for queued(int(started.Load())) < min(w, b.N) {
				runtime.Gosched()
			}
			b.ResetTimer()
			release()
			wg.Wait()
			b.StopTimer()
			if e := failed.Load(); e != nil {
				b.Fatal(*e)
			}
		}
		b.Run(name+"/pool=wardpool", func(b *testing.B) {
			k, err := wardpool.NewKeeper(wardpool.Config[int]{
				Limits: pool.Limits{Size: 1, Idle: 1},
				Dial:   intDial(),
				Close:  intClose,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close(ctx)
			held, err := k.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			run(b, func() error {
				l, err := k.Acquire(ctx)
				if err != nil {
					return err
				}
				l.Release()
				return nil
			}, func(int) int { return k.Stats().Waiting }, held.Release)
		})
		b.Run(name+"/pool=puddle", func(b *testing.B) {
			p := newPuddle(b, 1)
			held, err := p.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			// puddle does not count its waiters: once every goroutine has
			// started, give them time to reach the queue.
			queued := func(started int) int {
				if started < w {
					return 0
				}
				for range 1000 {
					runtime.Gosched()
				}
				return w
			}
			run(b, func() error {
				r, err := p.Acquire(ctx)
				if err != nil {
					return err
				}
				r.Release()
				return nil
			}, queued, held.Release)
		})
	}
}

// BenchmarkScaleEvict calls pool.Pool.Evict on a pool of n idle
// resources, given back a millisecond apart, with Keep of n milliseconds:
//
//   - "due=0": at an instant when none is past Keep; Evict's answer is
//     nil, and its cost should not depend on n (pool.Pool.Evict's doc
//     promises constant time);
//   - "due=1": each op moves the clock a millisecond on, so the oldest
//     resource is past Keep, evicts it, and puts a fresh one in its place
//     (Made without Make, then Give): the pool stays at n idle. The op
//     includes that Made and Give.
//
// Each eviction returns a new slice of what it retired, as the Keeper's
// timer takes it.
func BenchmarkScaleEvict(b *testing.B) {
	const step = time.Millisecond
	t0 := time.Unix(1_700_000_000, 0)
	for _, n := range scaleSizes {
		for _, due := range []int{0, 1} {
			b.Run(fmt.Sprintf("due=%d/idle=%d/pool=pool.Pool", due, n), func(b *testing.B) {
				keep := time.Duration(n) * step
				p, err := pool.New[int](pool.Limits{Size: n, Keep: keep}, ward.Ward{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if !p.Made(i+1, 0, t0, 0) {
						b.Fatal("Made refused")
					}
				}
				for i := range n {
					if !p.Give(i+1, t0.Add(time.Duration(i)*step)) {
						b.Fatal("Give refused")
					}
				}
				// The newest was given back at t0 + (n-1) step; the oldest
				// is due after t0 + keep.
				now := t0.Add(time.Duration(n-1) * step)
				item := n + 1
				evicted := 0
				var gone []int
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if due == 0 {
						gone = p.Evict(now)
						evicted += len(gone)
						continue
					}
					now = now.Add(step)
					gone = p.Evict(now)
					evicted += len(gone)
					for range gone {
						p.Made(item, 0, now, 0)
						p.Give(item, now)
						item++
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(evicted)/float64(b.N), "evicted/op")
				if p.Books().Idle != n {
					b.Fatalf("idle %d, want %d", p.Books().Idle, n)
				}
			})
		}
	}
}

// heapNow returns the bytes of heap objects and of goroutine stacks in use,
// after two collections.
func heapNow() (heap, stacks uint64) {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.StackInuse
}

// BenchmarkScaleMemory measures, with runtime.MemStats, the bytes a pool
// holds per idle resource and per queued waiter, and reports them as
// metrics ("B/idle"; "heap-B/waiter" and "stack-B/waiter"); ns/op means
// nothing here. Run it with -benchtime 1x.
//
//   - idle: a pool.Pool[int] and a wardpool.Keeper[int] holding n idle
//     resources, heap after building them minus heap before: a resource
//     that is an int costs nothing of its own, so this is the pools'
//     overhead per resource. puddle holds *thing (8 bytes each, which are
//     subtracted).
//   - waiter: a Keeper of one resource, lent, and w goroutines queued in
//     Acquire, against w goroutines blocked on a channel with the same
//     context: the difference, heap and stacks apart, is what the Keeper
//     spends per waiter beyond the goroutine itself (a deeper call stack
//     shows as stack growth). (puddle has
//     no count of its waiters to tell when all w are queued, so it is not
//     measured here.)
func BenchmarkScaleMemory(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("idle=%d/pool=pool.Pool", n), func(b *testing.B) {
			for range b.N {
				h0, _ := heapNow()
				p, err := pool.New[int](pool.Limits{Size: n}, ward.Ward{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					p.Made(i+1, 0, time.Unix(0, 0), 0)
				}
				for i := range n {
					p.Give(i+1, time.Unix(0, 0))
				}
				h1, _ := heapNow()
				b.ReportMetric(float64(int64(h1)-int64(h0))/float64(n), "B/idle")
				runtime.KeepAlive(p)
			}
		})
		b.Run(fmt.Sprintf("idle=%d/pool=wardpool", n), func(b *testing.B) {
			for range b.N {
				h0, _ := heapNow()
				k, err := wardpool.NewKeeper(wardpool.Config[int]{
					Limits: pool.Limits{Size: n, Idle: n},
					Dial:   intDial(),
					Close:  intClose,
				})
				if err != nil {
					b.Fatal(err)
				}
				fillKeeper(b, k, n)
				h1, _ := heapNow()
				b.ReportMetric(float64(int64(h1)-int64(h0))/float64(n), "B/idle")
				k.Close(ctx)
			}
		})
		b.Run(fmt.Sprintf("idle=%d/pool=puddle", n), func(b *testing.B) {
			for range b.N {
				h0, _ := heapNow()
				p, err := puddle.NewPool(&puddle.Config[*thing]{
					Constructor: newThing,
					Destructor:  func(*thing) {},
					MaxSize:     int32(n),
				})
				if err != nil {
					b.Fatal(err)
				}
				warmPuddle(b, p, n)
				h1, _ := heapNow()
				b.ReportMetric(float64(int64(h1)-int64(h0))/float64(n)-8, "B/idle")
				p.Close()
			}
		})
	}
	for _, w := range []int{100, 10_000} {
		// parked is the heap and stacks of w goroutines blocked in block,
		// measured after they all are.
		parked := func(b *testing.B, block func(ctx context.Context), queued func() int) (heap, stacks int64) {
			ctx, cancel := context.WithCancel(ctx)
			h0, s0 := heapNow()
			var wg sync.WaitGroup
			for range w {
				wg.Go(func() { block(ctx) })
			}
			for queued() < w {
				runtime.Gosched()
			}
			h1, s1 := heapNow()
			cancel()
			wg.Wait()
			return int64(h1) - int64(h0), int64(s1) - int64(s0)
		}
		b.Run(fmt.Sprintf("waiters=%d", w), func(b *testing.B) {
			for range b.N {
				var blocked atomic.Int64
				gate := make(chan struct{})
				onChannel := func(ctx context.Context) {
					blocked.Add(1)
					select {
					case <-gate:
					case <-ctx.Done():
					}
				}
				// The runtime keeps the structs and stacks of ended
				// goroutines for reuse: a first round makes them, so that
				// the two measured rounds start alike.
				parked(b, onChannel, func() int { return int(blocked.Load()) })
				blocked.Store(0)
				bh, bs := parked(b, onChannel, func() int { return int(blocked.Load()) })

				k, err := wardpool.NewKeeper(wardpool.Config[int]{
					Limits: pool.Limits{Size: 1, Idle: 1},
					Dial:   intDial(),
					Close:  intClose,
				})
				if err != nil {
					b.Fatal(err)
				}
				l, err := k.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				kh, ks := parked(b, func(ctx context.Context) {
					if l, err := k.Acquire(ctx); err == nil {
						l.Release()
					}
				}, func() int { return k.Stats().Waiting })
				l.Release()
				k.Close(ctx)

				b.ReportMetric(float64(kh-bh)/float64(w), "heap-B/waiter")
				b.ReportMetric(float64(ks-bs)/float64(w), "stack-B/waiter")
				b.ReportMetric(float64(bh)/float64(w), "goroutine-heap-B")
				b.ReportMetric(float64(bs)/float64(w), "goroutine-stack-B")
			}
		})
	}
}
