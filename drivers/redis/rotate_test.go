package redisward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
)

// Credential rotation on Redis: an ACL user's password changed under
// load (connections authenticated before stay), CredentialsProviderContext
// giving the new one, then Rotate over a window; a plain go-redis client,
// which has no way to replace its connections but to be closed, beside.

const (
	rotSize    = 16
	rotWorkers = 32
	rotOver    = 4 * time.Second
)

// rotCreds is the password new connections are given, and when each was
// asked for it.
type rotCreds struct {
	user     string
	password atomic.Pointer[string]
	mu       sync.Mutex // guards asked
	asked    []time.Time
}

func (c *rotCreds) provide(context.Context) (string, string, error) {
	c.mu.Lock()
	c.asked = append(c.asked, time.Now())
	c.mu.Unlock()
	return c.user, *c.password.Load(), nil
}

// perSecond counts the dials begun in each second from start, over the
// window and the second after.
func (c *rotCreds) perSecond(start time.Time) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, int(rotOver/time.Second)+1)
	for _, a := range c.asked {
		if d := a.Sub(start); d >= 0 && int(d/time.Second) < len(out) {
			out[d/time.Second]++
		}
	}
	return out
}

func rotSecret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// rotUser makes an ACL user of the test's own, deleted (and its
// connections with it) when the test ends.
func rotUser(t *testing.T, a *redis.Client, pw string) string {
	t.Helper()
	user := fmt.Sprintf("wardpool-rot-%d", time.Now().UnixNano())
	ctx := context.Background()
	if err := a.Do(ctx, "ACL", "SETUSER", user, "on", ">"+pw, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	t.Cleanup(func() { _ = a.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	return user
}

// rotConns lists the server's ids of user's connections.
func rotConns(t *testing.T, a *redis.Client, user string) []int64 {
	t.Helper()
	list, err := a.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	var ids []int64
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		var id int64
		mine := false
		for f := range strings.FieldsSeq(line) {
			switch k, v, _ := strings.Cut(f, "="); k {
			case "id":
				id, _ = strconv.ParseInt(v, 10, 64)
			case "user":
				mine = v == user
			}
		}
		if mine {
			ids = append(ids, id)
		}
	}
	return ids
}

// newest is the highest connection id the server has given so far: every
// connection opened later has a higher one.
func newest(t *testing.T, a *redis.Client) int64 {
	t.Helper()
	list, err := a.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	var top int64
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		if v, ok := strings.CutPrefix(line, "id="); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			top = max(top, n)
		}
	}
	return top
}

