package redisward

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

// newPool returns a pool of at most size connections to the test server,
// closed when the test ends, and a key prefix of the test's own.
func newPool(t *testing.T, size int, edit func(*Config)) (*Pool, string) {
	t.Helper()
	addr := testenv.RedisAddr(t)
	cfg := FromOptions(&redis.Options{Addr: addr, PoolSize: size})
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, "wardpool:test:" + t.Name() + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
}

// admin returns a plain go-redis client for the test to look at and poke
// the server with, closed when the test ends.
func admin(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// clientID returns the server's id of the connection behind l.
func clientID(t *testing.T, l Loan) int64 {
	t.Helper()
	id, err := l.Client().ClientID(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT ID: %v", err)
	}
	return id
}

// kill closes the server side of connection id and waits until the server
// no longer lists it, so that its end of the socket is closed.
func kill(t *testing.T, a *redis.Client, id int64) {
	t.Helper()
	ctx := context.Background()
	n, err := a.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Result()
	if err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID %d: %d %v", id, n, err)
	}
	clocktest.Eventually(t, "the condition", func() bool {
		list, err := a.ClientList(ctx).Result()
		return err == nil && !strings.Contains(list, "id="+strconv.FormatInt(id, 10)+" ")
	})
}

func TestCommands(t *testing.T) {
	p, k := newPool(t, 4, nil)
	ctx := context.Background()
	if err := p.Do(ctx, "SET", k+"a", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Do(ctx, "GET", k+"a").Text(); err != nil || v != "1" {
		t.Fatalf("GET = %q %v", v, err)
	}
	incr := redis.NewIntCmd(ctx, "INCRBY", k+"a", 41)
	if err := p.Process(ctx, incr); err != nil || incr.Val() != 42 {
		t.Fatalf("INCRBY = %d %v", incr.Val(), err)
	}
	// A missing key is redis.Nil, and an error reply is the server's error:
	// neither costs the connection.
	if err := p.Do(ctx, "GET", k+"missing").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET missing = %v, want redis.Nil", err)
	}
	if err := p.Do(ctx, "LPUSH", k+"a", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("LPUSH on a string = %v, want WRONGTYPE", err)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s := p.WardStats()
	if diff := cmp.Diff(pool.Books{Made: 1, Live: 1, Idle: 1}, pool.Books{Made: s.Made, Live: s.Live, Idle: s.Idle}); diff != "" {
		t.Fatalf("after errors that are replies, want one connection made and kept (-want +got):\n%s", diff)
	}
}

func TestPipelines(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	cmds, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, k+"x", "1", 0)
		pipe.Incr(ctx, k+"x")
		pipe.Get(ctx, k+"x")
		return nil
	})
	if err != nil || len(cmds) != 3 || cmds[2].(*redis.StringCmd).Val() != "2" {
		t.Fatalf("Pipelined: %v %v", cmds, err)
	}
	var incr *redis.IntCmd
	cmds, err = p.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, k+"x")
		incr = pipe.Incr(ctx, k+"x")
		return nil
	})
	if err != nil || len(cmds) != 2 || incr.Val() != 4 {
		t.Fatalf("TxPipelined: %v %v (incr %d)", cmds, err, incr.Val())
	}
	// A pipeline with an error reply in it reports it and keeps the connection.
	_, err = p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.LPush(ctx, k+"x", "y")
		pipe.Get(ctx, k+"x")
		return nil
	})
	if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("pipeline with WRONGTYPE: %v", err)
	}
	// Watch: a change made by another connection between WATCH and EXEC
	// fails the transaction.
	err = p.Watch(ctx, func(tx *redis.Tx) error {
		if err := p.Do(ctx, "SET", k+"x", "other").Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, k+"x", "mine", 0)
			return nil
		})
		return err
	}, k+"x")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("Watch with a concurrent change: %v, want TxFailedErr", err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 2, Live: 2}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
			t.Fatalf("want both connections kept (-want +got):\n%s", diff)
		}
	}
}

