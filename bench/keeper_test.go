package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/puddle/v2"

	"github.com/wardpool/wardpool/pool"
)

// The benchmarks run the same work on three pools in one process, so that
// their figures come from the same machine at the same moment:
//
//   - wardpool: pool.Keeper with the default (cached) clock,
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

func newKeeper(b *testing.B, n int) *pool.Keeper[*thing] {
	return newKeeperIdle(b, n, n)
}

// keepers are the two Keepers measured on n slots: as configured by
// default, and with the hot slots shut.
func keepers(n int) []struct {
	name string
	idle int
} {
	return []struct {
		name string
		idle int
	}{{"wardpool", n}, {"wardpool-locked", n - 1}}
}

// newKeeperIdle is newKeeper with an Idle ceiling of idle. Below n, it shuts
// the Keeper's hot slots (see pool/hot.go): every acquire and release goes
// through the mutex, as with LeakAfter or a ward with a shedder or limiter.
func newKeeperIdle(b *testing.B, n, idle int) *pool.Keeper[*thing] {
	k, err := pool.NewKeeper(pool.Config[*thing]{
		Limits: pool.Limits{Size: n, Idle: idle},
		Dial:   newThing,
		Close:  closeThing,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close(context.Background()) })
	return k
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
func warmKeeper(b *testing.B, k *pool.Keeper[*thing], n int) {
	var ls []pool.Loan[*thing]
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
	for _, v := range keepers(10) {
		b.Run("pool="+v.name, func(b *testing.B) {
			k := newKeeperIdle(b, 10, v.idle)
			warmKeeper(b, k, 1)
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
		ctx := context.Background()
		for _, v := range keepers(n) {
			b.Run(sizeName(n)+"/pool="+v.name, func(b *testing.B) {
				k := newKeeperIdle(b, n, v.idle)
				warmKeeper(b, k, n)
				b.ReportAllocs()
				b.SetParallelism(16)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l, err := k.Acquire(ctx)
						if err != nil {
							b.Error(err)
							return
						}
						l.Release()
					}
				})
			})
		}
		b.Run(sizeName(n)+"/pool=puddle", func(b *testing.B) {
			p := newPuddle(b, n)
			warmPuddle(b, p, n)
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := p.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					r.Release()
				}
			})
		})
		b.Run(sizeName(n)+"/pool=sql", func(b *testing.B) {
			db := newSQL(b, n)
			warmSQL(b, db, n)
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c, err := db.Conn(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					c.Close()
				}
			})
		})
	}
}

func sizeName(n int) string {
	if n == 4 {
		return "size=4"
	}
	return "size=64"
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
	b.Run("pool=wardpool", func(b *testing.B) {
		k := newKeeper(b, 1)
		warmKeeper(b, k, 1)
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
