package redisward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

const (
	replyReadOnly  = "-READONLY You can't write against a read only replica.\r\n"
	replyWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
)

// respFake is a Redis server played by the test: it reads commands as
// go-redis writes them and answers with what answer returns for the
// connection (numbered from 0 in the order they were accepted) and the
// command. It answers the handshake itself: HELLO is refused as an old
// server refuses it (go-redis goes on in RESP2), PING and CLIENT get their
// usual replies. An answer of "" hangs up without replying.
type respFake struct {
	ln     net.Listener
	answer func(conn int, args []string) string

	mu    sync.Mutex
	conns []net.Conn
	sent  map[string][]int // command name (upper case) → the connection of each
	wg    sync.WaitGroup
}

func newRESPFake(t *testing.T, answer func(conn int, args []string) string) *respFake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &respFake{ln: ln, answer: answer, sent: map[string][]int{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *respFake) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		n := len(f.conns)
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(n, c)
	}
}

func (f *respFake) serve(n int, c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		name := strings.ToUpper(args[0])
		var reply string
		switch name {
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			reply = "+PONG\r\n"
		case "CLIENT":
			reply = "+OK\r\n"
		default:
			f.mu.Lock()
			f.sent[name] = append(f.sent[name], n)
			f.mu.Unlock()
			reply = f.answer(n, args)
		}
		if reply == "" {
			return
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one request: an array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, errors.New("not an array: " + line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return nil, errors.New("bad array: " + line)
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// on returns the connections the command named name was sent on, in order.
func (f *respFake) on(name string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.sent[name]...)
}

func (f *respFake) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// fakePool opens a pool of 4 on f whose Options are o's (Addr and the
// handshake's fields set here) and whose Config is changed by edit.
func fakePool(t *testing.T, f *respFake, o redis.Options, edit func(*Config)) *Pool {
	t.Helper()
	o.Addr = f.ln.Addr().String()
	o.DisableIdentity = true
	cfg := Config{Options: &o, Limits: pool.Limits{Size: 4}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// readOnlyOnFirst answers every command with READONLY on the first
// connection (the old primary) and with 1 on the others.
func readOnlyOnFirst(conn int, args []string) string {
	if conn == 0 {
		return replyReadOnly
	}
	return ":1\r\n"
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A command refused with READONLY is sent again, once, on a connection of
// the generation the reset began, and the caller sees its reply: through
// Do, and through Client(), whose commands run on the pool.
func TestResendReadOnly(t *testing.T) {
	for _, via := range []string{"Do", "Client"} {
		t.Run(via, func(t *testing.T) {
			f := newRESPFake(t, readOnlyOnFirst)
			p := fakePool(t, f, redis.Options{MinRetryBackoff: -1}, nil)
			ctx := context.Background()
			var n int64
			var err error
			if via == "Do" {
				n, err = p.Do(ctx, "INCR", "k").Int64()
			} else {
				n, err = p.Client().Incr(ctx, "k").Result()
			}
			if err != nil || n != 1 {
				t.Fatalf("INCR = %d, %v; want 1 from the new connection", n, err)
			}
			if got := f.on("INCR"); !equalInts(got, []int{0, 1}) {
				t.Fatalf("INCR sent on connections %v, want [0 1]", got)
			}
			if s := p.WardStats(); s.Resets != 1 || s.ResetCauses["READONLY"] != 1 {
				t.Fatalf("resets %d %v, want one READONLY", s.Resets, s.ResetCauses)
			}
		})
	}
}

// A pipeline every command of which was refused unrun is sent again
// whole; one with a command that ran (a GET answered) is not, as sending
// it again would run that command twice. (go-redis sends a pipeline
// again when its first command got such a reply, whatever the others got.)
func TestResendPipeline(t *testing.T) {
	ctx := context.Background()
	f := newRESPFake(t, readOnlyOnFirst)
	p := fakePool(t, f, redis.Options{MinRetryBackoff: -1}, nil)
	cmds, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, "a")
		pipe.Incr(ctx, "b")
		return nil
	})
	if err != nil {
		t.Fatalf("pipeline of two INCRs refused unrun: %v, want it sent again", err)
	}
	for _, c := range cmds {
		if n, err := c.(*redis.IntCmd).Result(); n != 1 || err != nil {
			t.Fatalf("%v = %d, %v", c.Args(), n, err)
		}
	}
	if got := f.on("INCR"); !equalInts(got, []int{0, 0, 1, 1}) {
		t.Fatalf("INCR sent on connections %v, want [0 0 1 1]", got)
	}

	g := newRESPFake(t, func(conn int, args []string) string {
		if strings.EqualFold(args[0], "GET") {
			return "$1\r\nv\r\n"
		}
		return readOnlyOnFirst(conn, args)
	})
	q := fakePool(t, g, redis.Options{MinRetryBackoff: -1}, nil)
	_, err = q.Client().Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Get(ctx, "a")
		pipe.Incr(ctx, "b")
		return nil
	})
	if err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("pipeline of a GET and an INCR: %v, want READONLY", err)
	}
	if got := g.on("GET"); !equalInts(got, []int{0}) {
		t.Fatalf("GET sent on connections %v, want [0]: once", got)
	}
}

