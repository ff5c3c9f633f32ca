package redisward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

func TestBroken(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{redis.TxFailedErr, false},
		{fakeReply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{fakeReply("ERR unknown command"), false},
		{fakeReply("READONLY You can't write against a read only replica."), true},
		{fmt.Errorf("wrapped: %w", fakeReply("NOSCRIPT No matching script")), false},
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{context.Canceled, true},
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{redis.ErrClosed, true},
		{errRedial, true},
	}
	for _, c := range cases {
		if got := broken(c.err); got != c.want {
			t.Errorf("broken(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// fakeReply is an error reply as go-redis reports one: an error with a
// RedisError method.
type fakeReply string

func (e fakeReply) Error() string { return string(e) }
func (fakeReply) RedisError()     {}

func TestFromOptions(t *testing.T) {
	c := FromOptions(&redis.Options{PoolSize: 7, MaxIdleConns: 3, MinIdleConns: 9, ConnMaxIdleTime: -1, ConnMaxLifetime: time.Hour})
	want := pool.Limits{Size: 7, Idle: 3, Life: time.Hour}
	if c.Limits != want || c.MinIdle != 3 {
		t.Errorf("FromOptions: Limits %+v MinIdle %d, want %+v and 3", c.Limits, c.MinIdle, want)
	}
	c = FromOptions(&redis.Options{})
	if c.Limits.Size <= 0 || c.Limits.Idle != c.Limits.Size || c.Limits.Keep != 30*time.Minute || c.Limits.Life != 0 {
		t.Errorf("FromOptions defaults: %+v", c.Limits)
	}
	c = FromOptions(&redis.Options{PoolSize: 20, MaxActiveConns: 5})
	if c.Limits.Size != 5 || c.Limits.Idle != 5 {
		t.Errorf("MaxActiveConns should cap Size: %+v", c.Limits)
	}
}

func TestParseURL(t *testing.T) {
	c, err := ParseURL("redis://user:pw@127.0.0.1:6390/3?pool_size=4&conn_max_idle_time=10s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Options.Addr != "127.0.0.1:6390" || c.Options.DB != 3 || c.Options.Username != "user" || c.Options.Password != "pw" {
		t.Errorf("options: %+v", c.Options)
	}
	if c.Limits != (pool.Limits{Size: 4, Idle: 4, Keep: 10 * time.Second}) {
		t.Errorf("limits: %+v", c.Limits)
	}
	if _, err := ParseURL("http://nope"); !errors.Is(err, ErrConfig) {
		t.Errorf("bad URL: %v, want ErrConfig", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("nil Options: %v", err)
	}
	if _, err := New(ctx, Config{Options: &redis.Options{}, MinIdle: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("negative MinIdle: %v", err)
	}
	if _, err := New(ctx, Config{Options: &redis.Options{}, Limits: pool.Limits{Size: 1}, MinIdle: 2, Lazy: true}); !errors.Is(err, wardpool.ErrConfig) {
		t.Errorf("MinIdle over Size: %v", err)
	}
	// Config.Classes reach the Keeper, which validates them.
	bad := []pool.Class{{Name: "interactive", Reserve: 3}}
	if _, err := New(ctx, Config{Options: &redis.Options{}, Limits: pool.Limits{Size: 2}, Classes: bad, Lazy: true}); !errors.Is(err, wardpool.ErrConfig) || !errors.Is(err, pool.ErrClasses) {
		t.Errorf("a reserve over Size: %v", err)
	}
}

func TestBrokenAllocatesNothing(t *testing.T) {
	reply := fmt.Errorf("wrapped: %w", fakeReply("WRONGTYPE x"))
	joined := errors.Join(io.EOF, fakeReply("ERR y"))
	if broken(joined) {
		t.Error("a joined error holding a reply is a reply")
	}
	n := testing.AllocsPerRun(100, func() {
		_ = broken(redis.Nil)
		_ = broken(reply)
		_ = broken(io.EOF)
	})
	if n != 0 {
		t.Errorf("broken allocates %v times per run", n)
	}
}

// TestNotPooledNamesCommand: the refusal names the command it refused and
// says what to use instead, and stays ErrNotPooled to errors.Is.
func TestNotPooledNamesCommand(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args []any
		want []string
	}{
		{[]any{"SELECT", 1}, []string{"SELECT ", "Options.DB", "Conn()"}},
		{[]any{"auth", "x"}, []string{"AUTH ", "Password"}},
		{[]any{"HELLO", 3}, []string{"HELLO ", "Protocol"}},
		{[]any{"client", "SetName", "n"}, []string{"CLIENT SETNAME ", "ClientName"}},
		{[]any{"CLIENT", "TRACKING", "on"}, []string{"CLIENT TRACKING ", "Conn()"}},
		{[]any{"watch", "k"}, []string{"WATCH ", "Client().Watch"}},
		{[]any{"subscribe", "ch"}, []string{"SUBSCRIBE ", "Client().Subscribe"}},
	} {
		cmd := redis.NewCmd(ctx, c.args...)
		if !sessionCmd(cmd) {
			t.Fatalf("%v is not a session command", c.args)
		}
		err := notPooled(cmd)
		if !errors.Is(err, ErrNotPooled) {
			t.Errorf("%v: %v is not ErrNotPooled", c.args, err)
		}
		var np *NotPooledError
		if !errors.As(err, &np) {
			t.Fatalf("%v: %T is not a *NotPooledError", c.args, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.args, err, w)
			}
		}
	}
	p := &Pool{}
	for _, c := range []struct {
		args []any
		want bool
	}{
		{[]any{"get", "k"}, false},
		{[]any{"hello"}, false},
		{[]any{"hello", 3}, false},
		{[]any{"hello", "3"}, false},
		{[]any{"hello", 2}, true},
		{[]any{"hello", 3, "auth", "u", "p"}, true},
		{[]any{"select", 0}, false},
		{[]any{"select", 1}, true},
	} {
		if got := p.stateful(redis.NewCmd(ctx, c.args...)); got != c.want {
			t.Errorf("stateful%v = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestReqScanner: the scanner of what a borrowed connection's client
// writes finds each command's name and first argument however the bytes
// are split, and says when it loses its place.
func TestReqScanner(t *testing.T) {
	stream := "*2\r\n$6\r\nSELECT\r\n$1\r\n1\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$40\r\n" + strings.Repeat("v", 40) + "\r\n*3\r\n$6\r\nclient\r\n$7\r\nSETNAME\r\n$1\r\nn\r\n"
	want := "select 1 |set k " + strings.Repeat("v", 32) + "|client setname n|"
	for step := 1; step <= len(stream); step++ {
		var s reqScanner
		var got strings.Builder
		for i := 0; i < len(stream); i += step {
			if !s.feed([]byte(stream[i:min(i+step, len(stream))]), func(name, arg, arg2 string) {
				got.WriteString(name + " " + arg + " " + arg2 + "|")
			}) {
				t.Fatalf("step %d: lost its place", step)
			}
		}
		if got.String() != want || !s.idle() {
			t.Fatalf("step %d: %q (idle %v), want %q", step, got.String(), s.idle(), want)
		}
	}
	var s reqScanner
	if s.feed([]byte("PING\r\n"), func(string, string, string) {}) {
		t.Fatal("an inline command did not lose the scanner's place")
	}
}
