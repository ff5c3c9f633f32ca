package redisward

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/ward"
	"github.com/wardpool/wardpool/ward/shared"
)

func TestStore(t *testing.T) {
	p, k := newPool(t, 2, nil)
	a := admin(t)
	s := NewStore(p, k)
	ctx := context.Background()

	// Incr: a new key starts at 1 with the ttl; later increments keep the
	// expiry it had.
	if n, err := s.Incr(ctx, "n", time.Minute); err != nil || n != 1 {
		t.Fatalf("Incr new = %d %v", n, err)
	}
	ttl1 := a.PTTL(ctx, k+"n").Val()
	if ttl1 <= 0 || ttl1 > time.Minute {
		t.Fatalf("new key's PTTL = %v, want within a minute", ttl1)
	}
	if n, err := s.Incr(ctx, "n", time.Hour); err != nil || n != 2 {
		t.Fatalf("Incr again = %d %v", n, err)
	}
	if ttl2 := a.PTTL(ctx, k+"n").Val(); ttl2 > ttl1 || ttl2 <= 0 {
		t.Fatalf("second Incr changed the expiry: %v then %v", ttl1, ttl2)
	}
	// A ttl of zero leaves a new key without expiry.
	if _, err := s.Incr(ctx, "forever", 0); err != nil {
		t.Fatal(err)
	}
	if ttl := a.PTTL(ctx, k+"forever").Val(); ttl != -1 {
		t.Fatalf("Incr with no ttl: PTTL %v, want -1 (no expiry)", ttl)
	}
	// The script is sent whole when the server's cache lost it (emptied
	// only on a server the test command started for the run).
	if testenv.RedisThrowaway() {
		if err := a.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Incr(ctx, "n", time.Minute); err != nil || n != 3 {
		t.Fatalf("Incr after SCRIPT FLUSH = %d %v", n, err)
	}
	// A key that is not an integer.
	if err := a.Set(ctx, k+"text", "abc", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Incr(ctx, "text", time.Minute); !errors.Is(err, shared.ErrNotInteger) {
		t.Fatalf("Incr on text: %v, want ErrNotInteger", err)
	}

	// SetIfAbsent: only the first stores, and the value stays.
	if ok, err := s.SetIfAbsent(ctx, "m", "first", time.Minute); err != nil || !ok {
		t.Fatalf("SetIfAbsent new = %v %v", ok, err)
	}
	if ok, err := s.SetIfAbsent(ctx, "m", "second", time.Minute); err != nil || ok {
		t.Fatalf("SetIfAbsent existing = %v %v", ok, err)
	}
	if v, ok, err := s.Get(ctx, "m"); err != nil || !ok || v != "first" {
		t.Fatalf("Get = %q %v %v", v, ok, err)
	}
	if ttl := a.PTTL(ctx, k+"m").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("SetIfAbsent PTTL = %v", ttl)
	}
	// A ttl under a millisecond still expires.
	if ok, err := s.SetIfAbsent(ctx, "short", "x", time.Microsecond); err != nil || !ok {
		t.Fatalf("SetIfAbsent short = %v %v", ok, err)
	}
	clocktest.Eventually(t, "the condition", func() bool { _, ok, _ := s.Get(ctx, "short"); return !ok })

	// Get of a missing key, and Del of present and missing keys.
	if _, ok, err := s.Get(ctx, "none"); err != nil || ok {
		t.Fatalf("Get missing = %v %v", ok, err)
	}
	if err := s.Del(ctx, "n", "m", "none"); err != nil {
		t.Fatal(err)
	}
	if err := s.Del(ctx); err != nil {
		t.Fatal(err)
	}
	if n := a.Exists(ctx, k+"n", k+"m").Val(); n != 0 {
		t.Fatalf("Del left %d keys", n)
	}
	// Nothing above cost a connection.
	if st := p.WardStats(); uint64(st.Live) != st.Made {
		t.Fatalf("connections lost: %+v", st.Books)
	}
}

// TestStoreLikeMemStore runs one sequence against the Redis store and the
// in-memory one and wants the same answers.
func TestStoreLikeMemStore(t *testing.T) {
	p, k := newPool(t, 1, nil)
	stores := []shared.Store{NewStore(p, k), shared.NewMemStore(time.Now)}
	ctx := context.Background()
	var got [2][]string
	for i, s := range stores {
		rec := func(v ...any) { got[i] = append(got[i], fmt.Sprint(v...)) }
		for range 3 {
			n, err := s.Incr(ctx, "c", time.Minute)
			rec(n, err)
		}
		ok, err := s.SetIfAbsent(ctx, "c", "x", time.Minute)
		rec(ok, err)
		ok, err = s.SetIfAbsent(ctx, "d", "x", time.Minute)
		rec(ok, err)
		v, ok, err := s.Get(ctx, "c")
		rec(v, ok, err)
		rec(s.Del(ctx, "c", "zz"))
		v, ok, err = s.Get(ctx, "c")
		rec(v, ok, err)
		n, err := s.Incr(ctx, "d", time.Minute)
		rec(n, errors.Is(err, shared.ErrNotInteger))
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("step %d: redis %q, memory %q", i, got[0][i], got[1][i])
		}
	}
}