// rotLoad runs rotWorkers goroutines, each blocking on a list that stays
// empty (BLPOP of 10 ms, which the server ends at a tick of its own timer,
// some 100 ms later: every connection stays busy) and pausing 5 ms, on c until stop is closed; it
// returns the counts of calls and failures, and the first failure.
func rotLoad(c *redis.Client, key string, stop <-chan struct{}) func() (ok, failed int64, first error) {
	var (
		wg       sync.WaitGroup
		ok, fail atomic.Int64
		firstErr atomic.Pointer[error]
	)
	for range rotWorkers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := c.Do(ctx, "BLPOP", key, "0.01").Err() // go-redis's BLPop rounds 10 ms up to 1 s
				cancel()
				if err != nil && !errors.Is(err, redis.Nil) {
					fail.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				} else {
					ok.Add(1)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
	return func() (int64, int64, error) {
		wg.Wait()
		var e error
		if p := firstErr.Load(); p != nil {
			e = *p
		}
		return ok.Load(), fail.Load(), e
	}
}

// TestRotateBesideGoRedis: 16 connections of an ACL user under load, its
// password changed (the connections open stay authenticated),
// CredentialsProviderContext giving the new one, then Rotate(4s): no call
// fails, no connection opened before the rotation is open 1 s after the
// window, at most 1.5 × 16/4 dials begin in any second of it. A go-redis
// client on the same load keeps every connection of the old password:
// logged beside.
func TestRotateBesideGoRedis(t *testing.T) {
	addr := testenv.RedisAddr(t)
	if !testenv.RedisThrowaway() {
		t.Skipf("%s not 1: this test makes an ACL user, on a server ./scripts/test started only", testenv.RedisThrowawayVar)
	}
	if !testenv.Full() {
		t.Skipf("two clients under load for some 7 s each: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	a := admin(t)
	limit := 1.5 * rotSize / rotOver.Seconds()
	type figures struct {
		ok, failed int64
		first      error
		perSecond  []int
		left, all  int
	}
	// run warms c (rotSize connections) under the load, changes the
	// password, replaces (rotate) and counts.
	run := func(t *testing.T, cr *rotCreds, c *redis.Client, live func() int, rotate func()) figures {
		key := "wardpool:rot:" + rotSecret(t)
		stop := make(chan struct{})
		done := rotLoad(c, key, stop)
		stopped := false
		defer func() {
			if !stopped {
				close(stop)
				done()
			}
		}()
		for end := time.Now().Add(10 * time.Second); live() < rotSize; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d connections 10 s into the load, want %d", live(), rotSize)
			}
		}
		time.Sleep(500 * time.Millisecond)
		pw := rotSecret(t)
		if err := a.Do(context.Background(), "ACL", "SETUSER", cr.user, "resetpass", ">"+pw).Err(); err != nil {
			t.Fatal(err)
		}
		cr.password.Store(&pw)
		top := newest(t, a)
		start := time.Now()
		rotate()
		time.Sleep(time.Until(start.Add(rotOver + time.Second)))
		var f figures
		ids := rotConns(t, a, cr.user)
		f.all = len(ids)
		for _, id := range ids {
			if id <= top {
				f.left++
			}
		}
		close(stop)
		stopped = true
		f.ok, f.failed, f.first = done()
		f.perSecond = cr.perSecond(start)
		return f
	}

	var ours, theirs figures
	t.Run("redisward", func(t *testing.T) {
		pw := rotSecret(t)
		cr := &rotCreds{user: rotUser(t, a, pw)}
		cr.password.Store(&pw)
		p, _ := newPool(t, rotSize, func(c *Config) {
			c.Options.CredentialsProviderContext = cr.provide
			c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		})
		ours = run(t, cr, p.Client(), func() int { return p.WardStats().Live }, func() { p.Rotate(rotOver) })
		s := p.WardStats()
		t.Logf("redisward: %+v, rotating %d, reset causes %v", ours, s.Rotating, s.ResetCauses)
		if ours.failed != 0 {
			t.Errorf("%d of %d calls failed through the rotation (first: %v), want none", ours.failed, ours.ok+ours.failed, ours.first)
		}
		if ours.left != 0 {
			t.Errorf("%d of the user's %d connections opened before the rotation are open 1 s after its window, want none", ours.left, ours.all)
		}
		for i, n := range ours.perSecond[:len(ours.perSecond)-1] {
			if float64(n) > limit {
				t.Errorf("%d dials began in second %d of the window (%v), want at most %.1f", n, i, ours.perSecond, limit)
			}
		}
		if s.Rotating != 0 || s.ResetCauses[wardpool.CauseRotate] != 1 {
			t.Errorf("after the window: Rotating %d, reset causes %v; want 0 and one %q", s.Rotating, s.ResetCauses, wardpool.CauseRotate)
		}
	})
	t.Run("go-redis", func(t *testing.T) {
		pw := rotSecret(t)
		cr := &rotCreds{user: rotUser(t, a, pw)}
		cr.password.Store(&pw)
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: rotSize, CredentialsProviderContext: cr.provide})
		defer c.Close()
		theirs = run(t, cr, c, func() int { return int(c.PoolStats().TotalConns) }, func() {})
		t.Logf("go-redis: %+v", theirs)
	})
	t.Logf("%d connections, %d goroutines; redisward Rotate(%v) | go-redis (nothing to call)", rotSize, rotWorkers, rotOver)
	t.Logf("calls failed:                              %d of %d | %d of %d", ours.failed, ours.ok+ours.failed, theirs.failed, theirs.ok+theirs.failed)
	t.Logf("dials per second, window then +1 s:        %v | %v", ours.perSecond, theirs.perSecond)
	t.Logf("connections of the old password, 1 s after: %d of %d | %d of %d", ours.left, ours.all, theirs.left, theirs.all)
}