// TestLoan runs many commands on one lent connection through the full
// redis.Cmdable, including a SELECT that only makes sense on one connection.
func TestLoan(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c redis.Cmdable = l.Client()
	id := clientID(t, l)
	for i := range 5 {
		if err := c.RPush(ctx, k+"list", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.LLen(ctx, k+"list").Val(); n != 5 {
		t.Fatalf("LLEN = %d", n)
	}
	if got := clientID(t, l); got != id {
		t.Fatalf("the loan moved from connection %d to %d", id, got)
	}
	if _, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.LPop(ctx, k+"list")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	l.Release()
	l.Release() // a second end is a no-op
	if l.Valid() {
		t.Fatal("loan still valid after Release")
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Idle: 1}, DoubleReleases: 1}, wardpool.Stats{Books: pool.Books{Idle: s.Idle}, DoubleReleases: s.DoubleReleases}); diff != "" {
			t.Fatalf("stats after a double release (-want +got):\n%s", diff)
		}
	}
	// The next borrower gets the same connection (LIFO, kept).
	l, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := clientID(t, l); got != id {
		t.Fatalf("connection %d not reused (got %d)", id, got)
	}
	l.Destroy()
	if s := p.WardStats(); s.Live != 0 {
		t.Fatalf("Destroy left %d live", s.Live)
	}
}

// TestKilledIdle kills the server side of an idle connection: the next
// command finds it closed before sending anything, and runs on a new one
// without an error. The pool's clock is a fake one, so that how long the
// connection sat idle is what the test says.
func TestKilledIdle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		checkIdle time.Duration
		idle      time.Duration // how long the killed connection sits
	}{
		// The default: a connection idle for more than a millisecond is
		// peeked at before it is lent.
		{"idle-past-default", 0, 2 * time.Millisecond},
		{"idle-past-1s", time.Second, time.Second + time.Millisecond},
		// Negative: every borrow peeks, however recent the last use.
		{"every-borrow", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(time.Unix(1_000_000, 0))
			p, k := newPool(t, 2, func(c *Config) {
				c.CheckIdle = tc.checkIdle
				c.Clock = clock
			})
			a := admin(t)
			ctx := context.Background()
			l, err := p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := clientID(t, l)
			l.Release()
			kill(t, a, id)
			clock.Advance(tc.idle)

			if err := p.Do(ctx, "SET", k+"after", "ok").Err(); err != nil {
				t.Fatalf("the caller after the kill saw %v", err)
			}
			if v := a.Get(ctx, k+"after").Val(); v != "ok" {
				t.Fatalf("SET did not reach the server: %q", v)
			}
			s := p.WardStats()
			if diff := cmp.Diff(pool.Books{Made: 2, Live: 1}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
				t.Fatalf("want the killed connection replaced by one new one (-want +got):\n%s", diff)
			}
			if s.CheckFailures != 1 {
				t.Fatalf("want the peek to find it: %+v", s)
			}
			l, err = p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := clientID(t, l); got == id {
				t.Fatal("still on the killed connection")
			}
			l.Release()
		})
	}
	waitGoroutines(t)
}

// TestRecentNotPeeked checks the rule of Config.CheckIdle on the default: a
// connection back in the pool for no more than a millisecond is lent
// without a look at its socket, one idle for longer is looked at, and a
// negative CheckIdle looks at every borrow. Stats.Checks counts the looks.
func TestRecentNotPeeked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		checkIdle time.Duration
		steps     []time.Duration // the clock moves by each before a GET
		looks     []uint64        // Stats.Checks after each GET
	}{
		{"default", 0,
			[]time.Duration{0, 0, 500 * time.Microsecond, 2 * time.Millisecond, 0, time.Minute},
			[]uint64{0, 0, 0, 1, 1, 2}},
		{"10ms", 10 * time.Millisecond,
			[]time.Duration{0, 5 * time.Millisecond, 11 * time.Millisecond, 0},
			[]uint64{0, 0, 1, 1}},
		{"every-borrow", -1,
			[]time.Duration{0, 0, time.Minute},
			[]uint64{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(time.Unix(1_000_000, 0))
			p, k := newPool(t, 2, func(c *Config) {
				c.CheckIdle = tc.checkIdle
				c.Clock = clock
			})
			ctx := context.Background()
			for i, d := range tc.steps {
				clock.Advance(d)
				if err := p.Do(ctx, "GET", k+"x").Err(); !errors.Is(err, redis.Nil) {
					t.Fatalf("GET %d: %v", i, err)
				}
				if s := p.WardStats(); s.Checks != tc.looks[i] || s.Made != 1 {
					t.Fatalf("after GET %d (clock moved %v): %d looks, %d made; want %d looks, 1 made",
						i, d, s.Checks, s.Made, tc.looks[i])
				}
			}
		})
	}
}

