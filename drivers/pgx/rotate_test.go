package pgxward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
)

// The rolling rotation's proof on PostgreSQL (issue 33, item 2): a role's
// password is changed under load and every connection replaced over a
// window, while dials are slow and some are in flight as it starts;
// pgxpool's Reset, under the same load, beside it.

const (
	rotConns    = 32              // MaxConns of each pool
	rotWorkers  = 64              // goroutines querying
	rotOver     = 5 * time.Second // the rotation's window
	rotSlow     = 300 * time.Millisecond
	rotInFlight = 4 // connections dropped just before the rotation, so that their replacements are being dialled as it starts
)

// rotHooks are one pool's connection hooks: the password each new
// connection uses, a dial made slower after the connection is open (so a
// dial in flight has a backend already), connections dropped on release
// on demand, and the start of every dial.
type rotHooks struct {
	password atomic.Pointer[string]
	slow     atomic.Bool
	drop     atomic.Int32

	mu    sync.Mutex // guards dials
	dials []time.Time
}

func (h *rotHooks) beforeConnect(_ context.Context, cc *pgx.ConnConfig) error {
	h.mu.Lock()
	h.dials = append(h.dials, time.Now())
	h.mu.Unlock()
	cc.Password = *h.password.Load()
	return nil
}

func (h *rotHooks) afterConnect(ctx context.Context, _ *pgx.Conn) error {
	if !h.slow.Load() {
		return nil
	}
	select {
	case <-time.After(rotSlow):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// afterRelease drops the connection while drop is above zero.
func (h *rotHooks) afterRelease(*pgx.Conn) bool {
	for {
		n := h.drop.Load()
		if n <= 0 {
			return true
		}
		if h.drop.CompareAndSwap(n, n-1) {
			return false
		}
	}
}

// dialsFrom returns the starts of the dials at from or later, as offsets.
func (h *rotHooks) dialsFrom(from time.Time) []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []time.Duration
	for _, d := range h.dials {
		if !d.Before(from) {
			out = append(out, d.Sub(from))
		}
	}
	return out
}

// execer is what the load needs of a pool: pgxward's and pgxpool's Exec.
type execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// rotLoad is rotWorkers goroutines each running a 10 ms query, then
// pausing 10 ms, until stop: about rotConns connections busy.
type rotLoad struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	ok, fail atomic.Int64
	firstErr atomic.Pointer[error]
}

