package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/puddle/v2"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// The benchmarks run the same work on three pools in one process, so that
// their figures come from the same machine at the same moment:
//
//   - wardpool: wardpool.Keeper with the default (cached) clock, as configured
//     by default and in the configurations of keepers (below),
//   - puddle:   github.com/jackc/puddle/v2, the pool under pgxpool,
//   - sql:      database/sql's connection pool over a no-op driver.
//
// Each resource is a pointer to a small struct; making and closing one costs
// nothing, so what is measured is the pools' own bookkeeping.

type thing struct{ id int64 }

var made atomic.Int64

func newThing(context.Context) (*thing, error) { return &thing{id: made.Add(1)}, nil }
func closeThing(*thing) error                  { return nil }

// Pools of each kind, n resources at most.

// keeperVariant is one configuration of the Keeper the benchmarks measure.
type keeperVariant struct {
	name string
	// config returns the Config for a pool of n slots (Dial and Close are
	// filled in by newKeeperWith), or ok false when the variant cannot be
	// built on n slots.
	config func(n int) (cfg wardpool.Config[*thing], ok bool)
}

// keepers are the Keepers measured beside puddle and database/sql: as
// configured by default, and in each of the configurations production
// services turn on: an Idle ceiling below Size, the leak watch, a
// shedder, a limiter and a recorder. Every loan goes through the mutex
// and the Pool in each (before 2026-12-03 a lock-free lane served the
// first rows); the rows say what each costs.
//
//   - wardpool:        Limits{Size: n, Idle: n}, nothing else;
//   - wardpool-idle:   an Idle ceiling one below Size (named
//     wardpool-locked in the sets measured before the lane);
//   - wardpool-leak:   LeakAfter of a minute: the leak watch on, each
//     acquire's stack recorded (never reported: no loan is held that long);
//   - wardpool-shed:   a ward with a Shedder (ward.DefaultShed) and a CPU
//     reading that is always 0, so it never sheds: its cost, not its effect;
//   - wardpool-limit:  a ward with a Limiter whose limit starts and stays
//     at n (Initial = Max = n, only failures counted as overload), so it
//     never makes a caller wait that the pool alone would not: again its
//     cost;
//   - wardpool-record: a Recorder (record.New(0)) on the default
//     configuration, two steps a loan: the price of recording is the
//     ratio of its row to wardpool's.
var keepers = []keeperVariant{
	{"wardpool", func(n int) (wardpool.Config[*thing], bool) {
		return wardpool.Config[*thing]{Limits: pool.Limits{Size: n, Idle: n}}, true
	}},
	{"wardpool-idle", func(n int) (wardpool.Config[*thing], bool) {
		// With one slot an Idle of 0 would mean no ceiling at all.
		return wardpool.Config[*thing]{Limits: pool.Limits{Size: n, Idle: n - 1}}, n > 1
	}},
	{"wardpool-leak", func(n int) (wardpool.Config[*thing], bool) {
		return wardpool.Config[*thing]{Limits: pool.Limits{Size: n, Idle: n}, LeakAfter: time.Minute}, true
	}},
	{"wardpool-shed", func(n int) (wardpool.Config[*thing], bool) {
		return wardpool.Config[*thing]{
			Limits: pool.Limits{Size: n, Idle: n},
			Ward:   ward.Ward{Shedder: ward.NewShedder(ward.DefaultShed, time.Now())},
			CPU:    func() int { return 0 },
		}, true
	}},
	{"wardpool-record", func(n int) (wardpool.Config[*thing], bool) {
		return wardpool.Config[*thing]{Limits: pool.Limits{Size: n, Idle: n}, Recorder: record.New(0)}, true
	}},
	{"wardpool-limit", func(n int) (wardpool.Config[*thing], bool) {
		a := ward.DefaultAimd
		a.Initial, a.Max = n, n
		a.Slow = 0 // only failures lower the limit: a loan held long is not one
		return wardpool.Config[*thing]{
			Limits: pool.Limits{Size: n, Idle: n},
			Ward:   ward.Ward{Limiter: ward.NewLimiter(a)},
		}, true
	}},
}

// newKeeperWith builds a Keeper from cfg with the benchmarks' Dial and
// Close, closed when b ends.
func newKeeperWith(b *testing.B, cfg wardpool.Config[*thing]) *wardpool.Keeper[*thing] {
	cfg.Dial, cfg.Close = newThing, closeThing
	k, err := wardpool.NewKeeper(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close(context.Background()) })
	return k
}

// eachKeeper runs f as a sub-benchmark "pool=<variant>" for every variant
// that can be built on n slots, with a Keeper warmed to warm idle.
func eachKeeper(b *testing.B, prefix string, n, warm int, f func(b *testing.B, k *wardpool.Keeper[*thing])) {
	for _, v := range keepers {
		if _, ok := v.config(n); !ok {
			continue
		}
		b.Run(prefix+"pool="+v.name, func(b *testing.B) {
			// A config each time: the framework runs this more than once,
			// and a Keeper takes its ward's guards as its own.
			cfg, _ := v.config(n)
			k := newKeeperWith(b, cfg)
			warmKeeper(b, k, warm)
			f(b, k)
		})
	}
}

