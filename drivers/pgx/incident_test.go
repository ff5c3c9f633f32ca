package pgxward

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

type ctorKey struct{}

// stuckConfig is a config whose every dial hangs in BeforeConnect until its
// context ends, reporting that context on seen. It needs no server.
func stuckConfig(t *testing.T, seen chan<- context.Context) *Config {
	t.Helper()
	c, err := ParseConfig("host=127.0.0.1 port=1 sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	c.MaxConns = 1
	c.MinIdleConns = 1
	c.BeforeConnect = func(ctx context.Context, _ *pgx.ConnConfig) error {
		select {
		case seen <- ctx:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return c
}

// newStuck builds a pool on c with a constructor context carrying a value,
// closed when the test ends.
func newStuck(t *testing.T, c *Config) *Pool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctorKey{}, "ctor"))
	cancel() // its cancellation must not reach the dials
	p, err := NewWithConfig(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.CloseContext(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func next(t *testing.T, seen <-chan context.Context) context.Context {
	t.Helper()
	select {
	case ctx := <-seen:
		return ctx
	case <-time.After(10 * time.Second):
		t.Fatal("no dial began within 10s")
		return nil
	}
}

func TestDialTimeoutDefault(t *testing.T) {
	c, err := ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if c.DialTimeout != DefaultDialTimeout || DefaultDialTimeout != time.Minute {
		t.Errorf("ParseConfig's DialTimeout = %v (DefaultDialTimeout %v), want pgxpool's one minute", c.DialTimeout, DefaultDialTimeout)
	}
}

// A background dial gets the bounded time DialTimeout gives it, zero meaning
// the default, and carries the constructor context's values but not its
// cancellation, as pgxpool's first background dials do.
func TestBackgroundDialBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		lo, hi   time.Duration // the bound the dial sees, from its start
		deadline bool
	}{
		{"zero is the default", 0, DefaultDialTimeout - 5*time.Second, DefaultDialTimeout, true},
		{"set", 10 * time.Second, 5 * time.Second, 10 * time.Second, true},
		{"negative is no bound", -1, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan context.Context, 1)
			c := stuckConfig(t, seen)
			c.DialTimeout = tc.timeout
			newStuck(t, c)
			ctx := next(t, seen)
			if got := ctx.Value(ctorKey{}); got != "ctor" {
				t.Errorf("the dial's context has value %v, want the constructor's", got)
			}
			if err := ctx.Err(); err != nil {
				t.Errorf("the dial's context ended at once (%v): the constructor's cancellation reached it", err)
			}
			d, ok := ctx.Deadline()
			if ok != tc.deadline {
				t.Fatalf("the dial's context has a deadline: %v, want %v", ok, tc.deadline)
			}
			if left := time.Until(d); ok && (left <= tc.lo || left > tc.hi) {
				t.Errorf("the dial's deadline is %v away, want in (%v, %v]", left, tc.lo, tc.hi)
			}
		})
	}
}

