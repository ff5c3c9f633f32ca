package pgxward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/ward"
)

// noLeftovers checks, at the end of the test, that no goroutine the test
// started is still running.
func noLeftovers(t *testing.T) {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

// freePort returns a 127.0.0.1 port with nothing listening on it.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// withHost returns dsn pointed at 127.0.0.1:port.
func withHost(t *testing.T, dsn string, port int) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	return u.String()
}

// dsnFor returns the test server's DSN with the pool options added.
func dsnFor(t *testing.T, opts string) string {
	dsn := testenv.PostgresDSN(t)
	if opts == "" {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + opts
	}
	return dsn + "?" + opts
}

// terminate ends backend pid from a connection of its own, and waits until
// the server no longer lists it.
func terminate(t *testing.T, pid uint32) {
	t.Helper()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
	clocktest.Eventually(t, "backend gone", func() bool {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// TestTerminatedBackend kills the backend of an idle connection and asks
// again, on this pool and on pgxpool with the same settings: whenever
// pgxpool's caller sees no error, ours must not either, and either way the
// next query works.
func TestTerminatedBackend(t *testing.T) {
	testenv.PostgresDSN(t)
	type asker interface {
		Querier
		Close()
	}
	open := map[string]func(t *testing.T, edit func(*Config), pedit func(*pgxpool.Config)) asker{
		"pgxward": func(t *testing.T, edit func(*Config), _ func(*pgxpool.Config)) asker {
			return newPool(t, func(c *Config) { c.MaxConns = 1; edit(c) })
		},
		"pgxpool": func(t *testing.T, _ func(*Config), pedit func(*pgxpool.Config)) asker {
			c, err := pgxpool.ParseConfig(dsnFor(t, "pool_max_conns=1"))
			if err != nil {
				t.Fatal(err)
			}
			pedit(c)
			p, err := pgxpool.NewWithConfig(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return p
		},
	}
	always := func(context.Context, ShouldPingParams) bool { return true }
	never := func(context.Context, ShouldPingParams) bool { return false }
	scenarios := []struct {
		name  string
		edit  func(*Config)
		pedit func(*pgxpool.Config)
		wait  time.Duration // idle time after the kill
	}{
		// The default rule pings a connection idle for over a second.
		{"default, idle 1.2s", func(*Config) {}, func(*pgxpool.Config) {}, 1200 * time.Millisecond},
		// ShouldPing says ping on every borrow.
		{"ping always", func(c *Config) { c.ShouldPing = always }, func(c *pgxpool.Config) { c.ShouldPing = always }, 0},
		// Reused without a ping (what the default rule does to a connection
		// idle under a second; a loaded machine can stretch "at once" past
		// a second, so the test says never rather than rely on timing).
		{"never ping", func(c *Config) { c.ShouldPing = never }, func(c *pgxpool.Config) { c.ShouldPing = never }, 0},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			seen := map[string]error{}
			for _, name := range []string{"pgxpool", "pgxward"} {
				p := open[name](t, sc.edit, sc.pedit)
				ctx := ctxT(t)
				var pid uint32
				if err := p.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					t.Fatal(err)
				}
				terminate(t, pid)
				if sc.wait > 0 {
					time.Sleep(sc.wait) // the pools' rule is about real idle time
				}
				var n int
				seen[name] = p.QueryRow(ctx, "SELECT 1").Scan(&n)
				var again uint32
				if err := p.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&again); err != nil || again == pid {
					t.Errorf("%s: the query after: backend %d (killed %d), %v", name, again, pid, err)
				}
				p.Close()
			}
			t.Logf("pgxpool: %v; pgxward: %v", seen["pgxpool"], seen["pgxward"])
			if seen["pgxpool"] == nil && seen["pgxward"] != nil {
				t.Errorf("pgxward shows %v where pgxpool shows no error", seen["pgxward"])
			}
			if (seen["pgxpool"] == nil) != (seen["pgxward"] == nil) {
				t.Logf("the two pools differ here")
			}
		})
	}
}

func TestMalformedConnString(t *testing.T) {
	for _, s := range []string{"postgres://u:p@127.0.0.1:99999999/db", "host=127.0.0.1 port=x", "postgres://u:pw@[::1/db"} {
		p, err := New(context.Background(), s)
		if err == nil {
			p.Close()
			t.Errorf("New(%q) succeeded", s)
			continue
		}
		var pe *pgconn.ParseConfigError
		if !errors.As(err, &pe) {
			t.Errorf("New(%q) = %T %v, want *pgconn.ParseConfigError", s, err, err)
		}
	}
}