func startRotLoad(q execer) *rotLoad {
	l := &rotLoad{stop: make(chan struct{})}
	for range rotWorkers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := q.Exec(ctx, "SELECT pg_sleep(0.01)")
				cancel()
				if err != nil {
					l.fail.Add(1)
					l.firstErr.CompareAndSwap(nil, &err)
				} else {
					l.ok.Add(1)
				}
				select {
				case <-l.stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
	return l
}

// end stops the load and waits for it.
func (l *rotLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// rotRole is a login role of the test's own on the test server, and an
// administrator's connection to change it and read pg_stat_activity.
type rotRole struct {
	name  string
	admin *pgx.Conn
}

func newRotRole(t *testing.T) *rotRole {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	if !testenv.PostgresThrowaway() {
		t.Skipf("%s not 1: this test creates a role and changes its password, on a server ./scripts/test started only", testenv.PostgresThrowawayVar)
	}
	ctx := ctxT(t)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := &rotRole{name: fmt.Sprintf("wardpool_rot_%d", time.Now().UnixNano()), admin: admin}
	if _, err := admin.Exec(ctx, "CREATE ROLE "+r.ident()+" LOGIN PASSWORD "+quote(secret(t))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", r.name)
		if _, err := admin.Exec(ctx, "DROP ROLE "+r.ident()); err != nil {
			t.Logf("DROP ROLE %s: %v", r.name, err)
		}
		_ = admin.Close(ctx)
	})
	return r
}

func (r *rotRole) ident() string { return pgx.Identifier{r.name}.Sanitize() }

// setPassword changes the role's password on the server.
func (r *rotRole) setPassword(t *testing.T, pw string) {
	t.Helper()
	if _, err := r.admin.Exec(ctxT(t), "ALTER ROLE "+r.ident()+" PASSWORD "+quote(pw)); err != nil {
		t.Fatal(err)
	}
}

// backends counts the role's sessions of application app, and those of
// them that began before before.
func (r *rotRole) backends(t *testing.T, app string, before time.Time) (all, old int) {
	t.Helper()
	err := r.admin.QueryRow(ctxT(t), `SELECT count(*), count(*) FILTER (WHERE backend_start < $3)
		FROM pg_stat_activity WHERE usename = $1 AND application_name = $2`, r.name, app, before).Scan(&all, &old)
	if err != nil {
		t.Fatal(err)
	}
	return all, old
}

// connConfig is the test server's connection config for the role, as
// application app, with the hooks' password.
func (r *rotRole) connConfig(t *testing.T, app string) *pgx.ConnConfig {
	t.Helper()
	cc, err := pgx.ParseConfig(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cc.User, cc.Password = r.name, ""
	cc.RuntimeParams["application_name"] = app
	return cc
}

// secret returns a fresh random password.
func secret(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func quote(s string) string { return "'" + s + "'" } // s is hex: nothing to escape

// rotSide is what the proof needs of a pool beside its queries.
type rotSide struct {
	name    string
	q       execer
	counts  func() (total, dialing int) // connections open or being opened, and being opened
	replace func()                      // Rotate(rotOver), or the peer's Reset
}

// rotFigures is what one side's run measured.
type rotFigures struct {
	ok, failed int64
	firstErr   error
	inFlight   int    // dials in flight when the replacement began
	perSecond  [6]int // dials begun in each second from then on (the window, and the second after)
	peak       int    // the most in one of the window's seconds
	sliding    int    // the most begun within any 1 s span starting in the window
	all, left  int    // the role's sessions 1 s after the window, and those of them begun before the replacement
}

// rotRun runs one side: load on a pool of rotConns warmed with the first
// password; the password changed on the server and in the hooks; slow
// dials, rotInFlight connections dropped so that their replacements are
// being dialled; then the side's replacement; the sessions counted 1 s
// after the window.
func rotRun(t *testing.T, r *rotRole, h *rotHooks, app string, s rotSide) rotFigures {
	t.Helper()
	var f rotFigures
	load := startRotLoad(s.q)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			load.end()
		}
	}
	defer stop()
	// Warm: rotConns open, none being opened, for a second.
	if !poll(20*time.Second, func() bool { total, dialing := s.counts(); return total == rotConns && dialing == 0 }) {
		total, dialing := s.counts()
		t.Fatalf("%s: %d connections, %d being opened, 20 s into the load; want %d and none", s.name, total, dialing, rotConns)
	}
	time.Sleep(time.Second)
	if _, dialing := s.counts(); dialing != 0 {
		t.Fatalf("%s: a dial began with no reason before the password changed", s.name)
	}
	pw := secret(t)
	r.setPassword(t, pw) // the sessions open stay valid: rotation is what ends them
	h.password.Store(&pw)

	h.slow.Store(true)
	h.drop.Store(rotInFlight)
	poll(5*time.Second, func() bool { _, dialing := s.counts(); return dialing >= rotInFlight })
	_, f.inFlight = s.counts()
	start := time.Now()
	s.replace()

	time.Sleep(time.Until(start.Add(rotOver + time.Second)))
	f.all, f.left = r.backends(t, app, start)
	stop()
	f.ok, f.failed = load.ok.Load(), load.fail.Load()
	if p := load.firstErr.Load(); p != nil {
		f.firstErr = *p
	}
	dials := h.dialsFrom(start)
	for i, d := range dials {
		if sec := int(d / time.Second); sec < len(f.perSecond) {
			f.perSecond[sec]++
		}
		if d < rotOver {
			n := 0
			for _, e := range dials[i:] {
				if e-d < time.Second {
					n++
				}
			}
			f.sliding = max(f.sliding, n)
		}
	}
	for _, n := range f.perSecond[:5] {
		f.peak = max(f.peak, n)
	}
	return f
}

// poll reports whether cond became true, checking every 10 ms for up to d.
func poll(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestRotateBesidePgxpool: 32 connections under load (64 goroutines of
// 10 ms queries), the role's password changed with ALTER ROLE (the
// sessions open stay valid), BeforeConnect giving the new one; each dial
// 300 ms slower, four being dialled as the rotation starts; then
// Rotate(5s). No query fails; no session of the role begun before the
// rotation is open 1 s after the window; no more than 1.5 × 32/5 dials
// begin in any second of the window. pgxpool, with the same hooks and
// load, Resets at once: its figures are logged beside ours.
func TestRotateBesidePgxpool(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two pools of 32 under load for some 10 s each")
	}
	if !testenv.Full() {
		t.Skipf("two pools of 32 under load, some 20 s: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	r := newRotRole(t)
	limit := 1.5 * rotConns / rotOver.Seconds()

	var ours, theirs rotFigures
	var stats wardpool.Stats
	t.Run("pgxward", func(t *testing.T) {
		h := &rotHooks{}
		first := secret(t)
		r.setPassword(t, first)
		h.password.Store(&first)
		c, err := ParseConfig(testenv.PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		app := "wardpool-rotate-pgxward"
		c.ConnConfig = r.connConfig(t, app)
		c.MaxConns = rotConns
		c.BeforeConnect, c.AfterConnect, c.AfterRelease = h.beforeConnect, h.afterConnect, h.afterRelease
		c.Logger = quiet()
		p, err := NewWithConfig(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ours = rotRun(t, r, h, app, rotSide{
			name: "pgxward",
			q:    p,
			counts: func() (int, int) {
				s := p.WardStats()
				return s.Live, s.Dialing
			},
			replace: func() { p.Rotate(rotOver) },
		})
		stats = p.WardStats()
		t.Logf("pgxward: %+v (per second %v), rotating %d, reset causes %v", ours, ours.perSecond, stats.Rotating, stats.ResetCauses)
		if ours.failed != 0 {
			t.Errorf("%d of %d queries failed through the rotation (first: %v), want none", ours.failed, ours.ok+ours.failed, ours.firstErr)
		}
		if ours.left != 0 {
			t.Errorf("%d sessions begun before the rotation still open 1 s after its window, want none", ours.left)
		}
		if float64(ours.peak) > limit {
			t.Errorf("%d dials began in one second of the window (per second %v), want at most %.1f", ours.peak, ours.perSecond, limit)
		}
		if ours.inFlight < 1 {
			t.Errorf("no dial in flight as the rotation began: the proof did not try what it says")
		}
		if stats.Rotating != 0 || stats.ResetCauses[wardpool.CauseRotate] != 1 {
			t.Errorf("after the window: Rotating %d, reset causes %v; want 0 and one %q", stats.Rotating, stats.ResetCauses, wardpool.CauseRotate)
		}
		if n := ours.perSecond[0] + ours.perSecond[1] + ours.perSecond[2] + ours.perSecond[3] + ours.perSecond[4] + ours.perSecond[5]; n < rotConns {
			t.Errorf("%d dials in the window and the second after, want at least %d (each connection replaced)", n, rotConns)
		}
	})
	t.Run("pgxpool", func(t *testing.T) {
		h := &rotHooks{}
		first := secret(t)
		r.setPassword(t, first)
		h.password.Store(&first)
		pc, err := pgxpool.ParseConfig(testenv.PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		app := "wardpool-rotate-pgxpool"
		pc.ConnConfig = r.connConfig(t, app)
		pc.MaxConns = rotConns
		pc.BeforeConnect, pc.AfterConnect, pc.AfterRelease = h.beforeConnect, h.afterConnect, h.afterRelease
		pp, err := pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			t.Fatal(err)
		}
		defer pp.Close()
		theirs = rotRun(t, r, h, app, rotSide{
			name: "pgxpool",
			q:    pp,
			counts: func() (int, int) {
				s := pp.Stat()
				return int(s.TotalConns()), int(s.ConstructingConns())
			},
			replace: pp.Reset,
		})
		t.Logf("pgxpool: %+v (per second %v)", theirs, theirs.perSecond)
	})
	t.Logf("rotation of %d connections under %d goroutines, dials %v slower, %d/%d in flight at the start; pgxward Rotate(%v) | pgxpool Reset()", rotConns, rotWorkers, rotSlow, ours.inFlight, theirs.inFlight, rotOver)
	t.Logf("queries failed:                          %d of %d | %d of %d", ours.failed, ours.ok+ours.failed, theirs.failed, theirs.ok+theirs.failed)
	t.Logf("dials per second, window then +1 s:      %v | %v", ours.perSecond, theirs.perSecond)
	t.Logf("most dials in one second (limit %.1f):    %d (any 1 s span: %d) | %d (any 1 s span: %d)", limit, ours.peak, ours.sliding, theirs.peak, theirs.sliding)
	t.Logf("sessions begun before, open 1 s after:  %d of %d | %d of %d", ours.left, ours.all, theirs.left, theirs.all)
}