// A reply that is the command's own failure (WRONGTYPE), and a network
// error (the server hangs up once it has the command, which it may have
// run), are returned as they are: the command is sent once.
func TestNoResend(t *testing.T) {
	ctx := context.Background()
	f := newRESPFake(t, func(int, []string) string { return replyWrongType })
	p := fakePool(t, f, redis.Options{MinRetryBackoff: -1}, nil)
	if err := p.Do(ctx, "INCR", "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("INCR = %v, want WRONGTYPE", err)
	}
	if got := f.on("INCR"); len(got) != 1 {
		t.Fatalf("INCR answered WRONGTYPE sent %d times, want once", len(got))
	}

	g := newRESPFake(t, func(int, []string) string { return "" })
	q := fakePool(t, g, redis.Options{MinRetryBackoff: -1}, nil)
	err := q.Do(ctx, "INCR", "k").Err()
	if err == nil {
		t.Fatal("INCR on a connection the server closed succeeded")
	}
	if _, ok := replyError(err); ok {
		t.Fatalf("INCR = %v, want a network error", err)
	}
	if got := g.on("INCR"); len(got) != 1 {
		t.Fatalf("INCR lost to a network error sent %d times, want once", len(got))
	}
}

// A command refused unrun by every server is sent at most
// Options.MaxRetries times more: 3 when zero, none when negative.
func TestResendBound(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ retries, sends int }{{-1, 1}, {0, 4}, {1, 2}, {5, 6}} {
		f := newRESPFake(t, func(int, []string) string { return replyReadOnly })
		p := fakePool(t, f, redis.Options{MaxRetries: c.retries, MinRetryBackoff: -1}, nil)
		if err := p.Do(ctx, "INCR", "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
			t.Fatalf("MaxRetries %d: INCR = %v, want READONLY", c.retries, err)
		}
		if got := f.on("INCR"); len(got) != c.sends {
			t.Errorf("MaxRetries %d: INCR sent %d times, want %d", c.retries, len(got), c.sends)
		}
		if s := p.WardStats(); s.Resets != uint64(c.sends) {
			t.Errorf("MaxRetries %d: %d resets, want one a send", c.retries, s.Resets)
		}
	}
}

// The pause before a resend ends with the caller's context: the command
// is not sent again and the caller gets the context's error.
func TestResendStopsWithContext(t *testing.T) {
	clock := clocktest.New(time.Unix(1_000_000, 0))
	f := newRESPFake(t, func(int, []string) string { return replyReadOnly })
	p := fakePool(t, f, redis.Options{MinRetryBackoff: time.Hour, MaxRetryBackoff: time.Hour},
		func(c *Config) { c.Clock = clock })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.Do(ctx, "INCR", "k").Err() }()
	clocktest.Eventually(t, "the pause before the resend", func() bool {
		return len(f.on("INCR")) == 1 && clock.Pending() > 0
	})
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not end with its context")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if got := f.on("INCR"); len(got) != 1 {
		t.Fatalf("INCR sent %d times, want once", len(got))
	}
}

