package redisward

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/testenv"
)

// server is a redis-server this test started on loopback, so that it may
// stop and restart it: the tests of what a budget does while its store is
// gone. Its data lives in memory only, so a restart loses everything, as a
// server without persistence does.
type server struct {
	t    *testing.T
	args []string
	Addr string
	cmd  *exec.Cmd
}

// ownRedis starts a redis-server of the test's own, stopped when the test
// ends. It runs where ./scripts/test runs the integration tests, and skips
// elsewhere, or when redis-server is not installed.
func ownRedis(t *testing.T, extra ...string) *server {
	t.Helper()
	testenv.RedisAddr(t) // skips unless ./scripts/test (or a developer) set up Redis
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH: skipping a test that stops and starts its own server (./scripts/test installs it)")
	}
	port := freePort(t)
	dir := t.TempDir()
	s := &server{t: t, Addr: "127.0.0.1:" + strconv.Itoa(port), args: append([]string{
		bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
	}, extra...)}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the server and waits until it answers PING.
func (s *server) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer PING in 10s", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would) and waits for it to exit.
func (s *server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// ownCluster starts three redis-servers in cluster mode on loopback and
// joins them into a cluster of three masters (redis-cli --cluster create),
// and returns their addresses; it skips when redis-cli is missing.
func ownCluster(t *testing.T) []string {
	t.Helper()
	testenv.RedisAddr(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH: skipping the Redis Cluster test (./scripts/test installs it with redis-server)")
	}
	var addrs []string
	for range 3 {
		s := ownRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		addrs = append(addrs, s.Addr)
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, _ := c.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("the cluster on %v did not reach cluster_state:ok in 20s", addrs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return addrs
}