// TestKilledRecently is the price of the rule TestRecentNotPeeked checks: a
// connection the server closes within CheckIdle of its last use is lent
// without a look, so the command sent on it fails with the network error
// (it is not sent again: for all the pool knows it reached the server);
// the connection is dropped, and the next command runs on a new one.
func TestKilledRecently(t *testing.T) {
	clock := clocktest.New(time.Unix(1_000_000, 0))
	p, k := newPool(t, 2, func(c *Config) { c.Clock = clock })
	a := admin(t)
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := clientID(t, l)
	l.Release()
	kill(t, a, id) // the clock does not move: the connection was used just now

	err = p.Do(ctx, "SET", k+"lost", "x").Err()
	if err == nil || redisReply(err) {
		t.Fatalf("SET on the connection killed just after its last use: %v, want a network error", err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Live: 0}, Checks: 0}, wardpool.Stats{Books: pool.Books{Live: s.Live}, Checks: s.Checks}); diff != "" {
			t.Fatalf("want the killed connection dropped, unlooked at (-want +got):\n%s", diff)
		}
	}
	if err := p.Do(ctx, "SET", k+"after", "ok").Err(); err != nil {
		t.Fatalf("the next command: %v", err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 2, Live: 1}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
			t.Fatalf("want one new connection (-want +got):\n%s", diff)
		}
	}
	waitGoroutines(t)
}

// redisReply reports whether err is a reply from the server.
func redisReply(err error) bool {
	_, ok := replyError(err)
	return ok || errors.Is(err, redis.Nil)
}

// TestKilledOnLoan kills a connection while it is lent: the borrower's
// command fails (it was sent), and Release drops the connection instead of
// keeping it.
func TestKilledOnLoan(t *testing.T) {
	p, _ := newPool(t, 2, nil)
	a := admin(t)
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kill(t, a, clientID(t, l))
	if err := l.Client().Ping(ctx).Err(); err == nil {
		t.Fatal("PING on a killed connection succeeded")
	}
	l.Release()
	s := p.WardStats()
	if diff := cmp.Diff(pool.Books{Live: 0, Idle: 0}, pool.Books{Live: s.Live, Idle: s.Idle}); diff != "" {
		t.Fatalf("a broken connection was kept (-want +got):\n%s", diff)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t)
}

func TestContext(t *testing.T) {
	p, k := newPool(t, 1, func(c *Config) { c.Options.ContextTimeoutEnabled = true })
	ctx := context.Background()

	// A cancelled context fails at once and costs nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Do(cctx, "PING").Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	// With the only connection lent, a caller waits until its deadline.
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := p.Do(tctx, "PING").Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a lent connection: %v", err)
	}
	if s := p.WardStats(); s.Canceled == 0 {
		t.Fatalf("the wait was not counted: %+v", s)
	}
	// A waiter is served when the loan comes back.
	done := make(chan error)
	go func() { done <- p.Do(ctx, "PING").Err() }()
	clocktest.Eventually(t, "the condition", func() bool { return p.WardStats().Waiting == 1 })
	l.Release()
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}

	// A deadline that ends a blocking command mid-flight leaves a reply
	// owed on the wire: that connection is not reused.
	tctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Do(tctx, "BLPOP", k+"never", 5).Err(); err == nil {
		t.Fatal("BLPOP past its deadline succeeded")
	}
	s := p.WardStats()
	if s.Live != 0 {
		t.Fatalf("a connection cut mid-command was kept: %+v", s.Books)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestUnhookedBroken: a connection only ever used by Process and the
// pipelines carries no hook (see conn.hooked), so those mark a failure
// themselves: a command or pipeline cut mid-flight by its deadline leaves
// its connection dropped, not kept. A loan from Acquire puts the hook on.
func TestUnhookedBroken(t *testing.T) {
	p, k := newPool(t, 1, func(c *Config) { c.Options.ContextTimeoutEnabled = true })
	ctx := context.Background()
	hooked := func() bool {
		t.Helper()
		l, err := p.k.Acquire(ctx) // the Keeper's: Pool.Acquire would hook it
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release()
		return l.Value().hooked
	}
	for i, cut := range []func(context.Context) error{
		func(ctx context.Context) error { return p.Do(ctx, "BLPOP", k+"never", 5).Err() },
		func(ctx context.Context) error {
			_, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Ping(ctx)
				pipe.BLPop(ctx, 5*time.Second, k+"never")
				return nil
			})
			return err
		},
		func(ctx context.Context) error { return p.Client().BLPop(ctx, 5*time.Second, k+"never").Err() },
	} {
		if err := p.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if hooked() {
			t.Fatalf("%d: a connection used by Process alone carries the hook", i)
		}
		made := p.WardStats().Made
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := cut(tctx)
		cancel()
		if err == nil {
			t.Fatalf("%d: BLPOP past its deadline succeeded", i)
		}
		{
			s := p.WardStats()
			if diff := cmp.Diff(pool.Books{Live: 0, Made: made}, pool.Books{Live: s.Live, Made: s.Made}); diff != "" {
				t.Fatalf("%d: a connection cut mid-command was kept: %+v (-want +got):\n%s", i, s.Books, diff)
			}
		}
	}
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if !hooked() {
		t.Fatal("a connection lent by Acquire carries no hook")
	}
}

