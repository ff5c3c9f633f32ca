package pgxward

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestAcquireErrorOnAHangingServer: against a server that accepts and never
// answers (a listener on loopback that reads nothing), an acquire whose
// context ends is pgxward's AcquireError (the Keeper's), saying what the
// pool was doing. No PostgreSQL is needed.
func TestAcquireErrorOnAHangingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := ParseConfig("postgres://app@" + ln.Addr().String() + "/app?sslmode=disable&pool_max_conns=2&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx)
	var ae *AcquireError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
		t.Fatalf("Acquire = %v (%T), want an *AcquireError wrapping DeadlineExceeded", err, err)
	}
	if ae.Busy != 1 || ae.Size != 2 || ae.LastDialError != nil {
		t.Errorf("%+v", ae)
	}
	if !strings.Contains(err.Error(), "1 of 2 resources busy") {
		t.Errorf("message %q", err)
	}
}

// wardTracer is a tracer in this package's form: it records the pools it
// is given.
type wardTracer struct {
	nopPoolTracer // the query tracer (its pgxpool form is shadowed below)
	mu            sync.Mutex
	pools         []*Pool
	errs          []error
}

func (w *wardTracer) TraceAcquireStart(ctx context.Context, p *Pool, _ TraceAcquireStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pools = append(w.pools, p)
	return ctx
}

func (w *wardTracer) TraceAcquireEnd(_ context.Context, p *Pool, d TraceAcquireEndData) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pools = append(w.pools, p)
	w.errs = append(w.errs, d.Err)
}

func (w *wardTracer) TraceRelease(p *Pool, _ TraceReleaseData) {}

// TestWardTracerGetsThePool: a tracer in this package's form is given the
// *Pool itself, and is preferred to its pgxpool form; no stand-in pool is
// built. No PostgreSQL is needed: the acquire times out against a server
// that never answers.
func TestWardTracerGetsThePool(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := ParseConfig("postgres://app@" + ln.Addr().String() + "/app?sslmode=disable&pool_max_conns=1&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	tr := &wardTracer{}
	c.ConnConfig.Tracer = tr
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.pools) != 2 || tr.pools[0] != p || tr.pools[1] != p || len(tr.errs) != 1 || tr.errs[0] != err || err == nil {
		t.Errorf("pools %v (want [%p %p]), errs %v, acquire %v", tr.pools, p, p, tr.errs, err)
	}
	if p.traced != nil {
		t.Error("a stand-in pgxpool.Pool was built for a tracer in this package's form")
	}
}

// TestErrorsNameThePool: an acquire the pool refuses names the pool,
// Config.Name or "pgxward-N@host:port", and errors.Is still finds the
// sentinel behind the name. No PostgreSQL is needed.
func TestErrorsNameThePool(t *testing.T) {
	c, err := ParseConfig("postgres://app@127.0.0.1:1/app?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Name(); !strings.HasPrefix(n, "pgxward-") || !strings.HasSuffix(n, "@127.0.0.1:1") {
		t.Errorf("default name %q, want pgxward-N@127.0.0.1:1", n)
	}
	p.Close()
	c.Name = "orders"
	p, err = NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, err = p.Acquire(context.Background())
	var pe *PoolError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &pe) || pe.Pool != "orders" || err.Error() != "orders: wardpool: pool closed" {
		t.Errorf("Acquire after Close = %q (%T)", err, err)
	}
}

// TestDialErrorsNameThePool: with nothing listening at the address, every
// method that acquires fails with a *PoolError naming the pool, through
// which errors.As still finds pgx's *pgconn.ConnectError. No PostgreSQL is
// needed.
func TestDialErrorsNameThePool(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connection refused from now on
	c, err := ParseConfig("postgres://app@" + addr + "/app?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	c.Name = "orders"
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		var pe *PoolError
		var ce *pgconn.ConnectError
		if !errors.As(err, &pe) || pe.Pool != "orders" || !strings.HasPrefix(err.Error(), "orders: pgxward: connect: ") {
			t.Errorf("%s = %v (%T), want a *PoolError naming orders", what, err, err)
		}
		if !errors.As(err, &ce) {
			t.Errorf("%s = %v does not reach pgx's *pgconn.ConnectError", what, err)
		}
	}
	_, err = p.Acquire(ctx)
	check("Acquire", err)
	_, err = p.Exec(ctx, "SELECT 1")
	check("Exec", err)
	_, err = p.Query(ctx, "SELECT 1")
	check("Query", err)
	var n int
	check("QueryRow", p.QueryRow(ctx, "SELECT 1").Scan(&n))
	_, err = p.Begin(ctx)
	check("Begin", err)
	check("Ping", p.Ping(ctx))
}

// TestPrepareConnRefusalsNameThePool: when PrepareConn refuses every
// connection it is offered, the acquire's error names the pool.
func TestPrepareConnRefusalsNameThePool(t *testing.T) {
	p := newPool(t, func(c *Config) {
		c.Name = "orders"
		c.MaxConns = 1
		c.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { return false, nil }
	})
	_, err := p.Acquire(context.Background())
	var pe *PoolError
	if !errors.Is(err, errTooManyTries) || !errors.As(err, &pe) || pe.Pool != "orders" {
		t.Fatalf("Acquire = %v (%T), want errTooManyTries named orders", err, err)
	}
}