func newPuddle(b *testing.B, n int) *puddle.Pool[*thing] {
	p, err := puddle.NewPool(&puddle.Config[*thing]{
		Constructor: newThing,
		Destructor:  func(t *thing) { closeThing(t) },
		MaxSize:     int32(n),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}

func newSQL(b *testing.B, n int) *sql.DB {
	db := sql.OpenDB(nopConnector{})
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	b.Cleanup(func() { db.Close() })
	return db
}

// warm makes every pool hold n idle resources before timing starts.
func warmKeeper(b *testing.B, k *wardpool.Keeper[*thing], n int) {
	var ls []wardpool.Loan[*thing]
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
}

func warmPuddle(b *testing.B, p *puddle.Pool[*thing], n int) {
	var rs []*puddle.Resource[*thing]
	for range n {
		r, err := p.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		r.Release()
	}
}

func warmSQL(b *testing.B, db *sql.DB, n int) {
	var cs []*sql.Conn
	for range n {
		c, err := db.Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		c.Close()
	}
}

// BenchmarkUncontended is one goroutine acquiring and releasing from a warm
// pool of 10.
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	eachKeeper(b, "", 10, 1, func(b *testing.B, k *wardpool.Keeper[*thing]) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := k.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			l.Release()
		}
	})
	b.Run("pool=puddle", func(b *testing.B) {
		p := newPuddle(b, 10)
		warmPuddle(b, p, 1)
		b.ReportAllocs()
		for b.Loop() {
			r, err := p.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
	b.Run("pool=sql", func(b *testing.B) {
		db := newSQL(b, 10)
		warmSQL(b, db, 1)
		b.ReportAllocs()
		for b.Loop() {
			c, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
}

// BenchmarkContended is RunParallel with SetParallelism(16) (32 goroutines
// on this 2-core machine) acquiring and releasing from a warm pool of 4, and
// of 64.
func BenchmarkContended(b *testing.B) {
	for _, n := range []int{4, 64} {
		parallel(b, fmt.Sprintf("size=%d/", n), n, 16, nil)
	}
}

// BenchmarkSaturated is the saturated queue: 32 goroutines (SetParallelism
// 16 on 2 cores) on a pool of 4, each yielding its processor once while it
// holds a resource (runtime.Gosched), so that the others run, find all four
// out and queue. Nearly every acquire is then a park and every release a
// wake of the oldest waiter, in every pool, whatever the OS scheduler does;
// BenchmarkContended/size=4 drifts between that regime and none.
func BenchmarkSaturated(b *testing.B) {
	parallel(b, "", 4, 16, runtime.Gosched)
}

// parallel runs RunParallel with SetParallelism(par) over a warm pool of n
// in every pool, each goroutine acquiring, calling hold (when set) and
// releasing in a loop.
func parallel(b *testing.B, prefix string, n, par int, hold func()) {
	ctx := context.Background()
	if hold == nil {
		hold = func() {}
	}
	eachKeeper(b, prefix, n, n, func(b *testing.B, k *wardpool.Keeper[*thing]) {
		b.ReportAllocs()
		b.SetParallelism(par)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l, err := k.Acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				hold()
				l.Release()
			}
		})
	})
	b.Run(prefix+"pool=puddle", func(b *testing.B) {
		p := newPuddle(b, n)
		warmPuddle(b, p, n)
		b.ReportAllocs()
		b.SetParallelism(par)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, err := p.Acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				hold()
				r.Release()
			}
		})
	})
	b.Run(prefix+"pool=sql", func(b *testing.B) {
		db := newSQL(b, n)
		warmSQL(b, db, n)
		b.ReportAllocs()
		b.SetParallelism(par)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c, err := db.Conn(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				hold()
				c.Close()
			}
		})
	})
}

// BenchmarkHandoff measures a release to a caller blocked waiting: one slot,
// and two goroutines that each acquire, and release, in a loop. Every
// release finds the other goroutine waiting (or about to), so each op is a
// handoff and a wake-up.
func BenchmarkHandoff(b *testing.B) {
	ctx := context.Background()
	pingPong := func(b *testing.B, op func() error) {
		b.ReportAllocs()
		var wg sync.WaitGroup
		var failed atomic.Value
		half := b.N / 2
		b.ResetTimer()
		for g := range 2 {
			n := half
			if g == 0 {
				n = b.N - half
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					if err := op(); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, ok := failed.Load().(error); ok {
			b.Fatal(err)
		}
	}
	eachKeeper(b, "", 1, 1, func(b *testing.B, k *wardpool.Keeper[*thing]) {
		pingPong(b, func() error {
			l, err := k.Acquire(ctx)
			if err != nil {
				return err
			}
			l.Release()
			return nil
		})
	})
	b.Run("pool=puddle", func(b *testing.B) {
		p := newPuddle(b, 1)
		warmPuddle(b, p, 1)
		pingPong(b, func() error {
			r, err := p.Acquire(ctx)
			if err != nil {
				return err
			}
			r.Release()
			return nil
		})
	})
	b.Run("pool=sql", func(b *testing.B) {
		db := newSQL(b, 1)
		warmSQL(b, db, 1)
		pingPong(b, func() error {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			return c.Close()
		})
	})
}

// A database/sql driver whose connections do nothing.

type nopConnector struct{}

func (nopConnector) Connect(context.Context) (driver.Conn, error) { return nopConn{}, nil }
func (nopConnector) Driver() driver.Driver                        { return nopDriver{} }

type nopDriver struct{}

func (nopDriver) Open(string) (driver.Conn, error) { return nopConn{}, nil }

type nopConn struct{}

var errNop = errors.New("nop driver: not supported")

func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, errNop }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, errNop }