func TestCloseWaitsForLoans(t *testing.T) {
	addr := testenv.RedisAddr(t)
	p, err := New(context.Background(), FromOptions(&redis.Options{Addr: addr, PoolSize: 2}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := p.Close(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a loan out: %v, want DeadlineExceeded", err)
	}
	if err := p.Do(ctx, "PING").Err(); !errors.Is(err, wardpool.ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
	if err := p.Client().Get(ctx, "k").Err(); !errors.Is(err, wardpool.ErrClosed) {
		t.Fatalf("Client().Get after Close: %v, want ErrClosed", err)
	}
	if _, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Ping(ctx)
		return nil
	}); !errors.Is(err, wardpool.ErrClosed) {
		t.Fatalf("Pipelined after Close: %v, want ErrClosed", err)
	}
	// The loan still works until it comes home.
	if err := l.Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("the loan after Close: %v", err)
	}
	closed := make(chan error)
	go func() { closed <- p.Close(ctx) }()
	l.Release()
	if err := <-closed; err != nil {
		t.Fatalf("Close after the loan came home: %v", err)
	}
	if s := p.WardStats(); s.Live != 0 {
		t.Fatalf("Close left %d live", s.Live)
	}
	if err := l.Client().Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("the connection after Close: %v, want it closed", err)
	}
}

func TestNewFails(t *testing.T) {
	addr := testenv.RedisAddr(t)
	ctx := context.Background()
	// Nothing listens on port 1.
	if _, err := New(ctx, FromOptions(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 1})); err == nil {
		t.Fatal("New to a closed port succeeded")
	}
	// The handshake runs in the dial: a password the server does not take,
	// or a database it does not have, fails New.
	if _, err := New(ctx, FromOptions(&redis.Options{Addr: addr, PoolSize: 1, Username: "nosuchuser", Password: "wrong"})); err == nil {
		t.Fatal("New with a wrong password succeeded")
	}
	if _, err := New(ctx, FromOptions(&redis.Options{Addr: addr, PoolSize: 1, DB: 100000})); err == nil {
		t.Fatal("New with a missing database succeeded")
	}
	// Lazy: New dials nothing and the first command reports the failure,
	// counted as a failed make.
	p, err := New(ctx, Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(ctx); err == nil {
		t.Fatal("PING to a closed port succeeded")
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Failed: 1, Live: 0}, pool.Books{Failed: s.Failed, Live: s.Live}); diff != "" {
			t.Fatalf("a failed dial should be a failed make (-want +got):\n%s", diff)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrent runs 64 goroutines on 8 connections: every INCR counts,
// and the pool never holds more than 8.
func TestConcurrent(t *testing.T) {
	const workers, each, size = 64, 50, 8
	p, k := newPool(t, size, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	var errs atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				switch (w + i) % 3 {
				case 0:
					err = p.Do(ctx, "INCR", k+"n").Err()
				case 1:
					_, err = p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
						pipe.Incr(ctx, k+"n")
						return nil
					})
				default:
					err = p.AcquireFunc(ctx, func(c *redis.Client) error { return c.Incr(ctx, k+"n").Err() })
				}
				if err != nil {
					errs.Add(1)
				}
				if l := p.WardStats().Live; l > size {
					t.Errorf("%d live, over %d", l, size)
				}
			}
		}()
	}
	wg.Wait()
	if errs.Load() != 0 {
		t.Fatalf("%d commands failed", errs.Load())
	}
	n, err := p.Do(ctx, "GET", k+"n").Int()
	if err != nil || n != workers*each {
		t.Fatalf("counter = %d %v, want %d", n, err, workers*each)
	}
	s := p.WardStats()
	if s.Made > size || s.Live > size {
		t.Fatalf("made %d, live %d, over %d", s.Made, s.Live, size)
	}
}

