package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartSentinel starts a Redis Sentinel (redis-server --sentinel) on a
// free loopback port that monitors master under the name name, with a
// quorum of one, a master counted down after 1 s without an answer and a
// failover timeout of 5 s. It is stopped when the test ends. Its
// configuration file, which Sentinel rewrites as it learns, is Dir/sentinel.conf.
func StartSentinel(t testing.TB, name string, master *Redis) *Redis {
	t.Helper()
	bin := RedisBinary(t)
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := FreePort(t)
	conf := strings.Join([]string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(p),
		"dir " + dir,
		"logfile " + filepath.Join(dir, "log"),
		fmt.Sprintf("sentinel monitor %s %s %s 1", name, host, port),
		"sentinel down-after-milliseconds " + name + " 1000",
		"sentinel failover-timeout " + name + " 5000",
		"sentinel parallel-syncs " + name + " 1",
		"",
	}, "\n")
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(p), Dir: dir, args: []string{bin, path, "--sentinel"}}
	t.Cleanup(s.Stop)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// StartReplica starts a redis-server replicating master and waits, up to
// 10 s, until its link to the master is up.
func StartReplica(t testing.TB, master *Redis) *Redis {
	t.Helper()
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	r := StartRedis(t, "--replicaof", host, port)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers: replica %s did not link to %s within 10 s: %v %s", r.Addr, master.Addr, err, r.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitSentinelReplicas waits, up to 20 s, until the Sentinel at s knows
// n replicas of the master name whose link is up, as a failover needs.
func WaitSentinelReplicas(t testing.TB, s *Redis, name string, n int) {
	t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		reps, err := c.Replicas(context.Background(), name).Result()
		ok := 0
		for _, r := range reps {
			if r["master-link-status"] == "ok" && !strings.Contains(r["flags"], "down") && !strings.Contains(r["flags"], "disconnected") {
				ok++
			}
		}
		if err == nil && ok >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers: Sentinel %s knows %d healthy replicas of %s after 20 s, want %d: %v %v", s.Addr, ok, name, n, err, reps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MasterAddr returns the master address Sentinel s gives for name.
func MasterAddr(s *Redis, name string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	a, err := c.GetMasterAddrByName(context.Background(), name).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// Failover asks Sentinel s to fail the master name over to a replica now
// (SENTINEL FAILOVER) and waits, up to 20 s, until it gives another master
// address, which it returns.
func Failover(s *Redis, name string) (string, error) {
	old, err := MasterAddr(s, name)
	if err != nil {
		return "", err
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Failover(context.Background(), name).Err(); err != nil {
		return "", fmt.Errorf("servers: SENTINEL FAILOVER %s: %w", name, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		now, err := MasterAddr(s, name)
		if err == nil && now != old {
			return now, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("servers: Sentinel %s still gives %s for %s 20 s after SENTINEL FAILOVER: %v (log: %s)", s.Addr, old, name, err, s.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Demote makes the server at old a replica of master (REPLICAOF), as
// Sentinel does to an old master that is still up once it notices it
// (its next look at the server, some 8 to 18 s after a failover with the
// settings of StartSentinel): a test does it at once to keep short.
func Demote(old *Redis, master string) error {
	host, port, err := net.SplitHostPort(master)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: old.Addr, MaxRetries: -1})
	defer c.Close()
	return c.ReplicaOf(context.Background(), host, port).Err()
}