// A background dial that runs out of time fails, is counted, and is tried
// again; the pool keeps serving errors, not hanging.
func TestBackgroundDialRetried(t *testing.T) {
	seen := make(chan context.Context, 1)
	c := stuckConfig(t, seen)
	c.DialTimeout = 50 * time.Millisecond
	p := newStuck(t, c)
	first := next(t, seen)
	second := next(t, seen)
	if first == second {
		t.Fatal("the retry reused the first dial's context")
	}
	if !errors.Is(first.Err(), context.DeadlineExceeded) {
		t.Errorf("the first dial's context ended with %v, want its deadline", first.Err())
	}
	if n := p.Stat().WardStats().DialTimeouts; n < 1 {
		t.Errorf("Stats.DialTimeouts = %d after a dial ran out, want 1 or more", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Acquire(ctx); err == nil {
		t.Error("Acquire succeeded on a pool whose every dial hangs")
	}
}

// pingGate holds a connection's reads while slow is set, so that a ping is
// still waiting for its answer when the caller's context ends: started
// says a read is held, and the reads go on once release is closed, which
// the test does itself, or a deadline set on the connection does once it
// has passed (pgx sets one when the ping's context ends, at once or after
// its cancel request's delay), so that the read then fails by it.
type pingGate struct {
	slow    atomic.Bool
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newPingGate() *pingGate {
	return &pingGate{started: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *pingGate) open() { g.once.Do(func() { close(g.release) }) }

type slowConn struct {
	net.Conn
	g *pingGate
}

func (c slowConn) Read(b []byte) (int, error) {
	if c.g.slow.Load() {
		select {
		case c.g.started <- struct{}{}:
		default:
		}
		<-c.g.release
	}
	return c.Conn.Read(b)
}

func (c slowConn) SetDeadline(t time.Time) error {
	c.g.openAt(t)
	return c.Conn.SetDeadline(t)
}

func (c slowConn) SetReadDeadline(t time.Time) error {
	c.g.openAt(t)
	return c.Conn.SetReadDeadline(t)
}

// openAt opens the gate just after deadline t, when one is set while
// reads are held.
func (g *pingGate) openAt(t time.Time) {
	if !t.IsZero() && g.slow.Load() {
		time.AfterFunc(time.Until(t)+time.Millisecond, g.open)
	}
}

// A caller who gives up during the liveness ping does not cost the pool its
// connection, and never gets a closed one lent: with a cancel (no deadline)
// the ping finishes on its own and the connection is kept, as pgxpool's
// TestPoolAcquireCanceledDuringPingKeepsConn asks; with a deadline the ping
// is cut at it, pgx closes the connection, and the Keeper's re-check
// destroys it, so the next Acquire gets a new, working one. The cancel
// comes once the ping is held; a deadline that passed before the ping
// began (a stalled machine) proves nothing, and the case is tried again.
func TestCanceledPing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline bool
		kept     bool
	}{
		{"cancel keeps the connection", false, true},
		{"deadline replaces the closed connection", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for try := 1; ; try++ {
				if canceledPing(t, tc.deadline, tc.kept) {
					return
				}
				if try == 5 {
					t.Fatal("the deadline passed before the ping began, five times")
				}
			}
		})
	}
}

// canceledPing is one try of TestCanceledPing; false when the deadline
// passed before the ping began.
func canceledPing(t *testing.T, deadline, kept bool) bool {
	g := newPingGate()
	p := newPool(t, func(c *Config) {
		c.MaxConns = 1
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return slowConn{Conn: conn, g: g}, nil
		}
		c.ShouldPing = func(context.Context, ShouldPingParams) bool { return true }
	})
	ctx := context.Background()
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := conn.Conn()
	conn.Release()

	g.slow.Store(true)
	var short context.Context
	var cancel context.CancelFunc
	if deadline {
		short, cancel = context.WithTimeout(ctx, 30*time.Millisecond)
	} else {
		short, cancel = context.WithCancel(ctx)
		go func() {
			select {
			case <-g.started:
				cancel()
			case <-short.Done():
			}
		}()
	}
	_, err = p.Acquire(short)
	cancel()
	began := false
	select {
	case <-g.started:
		began = true
	default:
		began = !deadline // the cancel came from the ping's start
	}
	g.slow.Store(false)
	if deadline {
		// The deadline pgx set opens the gate; in case none comes, the
		// test does, late, and the checks below fail.
		time.AfterFunc(5*time.Second, g.open)
	} else {
		g.open()
	}
	if !began {
		g.open()
		return false
	}
	if err == nil || !errors.Is(err, short.Err()) {
		t.Fatalf("Acquire during a slow ping: %v, want its context's error", err)
	}

	// The re-check holds the only connection until the ping has ended:
	// this Acquire waits for it, then gets it or a new one.
	conn, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if got := conn.Conn() == first; got != kept {
		t.Errorf("the connection after the interrupted ping is the first one: %v, want %v", got, kept)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("Exec on the connection lent next: %v", err)
	}
	want := int64(2)
	if kept {
		want = 1
	}
	if n := p.Stat().NewConnsCount(); n != want {
		t.Errorf("NewConnsCount = %d, want %d", n, want)
	}
	return true
}