// The pause before resend n lies between MinRetryBackoff and
// MaxRetryBackoff, within MinRetryBackoff×(1+2^n); none when either is
// negative.
func TestRetryPause(t *testing.T) {
	r := newRetryPolicy(&redis.Options{}, nil)
	if r.tries != 3 || r.min != 10*time.Millisecond || r.max != time.Second {
		t.Fatalf("defaults %+v, want go-redis's: 3 retries, 10 ms to 1 s", r)
	}
	for n := 1; n <= 40; n++ {
		for range 20 {
			d := r.pause(n)
			hi := min(r.max, r.min+r.min<<min(n, 30))
			if d < r.min || d > hi {
				t.Fatalf("pause(%d) = %v, want within [%v, %v]", n, d, r.min, hi)
			}
		}
	}
	for _, o := range []redis.Options{{MinRetryBackoff: -1}, {MaxRetryBackoff: -1}} {
		if d := newRetryPolicy(&o, nil).pause(2); d != 0 {
			t.Fatalf("%+v: pause %v, want none", o, d)
		}
	}
}

// With HoldOnFailover, the resend after a READONLY waits in the hold: the
// first dial after the reset fails (the new primary is not reachable
// yet), the caller is held rather than given the dial's error, the next
// dial, one hold step later on the pool's clock, reaches the new primary,
// and the caller gets its reply. Without the hold the caller gets the
// dial's error.
func TestResendWaitsInTheHold(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(map[bool]string{true: "hold", false: "no hold"}[hold], func(t *testing.T) {
			clock := clocktest.New(time.Unix(1_000_000, 0))
			f := newRESPFake(t, readOnlyOnFirst)
			var mu sync.Mutex
			dials := 0
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				n := dials
				dials++
				mu.Unlock()
				if n == 1 { // the first dial after the reset
					return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connect: connection refused")}
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			dialed := func() int {
				mu.Lock()
				defer mu.Unlock()
				return dials
			}
			p := fakePool(t, f, redis.Options{MinRetryBackoff: -1, Dialer: dial}, func(c *Config) {
				c.Clock = clock
				if hold {
					c.HoldOnFailover = time.Hour
				}
			})
			type result struct {
				n   int64
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := p.Do(context.Background(), "INCR", "k").Int64()
				done <- result{n, err}
			}()
			if !hold {
				r := <-done
				var oe *net.OpError
				if !errors.As(r.err, &oe) {
					t.Fatalf("INCR = %d, %v; want the failed dial's error", r.n, r.err)
				}
				return
			}
			clocktest.Eventually(t, "the failed dial and the hold's timer", func() bool {
				return dialed() == 2 && p.WardStats().Holding
			})
			select {
			case r := <-done:
				t.Fatalf("INCR ended in the hold: %d, %v", r.n, r.err)
			default:
			}
			clocktest.Eventually(t, "the hold's next dial", func() bool {
				if dialed() < 3 {
					clock.Advance(pool.DefaultHoldEvery)
				}
				return dialed() >= 3
			})
			r := <-done
			if r.err != nil || r.n != 1 {
				t.Fatalf("INCR = %d, %v; want 1 from the connection the hold made", r.n, r.err)
			}
			if got := f.on("INCR"); !equalInts(got, []int{0, 1}) {
				t.Fatalf("INCR sent on connections %v, want [0 1]", got)
			}
		})
	}
}

// Every error reply of a pipeline is classified, not only its first
// error: a READONLY after a nil GET resets the pool. The pipeline is not
// sent again (the GET ran).
func TestPipelineClassifiesEveryReply(t *testing.T) {
	ctx := context.Background()
	f := newRESPFake(t, func(conn int, args []string) string {
		if strings.EqualFold(args[0], "GET") {
			return "$-1\r\n"
		}
		return readOnlyOnFirst(conn, args)
	})
	p := fakePool(t, f, redis.Options{MinRetryBackoff: -1}, nil)
	cmds, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Get(ctx, "a")
		pipe.Incr(ctx, "b")
		return nil
	})
	if err != redis.Nil || len(cmds) != 2 || !strings.HasPrefix(fmt.Sprint(cmds[1].Err()), "READONLY") {
		t.Fatalf("pipeline = %v (%v); want redis.Nil first and the INCR's READONLY", err, cmds)
	}
	if s := p.WardStats(); s.Resets != 1 || s.ResetCauses["READONLY"] != 1 {
		t.Fatalf("resets %d %v, want one READONLY", s.Resets, s.ResetCauses)
	}
	if got := f.on("INCR"); len(got) != 1 {
		t.Fatalf("INCR sent %d times, want once", len(got))
	}
}
