package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is one redis-server process of the test's own, bound to 127.0.0.1
// on a port of its own. Its data lives in a directory of the test's and
// persists nothing unless the extra arguments say so.
type Redis struct {
	// Addr is host:port, the same across restarts.
	Addr string
	// Dir is the server's working directory (its log is Dir/log).
	Dir string

	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// RedisBinary returns the path of redis-server, or skips the test.
func RedisBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH: skipping a test that starts its own (./scripts/test installs it)")
	}
	return bin
}

// FreePort returns a loopback port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartRedis starts a redis-server on a free loopback port, with extra
// arguments appended to its command line (for example "--replicaof",
// "127.0.0.1", "6380", or "--cluster-enabled", "yes"), and waits until it
// answers PING. It is stopped when the test ends.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	return StartRedisOn(t, FreePort(t), extra...)
}

// StartRedisOn is StartRedis on a given port.
func StartRedisOn(t testing.TB, port int, extra ...string) *Redis {
	t.Helper()
	bin := RedisBinary(t)
	dir := t.TempDir()
	r := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir}
	r.args = append([]string{bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "log")}, extra...)
	t.Cleanup(r.Stop)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// StartRedisIn is StartRedis in the network namespace ns: the server
// listens on every address of ns, and Addr is ns.Addrs[0] with its port,
// reached over the namespace's link. Protected mode is off: only the
// test's end of the link reaches the namespace.
func StartRedisIn(t testing.TB, ns *Netns, extra ...string) *Redis {
	t.Helper()
	bin := RedisBinary(t)
	dir := t.TempDir()
	port := strconv.Itoa(FreePort(t))
	r := &Redis{Addr: net.JoinHostPort(ns.Addrs[0], port), Dir: dir}
	r.args = append([]string{"ip", "netns", "exec", ns.Name, bin, "--bind", "0.0.0.0", "--port", port,
		"--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "log")}, extra...)
	t.Cleanup(r.Stop)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// Start starts the server again after Stop or Kill (a no-op while it runs)
// and waits, up to 10 s, until it answers PING.
func (r *Redis) Start() error {
	r.mu.Lock()
	if r.cmd == nil {
		cmd := exec.Command(r.args[0], r.args[1:]...)
		if err := cmd.Start(); err != nil {
			r.mu.Unlock()
			return fmt.Errorf("servers: start redis-server on %s: %w", r.Addr, err)
		}
		r.cmd = cmd
	}
	r.mu.Unlock()
	return r.waitUp(10 * time.Second)
}

func (r *Redis) waitUp(limit time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(limit)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("servers: redis-server on %s did not answer within %v: %w (log: %s)",
				r.Addr, limit, err, r.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail returns the end of the server's log, for an error message.
func (r *Redis) tail() string {
	b, _ := os.ReadFile(filepath.Join(r.Dir, "log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Client returns a go-redis client of the server, closed when the test
// ends.
func (r *Redis) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the process was started and not stopped since.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Kill ends the server at once (SIGKILL: no shutdown, connections reset).
func (r *Redis) Kill() { r.end(syscall.SIGKILL) }

// Stop ends the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
// It is safe to call when the server is not running.
func (r *Redis) Stop() { r.end(syscall.SIGTERM) }

func (r *Redis) end(sig syscall.Signal) {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a frozen server must hear it
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Freeze stops the process without ending it (SIGSTOP): its sockets stay
// open and nothing answers, as on a hung host. Thaw resumes it.
func (r *Redis) Freeze() { r.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (r *Redis) Thaw() { r.signal(syscall.SIGCONT) }

func (r *Redis) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}