// TestServerRefuses: nothing listens on the port. Each Acquire fails with
// pgx's connect error, the books show nothing lent or live, and nothing is
// left running after Close.
func TestServerRefuses(t *testing.T) {
	noLeftovers(t)
	dsn := withHost(t, testenv.PostgresDSN(t), freePort(t))
	p, err := New(context.Background(), dsn+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for range 3 {
		_, err := p.Acquire(ctx)
		var ce *pgconn.ConnectError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "pgxward: connect") {
			t.Fatalf("Acquire = %T %v, want a *pgconn.ConnectError inside pgxward's", err, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if err := p.QueryRow(ctx, "SELECT 1").Scan(new(int)); err == nil {
		t.Error("QueryRow on a dead server succeeded")
	}
	s := p.Stat()
	if s.TotalConns() != 0 || s.AcquiredConns() != 0 || s.NewConnsCount() != 4 || s.WardStats().Failed != 4 {
		t.Errorf("books after 4 refused dials: total %d acquired %d new %d %+v",
			s.TotalConns(), s.AcquiredConns(), s.NewConnsCount(), s.WardStats())
	}
	p.Close()
}

func TestWrongCredentials(t *testing.T) {
	noLeftovers(t)
	u, err := url.Parse(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	p, err := New(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Acquire(ctxT(t))
	var pgErr *pgconn.PgError
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Errorf("Acquire with a wrong password = %v, want SQLSTATE 28P01 inside a ConnectError", err)
	}
	if strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("the error shows the password: %v", err)
	}
	if s := p.Stat(); s.TotalConns() != 0 || s.AcquiredConns() != 0 {
		t.Errorf("books: %+v", s.WardStats())
	}
	p.Close()
}

// proxy forwards TCP from a 127.0.0.1 port to the test server until cut.
type proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pr := &proxy{l: l, target: target}
	pr.wg.Go(pr.serve)
	t.Cleanup(pr.cut)
	return pr
}

func (pr *proxy) port() int { return pr.l.Addr().(*net.TCPAddr).Port }

func (pr *proxy) serve() {
	for {
		in, err := pr.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", pr.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		pr.mu.Lock()
		pr.conns = append(pr.conns, in, out)
		pr.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		pr.wg.Go(func() { pipe(out, in) })
		pr.wg.Go(func() { pipe(in, out) })
	}
}

// cut closes the listener and every connection: the server is gone.
func (pr *proxy) cut() {
	_ = pr.l.Close()
	pr.mu.Lock()
	for _, c := range pr.conns {
		_ = c.Close()
	}
	pr.mu.Unlock()
	pr.wg.Wait()
}

// TestServerGoesAway: the server vanishes in the middle of a query. The
// query fails with pgx's error, the broken connection is destroyed, later
// acquires fail with pgx's connect error, and the books stay honest.
func TestServerGoesAway(t *testing.T) {
	noLeftovers(t)
	u, err := url.Parse(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	pr := newProxy(t, u.Host)
	p, err := New(context.Background(), withHost(t, u.String(), pr.port())+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		c, err := p.Acquire(ctx)
		if err != nil {
			errc <- err
			return
		}
		close(started)
		_, err = c.Exec(ctx, "SELECT pg_sleep(30)")
		c.Release()
		errc <- err
	}()
	<-started
	// Let the query reach the server (it would be fine if it had not).
	clocktest.Eventually(t, "query running", func() bool { return p.Stat().AcquiredConns() == 1 })
	pr.cut()
	err = <-errc
	if err == nil {
		t.Fatal("the query survived the server going away")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("mid-query loss reported as %v", err)
	}
	t.Logf("mid-query error: %v", err)
	if s := p.Stat(); s.TotalConns() != 0 || s.AcquiredConns() != 0 || s.WardStats().Dropped != 1 {
		t.Errorf("after the loss: total %d acquired %d %+v", s.TotalConns(), s.AcquiredConns(), s.WardStats())
	}
	_, err = p.Exec(ctx, "SELECT 1")
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		t.Errorf("Exec with the server gone = %v, want a ConnectError", err)
	}
	p.Close()
}

// TestBreakerSheds: with a Breaker in the Ward, a pool in front of a server
// that refuses every connection stops dialling it and fails fast with
// wardpool.ErrShed; without one, every Acquire dials.
func TestBreakerSheds(t *testing.T) {
	noLeftovers(t)
	dsn := withHost(t, testenv.PostgresDSN(t), freePort(t))
	const asks = 100
	run := func(w ward.Ward) (dials int32, shed int) {
		var n atomic.Int32
		c, err := ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		c.Ward = w
		c.BeforeConnect = func(context.Context, *pgx.ConnConfig) error { n.Add(1); return nil }
		p, err := NewWithConfig(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx := ctxT(t)
		for range asks {
			_, err := p.Acquire(ctx)
			var se *wardpool.ShedError
			switch {
			case errors.As(err, &se):
				if !errors.Is(err, wardpool.ErrShed) || se.Guard != ward.GuardBreaker {
					t.Errorf("shed error %v: guard %v", err, se.Guard)
				}
				shed++
			case err == nil:
				t.Fatal("Acquire from a dead server succeeded")
			default:
				var ce *pgconn.ConnectError
				if !errors.As(err, &ce) {
					t.Errorf("Acquire = %v, want a ConnectError or a shed", err)
				}
			}
		}
		if s := p.Stat(); s.TotalConns() != 0 || s.AcquiredConns() != 0 || s.WardStats().Shed != uint64(shed) {
			t.Errorf("books: %+v (shed %d)", s.WardStats(), shed)
		}
		return n.Load(), shed
	}
	plain, plainShed := run(ward.Ward{})
	if plain != asks || plainShed != 0 {
		t.Errorf("without a ward: %d dials, %d shed; want %d, 0", plain, plainShed, asks)
	}
	guarded, shed := run(ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())})
	t.Logf("%d acquires on a dead server: %d dials without a breaker, %d with one (%d shed)", asks, plain, guarded, shed)
	if guarded > asks/2 || shed < asks/2 {
		t.Errorf("with a breaker: %d dials, %d shed; want under half the dials", guarded, shed)
	}
}