// replicas returns n SharedBreakers on one key, each over its own pool (its
// own connections), as n replicas of a service would hold them, with a
// store to look at the shared state and the key.
func replicas(t *testing.T, n int, pol shared.BreakerPolicy) ([]*shared.Breaker, *Store, string) {
	t.Helper()
	var bs []*shared.Breaker
	var look *Store
	var key string
	for range n {
		p, k := newPool(t, 4, nil)
		if look == nil {
			look, key = NewStore(p, ""), k+"breaker"
		}
		bs = append(bs, shared.NewBreaker(shared.Link{Store: NewStore(p, ""), Timeout: 5 * time.Second}, key, pol))
	}
	return bs, look, key
}

// together runs f on every replica from g goroutines each, released at
// once, and waits for them.
func together(bs []*shared.Breaker, g int, f func(r, i int, b *shared.Breaker)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for r, b := range bs {
		for i := range g {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				f(r, i, b)
			}()
		}
	}
	start.Done()
	done.Wait()
}

// TestSharedBreakerCountsEveryFailure: a burst of concurrent failures from
// many replicas advances the shared count by exactly the burst (the key
// layout, "{"+key+"}:failures", is the one shared.Breaker documents).
func TestSharedBreakerCountsEveryFailure(t *testing.T) {
	const nrep, g, each = 5, 8, 5
	pol := shared.DefaultBreaker
	pol.Failures = 1 << 20 // never opens here: only the count is looked at
	pol.Window = time.Minute
	bs, look, key := replicas(t, nrep, pol)
	ctx := context.Background()
	now := time.Now()
	var errs atomic.Int64
	together(bs, g, func(_, _ int, b *shared.Breaker) {
		for range each {
			if err := b.Fail(ctx, now); err != nil {
				errs.Add(1)
			}
		}
	})
	if errs.Load() != 0 {
		t.Fatalf("%d failures not recorded", errs.Load())
	}
	v, ok, err := look.Get(ctx, "{"+key+"}:failures")
	if err != nil || !ok || v != strconv.Itoa(nrep*g*each) {
		t.Fatalf("failure count = %q %v %v, want %d", v, ok, err, nrep*g*each)
	}
}

