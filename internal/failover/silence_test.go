package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	redisward "github.com/wardpool/wardpool/drivers/redis"
	"github.com/wardpool/wardpool/internal/servers"
)

// The silent link's shape, the same for PostgreSQL and Redis:
// silenceWriters callers per pool with silenceCall each, a link silent for
// silenceHole, and after it load until every side has succeeded (at most
// silenceRecover), then silenceAfter more.
const (
	silenceWriters = 16
	silenceCall    = 500 * time.Millisecond
	silenceHole    = 10 * time.Second
	silenceAfter   = time.Second
	// silenceRecover bounds how long the load goes on after the link
	// returns while waiting for each side's first success.
	silenceRecover = 30 * time.Second
	// silenceSpare is how many connections each loaded pool has beyond
	// its writers, opened before the load: they sit idle (pools lend the
	// most recently used first) until the silence sends callers to them.
	silenceSpare = 4
	// silenceIdle is the size of each side's idle pool: opened, used
	// once, then left alone through the silence.
	silenceIdle = 4
	// silenceBare is how long a call without a deadline may take before
	// the harness gives up on it (it must end by itself).
	silenceBare = time.Minute
)

// deadBound is the bound the drivers promise by default on a connection
// whose server went silent: DefaultDeadPeerTimeout after the last packet,
// plus the keepalive interval (1 s) by which an idle connection's probe
// may come late. The harness enforces it with a second more, for its 50 ms
// sampling and a busy machine.
const deadBound = pgxward.DefaultDeadPeerTimeout + time.Second

// silentSide is one client of a silent-link scenario: a loaded pool and an
// idle one, each dialling an address of its own in the namespace, so that
// the kernel's connection table tells their connections apart.
type silentSide struct {
	name           string
	addr, idleAddr string                                      // the namespace addresses the two pools dial
	do             func(ctx context.Context) (int, int, error) // one call of the loaded pool
	idleDo         func(ctx context.Context) error             // one call of the idle pool
	warm           func(ctx context.Context, n int) error      // opens n connections in the loaded pool
	dials          *dialSpans                                  // the loaded pool's dials, or nil

	ops       []op
	pre       map[int]bool          // sockets of both pools when the link went silent, by local port
	idlePre   map[int]bool          // those of the idle pool
	gone      map[int]time.Duration // when each left the established state, after the silence began
	recovered atomic.Bool           // a call that began after the link returned succeeded
	bare      struct {              // a call without a deadline, 1 s into the silence
		held time.Duration
		err  error
	}
	idleAfter struct { // the idle pool's first call after the link returned
		took time.Duration
		err  error
	}
}

// lastGone returns how long after the silence began the last of the
// pre-silence sockets (of the idle pool alone, when idle) left the
// established state, and how many had not by the time the link returned.
func (s *silentSide) lastGone(idle bool) (last time.Duration, open int) {
	for p := range s.pre {
		if idle && !s.idlePre[p] {
			continue
		}
		d, ok := s.gone[p]
		if !ok {
			open++
			continue
		}
		last = max(last, d)
	}
	return last, open
}

