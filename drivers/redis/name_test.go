package redisward

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/pool"
)

// A pool is named by its Config, or "redisward-N@addr" by default; the name
// is its Keeper's, so the Keeper's errors carry it.
func TestPoolName(t *testing.T) {
	p, err := New(context.Background(), Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if !strings.HasPrefix(p.Name(), "redisward-") || !strings.HasSuffix(p.Name(), "@127.0.0.1:1") {
		t.Fatalf("default Name = %q", p.Name())
	}
	q, err := New(context.Background(), Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true, Name: "sessions"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(context.Background())
	if q.Name() != "sessions" || q.k.Name() != "sessions" {
		t.Fatalf("Name = %q, the Keeper's %q", q.Name(), q.k.Name())
	}
}

// With the server down, every way of reaching it fails with an error that
// names the pool (a *PoolError), and errors.As still finds the dial's
// *net.OpError behind the name: New, Acquire, Process (Do, Client()'s
// commands), Pipelined, and Client().Conn(), which borrows through
// go-redis's own dial.
func TestDialErrorsNameThePool(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	opts := &redis.Options{Addr: addr, DialTimeout: time.Second}
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		var pe *PoolError
		var oe *net.OpError
		if !errors.As(err, &pe) || pe.Pool != "sessions" || !strings.HasPrefix(err.Error(), "sessions: ") {
			t.Errorf("%s: %v (%T), want a *PoolError naming sessions", what, err, err)
		}
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v does not reach the dial's *net.OpError", what, err)
		}
		if _, ok := err.(net.Error); !ok {
			t.Errorf("%s: %T is not a net.Error, as go-redis's dial error is", what, err)
		}
	}
	_, err = New(ctx, Config{Options: opts, Limits: pool.Limits{Size: 1}, Name: "sessions"})
	check("New", err)

	p, err := New(ctx, Config{Options: opts, Limits: pool.Limits{Size: 1}, Name: "sessions", Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	_, err = p.Acquire(ctx)
	check("Acquire", err)
	check("Do", p.Do(ctx, "get", "k").Err())
	check("Client().Get", p.Client().Get(ctx, "k").Err())
	_, err = p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Get(ctx, "k")
		return nil
	})
	check("Pipelined", err)
	cn := p.Client().Conn()
	check("Client().Conn().Ping", cn.Ping(ctx).Err())
	_ = cn.Close()

	// A context's own error stays bare, for callers who compare with ==.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Acquire(cctx); err != context.Canceled {
		t.Errorf("Acquire with a cancelled context = %v (%T), want context.Canceled itself", err, err)
	}
	// ErrClosed after Close, named.
	_ = p.Close(ctx)
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrClosed) || err.Error() != "sessions: wardpool: pool closed" {
		t.Errorf("Acquire after Close = %q", err)
	}
}