// TestSharedBreakerOpensOnce: twenty replicas failing at once, each at its
// own moment, open the breaker exactly at the line; the open marker keeps
// the moment of the failure that crossed it, and later failures do not
// push the cooldown on.
func TestSharedBreakerOpensOnce(t *testing.T) {
	const nrep = 20
	pol := shared.BreakerPolicy{Failures: nrep, Window: time.Minute, Cooldown: 10 * time.Second, Lease: time.Minute, Hold: time.Hour}
	bs, look, key := replicas(t, nrep, pol)
	ctx := context.Background()
	base := time.Now()
	// One failure short of the line: still closed everywhere.
	together(bs[:nrep-1], 1, func(r, _ int, b *shared.Breaker) {
		if err := b.Fail(ctx, base.Add(time.Duration(r)*time.Millisecond)); err != nil {
			t.Error(err)
		}
	})
	for _, b := range bs {
		if st, err := b.State(ctx, base); err != nil || st != shared.Closed {
			t.Fatalf("after %d failures: %v %v, want closed", nrep-1, st, err)
		}
	}
	crosser := base.Add(time.Second)
	if err := bs[nrep-1].Fail(ctx, crosser); err != nil {
		t.Fatal(err)
	}
	marker := func() string {
		v, ok, err := look.Get(ctx, "{"+key+"}:open")
		if err != nil || !ok {
			t.Fatalf("open marker: %q %v %v", v, ok, err)
		}
		return v
	}
	if got := marker(); got != strconv.FormatInt(crosser.UnixNano(), 10) {
		t.Fatalf("open marker %s, want the crosser's moment %d", got, crosser.UnixNano())
	}
	// A burst of later failures from every replica moves nothing.
	together(bs, 4, func(r, i int, b *shared.Breaker) {
		if err := b.Fail(ctx, crosser.Add(time.Duration(1+r*4+i)*time.Second)); err != nil {
			t.Error(err)
		}
	})
	if got := marker(); got != strconv.FormatInt(crosser.UnixNano(), 10) {
		t.Fatalf("later failures moved the open marker to %s", got)
	}
	// Open on every replica until the cooldown from the first moment ends.
	for _, b := range bs {
		if _, ok, err := b.Allow(ctx, crosser.Add(pol.Cooldown-time.Millisecond)); ok || err != nil {
			t.Fatalf("Allow during the cooldown: %v %v", ok, err)
		}
		if st, _ := b.State(ctx, crosser.Add(pol.Cooldown)); st != shared.HalfOpen {
			t.Fatalf("state at the end of the cooldown: %v", st)
		}
	}
}

// TestSharedBreakerOneProbe: when the cooldown ends, many replicas asking
// at once let exactly one probe through between them; its success closes
// the breaker for all.
func TestSharedBreakerOneProbe(t *testing.T) {
	const nrep, g = 8, 8
	pol := shared.BreakerPolicy{Failures: 3, Window: time.Minute, Cooldown: 5 * time.Second, Lease: time.Minute, Hold: time.Hour}
	bs, _, _ := replicas(t, nrep, pol)
	ctx := context.Background()
	opened := time.Now()
	for i := range 3 {
		if err := bs[i].Fail(ctx, opened); err != nil {
			t.Fatal(err)
		}
	}
	var probes, refused, errs atomic.Int64
	var probe atomic.Pointer[shared.Call]
	at := opened.Add(pol.Cooldown)
	together(bs, g, func(_, _ int, b *shared.Breaker) {
		call, ok, err := b.Allow(ctx, at)
		switch {
		case err != nil:
			errs.Add(1)
		case ok && call.Probe:
			probes.Add(1)
			probe.Store(&call)
		case ok:
			t.Error("a call went through as not a probe while open")
		default:
			refused.Add(1)
		}
	})
	if errs.Load() != 0 || probes.Load() != 1 || refused.Load() != nrep*g-1 {
		t.Fatalf("probes %d, refused %d, errors %d; want 1, %d, 0", probes.Load(), refused.Load(), errs.Load(), nrep*g-1)
	}
	// While the probe is out, nobody else goes.
	if _, ok, _ := bs[nrep-1].Allow(ctx, at.Add(time.Second)); ok {
		t.Fatal("a second probe while the first is out")
	}
	if err := probe.Load().Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		call, ok, err := b.Allow(ctx, at.Add(2*time.Second))
		if err != nil || !ok || call.Probe {
			t.Fatalf("after the probe passed: %v %v %v, want closed", call, ok, err)
		}
	}
}