// silence runs the scenario on sides against a server at port in ns:
// warm, load, silence, restore, more load; it fills each side's results
// and returns when the silence began and when the link came back.
func silence(t *testing.T, ns *servers.Netns, port int, sides []*silentSide) (tHole, tLift time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range sides {
		if err := s.warm(ctx, silenceWriters+silenceSpare); err != nil {
			t.Fatalf("%s: warm the loaded pool: %v", s.name, err)
		}
		if err := s.idleDo(ctx); err != nil {
			t.Fatalf("%s: the idle pool: %v", s.name, err)
		}
	}
	var lifted atomic.Int64 // tLift in Unix nanoseconds, once the link is back
	stops := make([]func() []op, len(sides))
	for i, s := range sides {
		stops[i] = load(t, silenceWriters, silenceCall, func(ctx context.Context) (int, int, error) {
			start := time.Now()
			node, pid, err := s.do(ctx)
			if l := lifted.Load(); err == nil && l != 0 && start.UnixNano() > l {
				s.recovered.Store(true)
			}
			return node, pid, err
		})
	}
	sleep(time.Second)

	established := func(addr string) map[int]bool {
		m, err := servers.Established(addr, port)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, s := range sides {
		s.pre = established(s.addr)
		s.idlePre = established(s.idleAddr)
		for p := range s.idlePre {
			s.pre[p] = true
		}
		s.gone = map[int]time.Duration{}
	}
	tHole = time.Now()
	if err := ns.Silence(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Restore() }) // a test that fails half-way leaves the link up

	var bare sync.WaitGroup
	for _, s := range sides {
		bare.Add(1)
		go func() {
			defer bare.Done()
			sleepUntil(tHole.Add(time.Second))
			bctx, bcancel := context.WithTimeout(context.Background(), silenceBare)
			defer bcancel()
			start := time.Now()
			_, _, s.bare.err = s.do(bctx)
			s.bare.held = time.Since(start)
		}()
	}
	// Watch the kernel's table until the link returns.
	for now := time.Now(); now.Before(tHole.Add(silenceHole)); now = time.Now() {
		for _, s := range sides {
			live := established(s.addr)
			for p := range established(s.idleAddr) {
				live[p] = true
			}
			for p := range s.pre {
				if _, seen := s.gone[p]; !seen && !live[p] {
					s.gone[p] = now.Sub(tHole)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tLift = time.Now()
	lifted.Store(tLift.UnixNano())
	if err := ns.Restore(); err != nil {
		t.Fatal(err)
	}
	// Load on until every side has recovered, or silenceRecover has passed,
	// then silenceAfter more.
	for end := tLift.Add(silenceRecover); time.Now().Before(end); {
		all := true
		for _, s := range sides {
			all = all && s.recovered.Load()
		}
		if all {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	sleep(silenceAfter)
	for _, s := range sides {
		start := time.Now()
		ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.idleAfter.err = s.idleDo(ictx)
		icancel()
		s.idleAfter.took = time.Since(start)
	}
	for i, s := range sides {
		s.ops = stops[i]()
	}
	bare.Wait()
	return tHole, tLift
}

// sleepUntil sleeps until t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// silenceTable logs the figures of a silent-link run.
func silenceTable(t *testing.T, title string, sides []*silentSide, tHole, tLift time.Time) {
	t.Helper()
	rows := [][]string{{"", "sockets at silence (idle pool)", "last closed", "still open at return (idle pool)", "longest past ctx", "calls >100 ms past ctx", "failed",
		"dials during, connects and cancel requests (open at return)", "first success after return", "call without deadline", "idle pool after return", "errors"}}
	for _, s := range sides {
		last, open := s.lastGone(false)
		_, idleOpen := s.lastGone(true)
		late := 0
		for _, o := range s.ops {
			if o.end.Sub(o.deadline) > 100*time.Millisecond {
				late++
			}
		}
		dials := "n/a"
		if s.dials != nil {
			n, first, last := s.dials.open(tLift)
			dials = fmt.Sprintf("%d (%d", s.dials.started(tHole, tLift), n)
			if n > 0 {
				dials += fmt.Sprintf(", begun %.1f–%.1f s in", first.Sub(tHole).Seconds(), last.Sub(tHole).Seconds())
			}
			dials += ")"
		}
		outcome := func(d time.Duration, err error) string {
			if err != nil {
				return ms(d) + ", " + short(err)
			}
			return ms(d) + ", ok"
		}
		lastS := ms(last)
		if open > 0 {
			lastS = "—"
		}
		rows = append(rows, []string{s.name, fmt.Sprintf("%d (%d)", len(s.pre), len(s.idlePre)), lastS, fmt.Sprintf("%d (%d)", open, idleOpen),
			ms(overrun(s.ops)), fmt.Sprint(late), fmt.Sprint(failedFrom(s.ops, tHole)), dials, ms(firstOK(s.ops, tLift)),
			outcome(s.bare.held, s.bare.err), outcome(s.idleAfter.took, s.idleAfter.err), errorKinds(s.ops, tHole)})
	}
	table(t, title, rows)
}

// short is the end of an error's text.
func short(err error) string {
	k := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline"
	}
	if r := []rune(k); len(r) > 40 {
		k = "…" + string(r[len(r)-40:])
	}
	return k
}

// checkSilence asserts what the drivers promise of ours beside the peer:
// every connection open when the link went silent found dead within
// deadBound (plus the harness's second), no caller held past its context
// longer than the peer's longest (plus scheduling noise), a call without
// a deadline ended within the bound's reach, and both recovered.
func checkSilence(t *testing.T, ours, peer *silentSide, tLift time.Time) {
	t.Helper()
	last, open := ours.lastGone(false)
	if open > 0 || last > deadBound+time.Second {
		t.Errorf("%s: of %d connections open when the link went silent, %d were still established when it returned after %v, the last found dead after %v; the bound is %v",
			ours.name, len(ours.pre), open, silenceHole, last, deadBound)
	}
	if len(ours.pre) < silenceWriters {
		t.Errorf("%s: only %d connections open when the link went silent; the scenario wants at least %d", ours.name, len(ours.pre), silenceWriters)
	}
	// Scheduling noise on a machine running the race detector: 100 ms.
	if w, p := overrun(ours.ops), overrun(peer.ops); w > p+100*time.Millisecond {
		t.Errorf("%s held a caller %v past its context, %s %v", ours.name, w, peer.name, p)
	}
	// A call without a deadline waits at most for a connection to be
	// found dead and for one dial to time out: twice the bound.
	if ours.bare.held > 2*deadBound+time.Second {
		t.Errorf("%s: a call without a deadline made 1 s into the silence was held %v (%v); want at most %v", ours.name, ours.bare.held, ours.bare.err, 2*deadBound+time.Second)
	}
	for _, s := range []*silentSide{ours, peer} {
		if firstOK(s.ops, tLift) < 0 {
			t.Errorf("%s: no call succeeded after the link returned", s.name)
		}
	}
}

// dialSpans records the dials of one pool through its DialFunc, when each
// began and ended: pgx dials for a connection and, when it gives up on a
// query, for the cancel request it sends before closing the connection.
type dialSpans struct {
	mu    sync.Mutex // guards spans
	spans [][2]time.Time
}

// wrap returns dial, recording each call.
func (d *dialSpans) wrap(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		i := len(d.spans)
		d.spans = append(d.spans, [2]time.Time{time.Now()})
		d.mu.Unlock()
		c, err := dial(ctx, network, addr)
		d.mu.Lock()
		d.spans[i][1] = time.Now()
		d.mu.Unlock()
		return c, err
	}
}

// started returns how many dials began in [from, to).
func (d *dialSpans) started(from, to time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, s := range d.spans {
		if !s[0].Before(from) && s[0].Before(to) {
			n++
		}
	}
	return n
}

// open returns how many dials were under way at t, and when the first
// and the last of them began.
func (d *dialSpans) open(t time.Time) (n int, first, last time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.spans {
		if !s[0].After(t) && (s[1].IsZero() || s[1].After(t)) {
			n++
			if first.IsZero() || s[0].Before(first) {
				first = s[0]
			}
			if s[0].After(last) {
				last = s[0]
			}
		}
	}
	return n, first, last
}

// TestSilentLinkPG puts PostgreSQL in a network namespace and takes the
// link to it down for 10 s under 16 writers per pool (500 ms per call),
// pgxward beside pgxpool, each with all defaults but the size, and
// pgxward with pgx's own dialer beside them (the bound off): the kernel
// of the test's side sees a server that vanished. Besides the load,
// each side has an idle pool of 4 connections and makes one call without
// a deadline 1 s into the silence. It asserts that pgxward finds every
// connection open at the silence dead within deadBound (TCP_USER_TIMEOUT
// and keepalive, set by ParseConfig's dialer) and holds no caller past its
// context longer than pgxpool does.
func TestSilentLinkPG(t *testing.T) {
	needFull(t)
	// pgxward, pgxward dialling as pgx does (the bound off: what the
	// default buys), pgxpool; each a loaded and an idle pool.
	names := []string{"pgxward", "pgxward-nobound", "pgxpool"}
	ns := servers.StartNetns(t, 2*len(names))
	srv := servers.StartPostgresIn(t, ns)
	mustExec(t, srv, "CREATE TABLE t (id bigserial, v int)")
	dsn := func(addr, app string) string {
		return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s", net.JoinHostPort(addr, strconv.Itoa(srv.Port)), app)
	}
	open := func(name, addr string, size int32, dials *dialSpans) pgPool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var p pgPool
		switch name {
		case "pgxward", "pgxward-nobound":
			cfg, err := pgxward.ParseConfig(dsn(addr, name))
			if err != nil {
				t.Fatal(err)
			}
			if name == "pgxward-nobound" {
				cfg.ConnConfig.DialFunc = pgxward.DeadPeerDialer(0)
			}
			cfg.MaxConns = size
			if dials != nil {
				cfg.ConnConfig.DialFunc = dials.wrap(cfg.ConnConfig.DialFunc)
			}
			wp, err := pgxward.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p = wp
		default:
			cfg, err := pgxpool.ParseConfig(dsn(addr, name))
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = size
			if dials != nil {
				cfg.ConnConfig.DialFunc = dials.wrap(cfg.ConnConfig.DialFunc)
			}
			pp, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p = pp
		}
		t.Cleanup(p.Close)
		return p
	}
	var sides []*silentSide
	for i, name := range names {
		s := &silentSide{name: name, addr: ns.Addrs[i], idleAddr: ns.Addrs[len(names)+i], dials: &dialSpans{}}
		loaded := open(name, s.addr, silenceWriters+silenceSpare, s.dials)
		idle := open(name, s.idleAddr, silenceIdle, nil)
		s.do = write(loaded)
		s.warm = func(ctx context.Context, n int) error { return holdAll(ctx, loaded, n) }
		s.idleDo = func(ctx context.Context) error {
			if err := holdAll(ctx, idle, silenceIdle); err != nil {
				return err
			}
			_, _, err := write(idle)(ctx)
			return err
		}
		sides = append(sides, s)
	}
	tHole, tLift := silence(t, ns, srv.Port, sides)
	silenceTable(t, fmt.Sprintf("silent link (PostgreSQL in a network namespace, link down %v): %d writers per pool, %v per call, %d spare and %d idle connections",
		tLift.Sub(tHole).Round(100*time.Millisecond), silenceWriters, silenceCall, silenceSpare, silenceIdle), sides, tHole, tLift)
	checkSilence(t, sides[0], sides[2], tLift)
}

// holdAll opens n connections of p at once (each running a query while
// the others are held), then gives them all back.
func holdAll(ctx context.Context, p pgPool, n int) error {
	var conns []func()
	defer func() {
		for _, r := range conns {
			r()
		}
	}()
	for range n {
		var release func()
		switch p := p.(type) {
		case *pgxward.Pool:
			c, err := p.Acquire(ctx)
			if err != nil {
				return err
			}
			release = c.Release
		case *pgxpool.Pool:
			c, err := p.Acquire(ctx)
			if err != nil {
				return err
			}
			release = c.Release
		default:
			return fmt.Errorf("holdAll: %T", p)
		}
		conns = append(conns, release)
	}
	return nil
}

// TestSilentLinkRedis is TestSilentLinkPG on Redis: redisward beside
// go-redis's Client, each with all defaults but the pool size, and
// redisward with go-redis's dialer beside them (DeadPeerTimeout
// negative), INCR under load.
func TestSilentLinkRedis(t *testing.T) {
	needFull(t)
	names := []string{"redisward", "redisward-nobound", "goredis"}
	ns := servers.StartNetns(t, 2*len(names))
	srv := servers.StartRedisIn(t, ns)
	_, portS, _ := net.SplitHostPort(srv.Addr)
	port, _ := strconv.Atoi(portS)
	type client struct {
		do   func(ctx context.Context) error
		warm func(ctx context.Context, n int) error
	}
	open := func(name, addr string, size int) client {
		o := &redis.Options{Addr: net.JoinHostPort(addr, portS), PoolSize: size, ClientName: name}
		switch name {
		case "redisward", "redisward-nobound":
			cfg := redisward.FromOptions(o)
			if name == "redisward-nobound" {
				cfg.DeadPeerTimeout = -1
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := redisward.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close(context.Background()) })
			return client{
				do: func(ctx context.Context) error { return p.Do(ctx, "INCR", "n").Err() },
				warm: func(ctx context.Context, n int) error {
					var loans []redisward.Loan
					defer func() {
						for _, l := range loans {
							l.Release()
						}
					}()
					for range n {
						l, err := p.Acquire(ctx)
						if err != nil {
							return err
						}
						loans = append(loans, l)
					}
					return nil
				},
			}
		default:
			c := redis.NewClient(o)
			t.Cleanup(func() { _ = c.Close() })
			return client{
				do: func(ctx context.Context) error { return c.Incr(ctx, "n").Err() },
				warm: func(ctx context.Context, n int) error {
					var conns []*redis.Conn
					defer func() {
						for _, cn := range conns {
							_ = cn.Close()
						}
					}()
					for range n {
						cn := c.Conn()
						conns = append(conns, cn)
						if err := cn.Ping(ctx).Err(); err != nil {
							return err
						}
					}
					return nil
				},
			}
		}
	}
	var sides []*silentSide
	for i, name := range names {
		s := &silentSide{name: name, addr: ns.Addrs[i], idleAddr: ns.Addrs[len(names)+i]}
		loaded := open(name, s.addr, silenceWriters+silenceSpare)
		idle := open(name, s.idleAddr, silenceIdle)
		s.do = func(ctx context.Context) (int, int, error) { return 0, 0, loaded.do(ctx) }
		s.warm = loaded.warm
		s.idleDo = func(ctx context.Context) error {
			if err := idle.warm(ctx, silenceIdle); err != nil {
				return err
			}
			return idle.do(ctx)
		}
		sides = append(sides, s)
	}
	tHole, tLift := silence(t, ns, port, sides)
	silenceTable(t, fmt.Sprintf("silent link (Redis in a network namespace, link down %v): %d writers per client, %v per call, %d spare and %d idle connections",
		tLift.Sub(tHole).Round(100*time.Millisecond), silenceWriters, silenceCall, silenceSpare, silenceIdle), sides, tHole, tLift)
	checkSilence(t, sides[0], sides[2], tLift)
}
