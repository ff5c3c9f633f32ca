package pgxward

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

// poolTracer records the pgxpool tracer calls it gets. It is a
// pgx.QueryTracer too, as ConnConfig.Tracer must be.
type poolTracer struct {
	mu     sync.Mutex
	calls  []string
	pools  []*pgxpool.Pool
	ends   []pgxpool.TraceAcquireEndData
	ctxVal []any
}

type traceKey struct{}

func (tr *poolTracer) note(call string, pp *pgxpool.Pool) {
	tr.calls = append(tr.calls, call)
	tr.pools = append(tr.pools, pp)
}

func (tr *poolTracer) TraceAcquireStart(ctx context.Context, pp *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.note("start", pp)
	return context.WithValue(ctx, traceKey{}, "from start")
}

func (tr *poolTracer) TraceAcquireEnd(ctx context.Context, pp *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.note("end", pp)
	tr.ends = append(tr.ends, d)
	tr.ctxVal = append(tr.ctxVal, ctx.Value(traceKey{}))
}

func (tr *poolTracer) TraceRelease(pp *pgxpool.Pool, _ pgxpool.TraceReleaseData) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.note("release", pp)
}

func (tr *poolTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (tr *poolTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestPgxpoolTracers: an AcquireTracer and ReleaseTracer on
// ConnConfig.Tracer are called as pgxpool calls them: start and end around
// each Acquire (the end with start's context, the connection or the
// error), release on each Release, all given the same non-nil stand-in
// pool, which leads back to the Pool.
func TestPgxpoolTracers(t *testing.T) {
	tr := &poolTracer{}
	p := newPool(t, func(c *Config) { c.MaxConns = 1; c.ConnConfig.Tracer = tr })
	ctx := ctxT(t)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.Conn()
	c.Release()
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	held, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire from a full pool: %v", err)
	}
	held.Release()

	tr.mu.Lock()
	defer tr.mu.Unlock()
	want := "start end release start end start end release"
	if got := strings.Join(tr.calls, " "); got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i, pp := range tr.pools {
		if pp == nil || pp != tr.pools[0] {
			t.Fatalf("call %d got pool %p, want the one stand-in", i, pp)
		}
	}
	if FromPgxpool(tr.pools[0]) != p {
		t.Error("FromPgxpool does not lead back to the Pool")
	}
	if tr.ends[0].Conn != conn || tr.ends[0].Err != nil || tr.ends[2].Conn != nil || !errors.Is(tr.ends[2].Err, context.DeadlineExceeded) {
		t.Errorf("end data: %+v", tr.ends)
	}
	for i, v := range tr.ctxVal {
		if v != "from start" {
			t.Errorf("end %d did not get start's context", i)
		}
	}
	if got := tr.pools[0].Config().ConnConfig.Database; got != p.Config().ConnConfig.Database {
		t.Errorf("stand-in's database %q", got)
	}
}

// TestBeforeAcquire: pgxpool's older hook refuses a connection, which is
// destroyed and replaced, as with PrepareConn returning false.
func TestBeforeAcquire(t *testing.T) {
	var mu sync.Mutex
	refused := map[uint32]bool{}
	p := newPool(t, func(c *Config) {
		c.BeforeAcquire = func(_ context.Context, conn *pgx.Conn) bool {
			mu.Lock()
			defer mu.Unlock()
			pid := conn.PgConn().PID()
			if len(refused) == 0 {
				refused[pid] = true
				return false
			}
			return !refused[pid]
		}
	})
	c, err := p.Acquire(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || refused[c.Conn().PgConn().PID()] {
		t.Errorf("BeforeAcquire false did not replace the connection: refused %v", refused)
	}
	if s := p.Stat(); s.WardStats().Dropped != 1 || s.NewConnsCount() != 2 {
		t.Errorf("dropped %d, new %d", s.WardStats().Dropped, s.NewConnsCount())
	}
}

// TestAcquireErrorSaysWhy: a timed-out acquire from a full pool still
// satisfies errors.Is(err, context.DeadlineExceeded), and says how many
// connections were busy, how many callers waited and how many loans were
// past LeakAfter.
func TestAcquireErrorSaysWhy(t *testing.T) {
	p := newPool(t, func(c *Config) {
		c.MaxConns = 2
		c.LeakAfter = time.Millisecond
		c.OnLeak = func(Leak) {}
	})
	ctx := ctxT(t)
	a, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	clocktest.Eventually(t, "two loans past LeakAfter", func() bool { return p.Leaked() == 2 })
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(short)
	var ae *AcquireError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
		t.Fatalf("err %v (%T), want an *AcquireError wrapping DeadlineExceeded", err, err)
	}
	if ae.Busy != 2 || ae.Size != 2 || ae.Leaked != 2 || ae.LastDialError != nil {
		t.Errorf("%+v", ae)
	}
	if msg := err.Error(); !strings.Contains(msg, "2 of 2 resources busy") || !strings.Contains(msg, "2 loans held longer than LeakAfter") {
		t.Errorf("message %q", msg)
	}
}

// TestStatsAndLimits: the Pool is a metrics source as it is.
func TestStatsAndLimits(t *testing.T) {
	p := newPool(t, func(c *Config) { c.MaxConns = 3 })
	if err := p.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if s, l := p.WardStats(), p.Limits(); s.Acquires != 1 || s.Made != 1 || l.Size != 3 {
		t.Errorf("stats %+v, limits %+v", s, l)
	}
	var _ interface {
		WardStats() wardpool.Stats
		Limits() pool.Limits
		Leaked() int
	} = p
}

// nopPoolTracer is a pgxpool tracer that does nothing: the cost of calling
// one.
type nopPoolTracer struct{}

func (nopPoolTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return ctx
}
func (nopPoolTracer) TraceAcquireEnd(context.Context, *pgxpool.Pool, pgxpool.TraceAcquireEndData) {}
func (nopPoolTracer) TraceRelease(*pgxpool.Pool, pgxpool.TraceReleaseData)                        {}
func (nopPoolTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (nopPoolTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkTracedAcquireRelease: Acquire and Release of an idle connection
// with a no-op AcquireTracer/ReleaseTracer, pgxward beside pgxpool on the
// same server in the same run, and pgxward without a tracer.
func BenchmarkTracedAcquireRelease(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	ctx := context.Background()
	wc, err := ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	wc.MaxConns = 2
	plain, err := NewWithConfig(ctx, wc)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	wc.ConnConfig.Tracer = nopPoolTracer{}
	traced, err := NewWithConfig(ctx, wc)
	if err != nil {
		b.Fatal(err)
	}
	defer traced.Close()
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = 2
	pc.ConnConfig.Tracer = nopPoolTracer{}
	ref, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	// Each loop is written out: a closure returning the release would
	// allocate and hide the pools' own figures.
	b.Run("pgxpool-traced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := ref.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			c.Release()
		}
	})
	for _, p := range []struct {
		name string
		p    *Pool
	}{{"pgxward-traced", traced}, {"pgxward", plain}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := p.p.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
		})
	}
}