// TestSharedBreakerLeaseRunsOut: a probe that never settles is given up on
// when its lease ends on the server's clock, and another replica probes.
func TestSharedBreakerLeaseRunsOut(t *testing.T) {
	pol := shared.BreakerPolicy{Failures: 1, Window: time.Minute, Cooldown: 0, Lease: 50 * time.Millisecond, Hold: time.Hour}
	bs, _, _ := replicas(t, 2, pol)
	ctx := context.Background()
	now := time.Now()
	if err := bs[0].Fail(ctx, now); err != nil {
		t.Fatal(err)
	}
	if call, ok, err := bs[0].Allow(ctx, now); err != nil || !ok || !call.Probe {
		t.Fatalf("first probe: %v %v %v", call, ok, err)
	}
	if _, ok, _ := bs[1].Allow(ctx, now); ok {
		t.Fatal("second probe inside the lease")
	}
	clocktest.Eventually(t, "the condition", func() bool {
		call, ok, err := bs[1].Allow(ctx, now)
		return err == nil && ok && call.Probe
	})
}

// TestSharedBreakerFailsOpen: with the store's server gone (its pool
// closed), the breaker lets calls through and says why.
func TestSharedBreakerFailsOpen(t *testing.T) {
	p, k := newPool(t, 1, nil)
	b := shared.NewBreaker(shared.Link{Store: NewStore(p, ""), Timeout: 5 * time.Second}, k+"breaker", shared.DefaultBreaker)
	ctx := context.Background()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Allow(ctx, time.Now()); !ok || err == nil {
		t.Fatalf("Allow with the store down: %v %v, want through with an error", ok, err)
	}
}

// TestSharedPeriodOnRedis: replicas, each with its own pool on the same
// Redis, taking at once from one shared quota admit exactly the quota, and
// the period's count carries an expiry.
func TestSharedPeriodOnRedis(t *testing.T) {
	const nrep, g, each, quota = 4, 8, 10, 137
	ctx := context.Background()
	var ps []*shared.Period
	var key string
	for range nrep {
		p, k := newPool(t, 4, nil)
		if key == "" {
			key = k + "quota"
		}
		ps = append(ps, shared.NewPeriod(shared.Link{Store: NewStore(p, ""), Timeout: 5 * time.Second}, key, quota, time.Hour, 0))
	}
	now := time.Now()
	var admitted, hits, errs atomic.Int64
	var start, done sync.WaitGroup
	start.Add(1)
	for _, p := range ps {
		for range g {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				for range each {
					q, err := p.Take(ctx, now)
					switch {
					case err != nil:
						errs.Add(1)
					case q == ward.Hit:
						hits.Add(1)
						admitted.Add(1)
					case q == ward.Under:
						admitted.Add(1)
					}
				}
			}()
		}
	}
	start.Done()
	done.Wait()
	if errs.Load() != 0 || admitted.Load() != quota || hits.Load() != 1 {
		t.Fatalf("admitted %d (%d hits, %d errors) of %d takes, want exactly %d and one hit",
			admitted.Load(), hits.Load(), errs.Load(), nrep*g*each, quota)
	}
	if left, err := ps[0].Left(ctx, now); left != 0 || err != nil {
		t.Fatalf("Left = %d %v, want 0", left, err)
	}
	a := admin(t)
	start0 := now.UnixNano() - now.UnixNano()%int64(time.Hour)
	ttl := a.PTTL(ctx, "{"+key+"}:"+strconv.FormatInt(start0, 10)).Val()
	if ttl <= 0 || ttl > 2*time.Hour {
		t.Fatalf("the period's count has PTTL %v, want an expiry within two hours", ttl)
	}
}
