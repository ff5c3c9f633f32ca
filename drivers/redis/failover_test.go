package redisward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/pool"
)

func TestDefaultClassify(t *testing.T) {
	for _, c := range []struct {
		err   error
		want  wardpool.Verdict
		cause string
	}{
		{fakeReply("READONLY You can't write against a read only replica."), wardpool.Reset, "READONLY"},
		{fakeReply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), wardpool.Reset, "MASTERDOWN"},
		{fakeReply("LOADING Redis is loading the dataset in memory"), wardpool.Reset, "LOADING"},
		{fakeReply("LOADING"), wardpool.Reset, "LOADING"},
		{fmt.Errorf("set: %w", fakeReply("READONLY You can't write")), wardpool.Reset, "READONLY"},
		{fakeReply("READONLYISH not the word"), wardpool.Reuse, ""},
		{fakeReply("WRONGTYPE Operation against a key holding the wrong kind of value"), wardpool.Reuse, ""},
		{fakeReply("ERR unknown command"), wardpool.Reuse, ""},
		{fakeReply("ERR max number of clients reached"), wardpool.Full, "maxclients"},
		{fmt.Errorf("dial: %w", fakeReply("ERR max number of clients reached")), wardpool.Full, "maxclients"},
		{errors.New("READONLY but not a reply"), wardpool.Reuse, ""},
		{io.EOF, wardpool.Reuse, ""},
	} {
		v, cause := DefaultClassify(c.err)
		if v != c.want || cause != c.cause {
			t.Errorf("DefaultClassify(%v) = %v, %q; want %v, %q", c.err, v, cause, c.want, c.cause)
		}
	}
}

// TestFailedJudges: failed classifies error replies only, keeps the first
// Reset reply of a loan, and a panicking classifier leaves the connection
// fit.
func TestFailedJudges(t *testing.T) {
	c := &conn{classify: DefaultClassify}
	c.failed(redis.Nil)
	c.failed(fakeReply("WRONGTYPE x"))
	if c.unfit() || c.reset.Load() != nil {
		t.Fatal("a WRONGTYPE reply or redis.Nil marked the connection")
	}
	c.failed(fakeReply("LOADING Redis is loading"))
	c.failed(fakeReply("READONLY You can't write"))
	if n := c.reset.Load(); !c.unfit() || n == nil || n.cause != "LOADING" {
		t.Fatalf("after LOADING then READONLY: unfit %v, note %+v", c.unfit(), n)
	}
	c = &conn{classify: func(error) (wardpool.Verdict, string) { return wardpool.Reset, "any" }}
	c.failed(io.EOF) // not a reply: broken, never classified
	if !c.unfit() || c.reset.Load() != nil {
		t.Fatal("a network error was classified")
	}
	c = &conn{classify: func(error) (wardpool.Verdict, string) { return wardpool.Destroy, "" }}
	c.failed(fakeReply("ERR x"))
	if !c.unfit() || c.reset.Load() != nil {
		t.Fatal("a Destroy verdict did not mark the connection unfit")
	}
	c = &conn{classify: wardpool.ReuseAll}
	c.failed(fakeReply("READONLY You can't write"))
	if !c.unfit() || c.reset.Load() != nil {
		t.Fatal("READONLY under ReuseAll: want destroyed (go-redis's rule), not reset")
	}
}

// demote makes the server s a replica of a primary that is not there: it
// answers READONLY to every write, as a primary a failover demoted does.
func demote(t *testing.T, s *servers.Redis) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	if err := c.ReplicaOf(context.Background(), "127.0.0.1", strconv.Itoa(freePort(t))).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
}

// readOnlyRun runs the demoted-writer case on a server of the test's own:
// two connections lent, two idle, the server demoted, each lent one
// writes and is given back. It returns the pool's figures after.
func readOnlyRun(t *testing.T, classify wardpool.Classifier) wardpool.Stats {
	s := ownRedis(t)
	cfg := FromOptions(&redis.Options{Addr: s.Addr, PoolSize: 4})
	cfg.Classify = classify
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var loans []Loan
	for range 4 {
		l, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		loans = append(loans, l)
	}
	loans[2].Release()
	loans[3].Release()
	demote(t, s)
	for _, l := range loans[:2] {
		err := l.Client().Set(ctx, "k", "v", 0).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
			t.Fatalf("write on a demoted server: %v, want READONLY", err)
		}
		l.Release()
	}
	return p.WardStats()
}

