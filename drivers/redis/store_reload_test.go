package redisward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/ward/shared"
)

// fakeCluster is a Processor and a Reloader: every command fails with err
// (or succeeds when err is nil), and reloads are counted.
type fakeCluster struct {
	mu      sync.Mutex
	err     error
	reloads int
}

func (f *fakeCluster) Process(_ context.Context, cmd redis.Cmder) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd.SetErr(f.err)
	return f.err
}

func (f *fakeCluster) ReloadState(context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
}

func (f *fakeCluster) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeCluster) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloads
}

// fakeStore returns a Store over a fakeCluster whose reloads are timed by
// a fake clock.
func fakeStore(t *testing.T) (*Store, *fakeCluster, *clocktest.Clock) {
	t.Helper()
	f := &fakeCluster{}
	s := NewClientStore(f, "p:")
	if s.r == nil {
		t.Fatal("a client with ReloadState got a Store that never reloads")
	}
	c := clocktest.New(time.Unix(1_700_000_000, 0))
	s.r.now = c.Now
	return s, f, c
}

var refused = &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused", Addr: "127.0.0.1:1"}}

// TestStoreReloadsOncePerBurst: a burst of unanswered commands, from many
// goroutines at once, asks for one reload; the next burst, ReloadEvery
// later, for one more; a burst that ends before ReloadEvery asks for
// nothing more.
func TestStoreReloadsOncePerBurst(t *testing.T) {
	s, f, c := fakeStore(t)
	ctx := context.Background()
	f.set(refused)
	burst := func() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 10 {
					if _, err := s.Budget(ctx, shared.BudgetOp{Step: shared.StepLease, Key: "{b}", Replica: "r", Budget: 1, TTL: time.Second}); err == nil {
						t.Error("a failing command answered")
					}
					_, _ = s.Incr(ctx, "n", time.Second)
					_, _, _ = s.Get(ctx, "k")
				}
			})
		}
		wg.Wait()
	}
	burst()
	if got := f.count(); got != 1 || s.Reloads() != 1 {
		t.Fatalf("one burst asked for %d reloads (Reloads %d), want 1", got, s.Reloads())
	}
	c.Advance(ReloadEvery - time.Millisecond)
	burst()
	if got := f.count(); got != 1 {
		t.Fatalf("a burst within ReloadEvery asked again: %d reloads", got)
	}
	c.Advance(time.Millisecond)
	burst()
	if got := f.count(); got != 2 || s.Reloads() != 2 {
		t.Fatalf("a burst ReloadEvery later: %d reloads (Reloads %d), want 2", got, s.Reloads())
	}
	// Answers, however long after, ask for nothing.
	f.set(nil)
	c.Advance(time.Hour)
	if err := s.Del(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if got := f.count(); got != 2 {
		t.Fatalf("a command that was answered asked for a reload: %d", got)
	}
}

// TestStoreReloadsOnlyWhenUnanswered: the server's own error replies (a
// script's error, NOSCRIPT, WRONGTYPE), a missing key, the caller's
// cancellation and a closed client are answers, not a lost node: no reload.
// A refused or reset connection, a timeout and an empty connection pool
// are.
func TestStoreReloadsOnlyWhenUnanswered(t *testing.T) {
	answered := []error{
		redis.ErrNoScript,
		fmt.Errorf("wrapped: %w", redis.ErrNoScript),
		redis.Nil,
		context.Canceled,
		redis.ErrClosed,
	}
	unansweredErrs := []error{
		refused,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		context.DeadlineExceeded,
		errors.New("redis: connection pool timeout"),
		fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED),
	}
	for _, err := range answered {
		s, f, _ := fakeStore(t)
		f.set(err)
		_, _, _ = s.Get(context.Background(), "k")
		if f.count() != 0 {
			t.Errorf("%v: asked for a reload", err)
		}
	}
	for _, err := range unansweredErrs {
		s, f, _ := fakeStore(t)
		f.set(err)
		_, _, _ = s.Get(context.Background(), "k")
		if f.count() != 1 {
			t.Errorf("%v: %d reloads, want 1", err, f.count())
		}
	}
	// A script's error, as the server words it, is an answer too.
	s, f, _ := fakeStore(t)
	f.set(redisErr("ERR user_script:1: Script attempted to access nonexistent global variable"))
	if _, err := s.Incr(context.Background(), "n", time.Second); err == nil {
		t.Fatal("a script error vanished")
	}
	if f.count() != 0 {
		t.Errorf("a script's error asked for a reload")
	}
}

// redisErr is an error reply of the server's: go-redis marks them with a
// RedisError method.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// TestStoreWithoutMapNeverReloads: a client without a map of slots (a
// *redis.Client, a Sentinel failover client) is used as it is.
func TestStoreWithoutMapNeverReloads(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer c.Close()
	s := NewClientStore(c, "")
	if s.r != nil || s.Reloads() != 0 {
		t.Fatal("a *redis.Client got a reloading Store")
	}
	if _, _, err := s.Get(context.Background(), "k"); err == nil {
		t.Fatal("a Get on nothing answered")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	if NewClientStore(cc, "").r == nil {
		t.Fatal("a *redis.ClusterClient got a Store that never reloads")
	}
	var u redis.UniversalClient = redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer u.Close()
	if NewClientStore(u, "").r == nil {
		t.Fatal("a Sentinel failover cluster client got a Store that never reloads")
	}
}