func TestLeakWatch(t *testing.T) {
	leaks := make(chan Leak, 2)
	p, _ := newPool(t, 2, func(c *Config) {
		c.LeakAfter = 10 * time.Millisecond
		c.OnLeak = func(l Leak) { leaks <- l }
	})
	l, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := <-leaks
	if got.Item != l.Client() || got.Returned || !strings.Contains(string(got.Stack), "TestLeakWatch") {
		t.Fatalf("leak report: %+v", got)
	}
	if n := p.Leaked(); n != 1 {
		t.Errorf("Leaked = %d with the reported loan out, want 1", n)
	}
	l.Release()
	if got := <-leaks; !got.Returned {
		t.Fatalf("follow-up report: %+v", got)
	}
	if n := p.Leaked(); n != 0 {
		t.Errorf("Leaked = %d with nothing out, want 0", n)
	}
}

// waitGoroutines waits for a go-redis goroutine that outlives its client
// by up to a second (the redial prober of a client refused a second
// connection) so that goleak does not see it.
func waitGoroutines(t *testing.T) {
	t.Helper()
	if !servers.WaitRedisProbers(3 * time.Second) {
		t.Fatal("go-redis prober still running after 3s")
	}
}

// TestLoanStateNotInherited: a loan that changed its connection's state
// for the commands after it ends in Destroy, so the next borrower never
// inherits it; go-redis's own Watch and TxPipelined, which end what they
// start, keep the connection.
func TestLoanStateNotInherited(t *testing.T) {
	p, k := newPool(t, 1, nil)
	ctx := context.Background()
	use := func(f func(c *redis.Client) error) {
		t.Helper()
		l, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(l.Client()); err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	made := func() uint64 { return p.WardStats().Made }

	// Kept: go-redis's Watch (WATCH … EXEC, then UNWATCH) and TxPipelined.
	use(func(c *redis.Client) error {
		return c.Watch(ctx, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Set(ctx, k+"w", "1", 0)
				return nil
			})
			return err
		}, k+"w")
	})
	use(func(c *redis.Client) error {
		_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Incr(ctx, k+"n")
			return nil
		})
		return err
	})
	if made() != 1 {
		t.Fatalf("Watch or TxPipelined cost the connection: made %d", made())
	}

	// Dropped: another database, a WATCH left open, a MULTI left open.
	for i, f := range []func(c *redis.Client) error{
		func(c *redis.Client) error { return c.Do(ctx, "SELECT", 1).Err() },
		func(c *redis.Client) error { return c.Do(ctx, "WATCH", k+"w").Err() },
		func(c *redis.Client) error { return c.Do(ctx, "MULTI").Err() },
	} {
		use(f)
		if s := p.WardStats(); s.Live != 0 {
			t.Fatalf("case %d: a connection with state left on it was kept: %+v", i, s.Books)
		}
		// The next borrower is in database 0 with nothing watched.
		if err := p.Do(ctx, "SET", k+"db0", i).Err(); err != nil {
			t.Fatal(err)
		}
		if n := admin(t).Exists(ctx, k+"db0").Val(); n != 1 {
			t.Fatalf("case %d: the next command ran in another database", i)
		}
	}
	// Ended in the same loan: kept.
	before := made()
	use(func(c *redis.Client) error {
		if err := c.Do(ctx, "WATCH", k+"w").Err(); err != nil {
			return err
		}
		return c.Do(ctx, "UNWATCH").Err()
	})
	if made() != before || p.WardStats().Live != 1 {
		t.Fatalf("WATCH then UNWATCH cost the connection: %+v", p.WardStats().Books)
	}
}

// TestMinIdleAndReset: MinIdle connections are opened in the background;
// Reset closes the idle ones, and MinIdle opens new ones.
func TestMinIdleAndReset(t *testing.T) {
	p, _ := newPool(t, 4, func(c *Config) { c.MinIdle = 2 })
	// Two kept warm beside the one New opened (lent while they were made).
	clocktest.Eventually(t, "the condition", func() bool { return p.WardStats().Idle >= 2 })
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := clientID(t, l)
	l.Release()
	before := p.WardStats()
	p.Reset()
	// Two new ones warmed (more when a warm dial was in flight at the
	// Reset: its connection is of the old generation, closed when it
	// lands, and another made).
	clocktest.Eventually(t, "the condition", func() bool { s := p.WardStats(); return s.Idle == 2 && s.Made >= before.Made+2 && s.Dialing == 0 })
	l, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if clientID(t, l) == old {
		t.Fatal("a connection from before Reset was lent")
	}
	l.Release()
}