// TestReadOnlyReplyResetsOnce: on a real demoted server, the first
// READONLY resets the pool (the idle connections are closed) and the
// second, of the retired generation, does not.
func TestReadOnlyReplyResetsOnce(t *testing.T) {
	s := readOnlyRun(t, nil)
	if s.Resets != 1 || s.ResetCauses["READONLY"] != 1 || s.Idle != 0 || s.Live != 0 {
		t.Fatalf("resets %d %v, idle %d, live %d; want one READONLY reset and nothing left", s.Resets, s.ResetCauses, s.Idle, s.Live)
	}
}

// TestReadOnlyReplyWithoutClassifier: with resets off, each READONLY
// connection is destroyed (go-redis's rule) and the idle ones, opened to
// the demoted server, stay.
func TestReadOnlyReplyWithoutClassifier(t *testing.T) {
	s := readOnlyRun(t, wardpool.ReuseAll)
	if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Idle: 2, Dropped: 2}, Resets: 0}, wardpool.Stats{Books: pool.Books{Idle: s.Idle, Dropped: s.Dropped}, Resets: s.Resets}); diff != "" {
		t.Fatalf("resets %d, idle %d, dropped %d; want 0, the 2 idle kept, the 2 writers destroyed (-want +got):\n%s", s.Resets, s.Idle, s.Dropped, diff)
	}
}

// TestMovedPrimaryBesideGoRedis: two servers of the test's own; the
// dialer sends new connections to the current primary, as a Sentinel
// lookup would. Eight connections are warm on the first when it is
// demoted (a replica of the second, which becomes the primary); then 32
// writes run one after another. The pool resets at the first READONLY and
// sends that write again on a connection to the new primary: none fails.
// go-redis's client, on the same dialer in the same run with its retries
// off (MaxRetries -1, which the pool's resends would honour too), drops
// each READONLY connection alone and fails once per connection it had.
// Both figures are logged.
func TestMovedPrimaryBesideGoRedis(t *testing.T) {
	a, b := ownRedis(t), ownRedis(t)
	var primary atomic.Value
	primary.Store(a.Addr)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, primary.Load().(string))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: a.Addr})
	defer admin.Close()
	run := func(name string, warm func() error, write func(int) error) int {
		primary.Store(a.Addr)
		if err := admin.ReplicaOf(ctx, "no", "one").Err(); err != nil {
			t.Fatalf("%s: REPLICAOF NO ONE: %v", name, err)
		}
		if err := warm(); err != nil {
			t.Fatalf("%s: warming: %v", name, err)
		}
		// The failover: b is the primary, a its replica (read-only).
		primary.Store(b.Addr)
		if err := admin.ReplicaOf(ctx, "127.0.0.1", strings.TrimPrefix(b.Addr, "127.0.0.1:")).Err(); err != nil {
			t.Fatalf("%s: REPLICAOF: %v", name, err)
		}
		failed := 0
		for i := range 32 {
			if err := write(i); err != nil {
				if !strings.HasPrefix(err.Error(), "READONLY") {
					t.Fatalf("%s: write %d: %v", name, i, err)
				}
				failed++
			}
		}
		return failed
	}

	cfg := FromOptions(&redis.Options{Addr: a.Addr, PoolSize: 8, Dialer: dial})
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	ours := run("redisward", func() error {
		var loans []Loan
		for range 8 {
			l, err := p.Acquire(ctx)
			if err != nil {
				return err
			}
			loans = append(loans, l)
		}
		for _, l := range loans {
			l.Release()
		}
		return nil
	}, func(i int) error { return p.Do(ctx, "set", "k", i).Err() })
	if s := p.WardStats(); ours != 0 || s.Resets != 1 {
		t.Errorf("redisward: %d of 32 writes failed, %d resets; want 0 (the READONLY one sent again) and 1", ours, s.Resets)
	}

	gr := redis.NewClient(&redis.Options{Addr: a.Addr, PoolSize: 8, MinIdleConns: 0, Dialer: dial, MaxRetries: -1})
	defer gr.Close()
	theirs := run("go-redis", func() error {
		var conns []*redis.Conn
		for range 8 {
			c := gr.Conn()
			if err := c.Ping(ctx).Err(); err != nil {
				return err
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			_ = c.Close()
		}
		return nil
	}, func(i int) error { return gr.Set(ctx, "k", i, 0).Err() })
	t.Logf("writes failed of 32 after the primary moved, 8 connections warm: redisward %d, go-redis %d", ours, theirs)
}
