package servers

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of the test's own on loopback: masters and
// their replicas, each a Redis of its own whose cluster bus listens on a
// second free port (cluster-port). A node killed and started again keeps
// its identity (its nodes file lives in its directory) and rejoins.
type Cluster struct {
	// Nodes are the servers, masters first as created.
	Nodes []*Redis
	// NodeTimeout is the cluster-node-timeout every node runs with: how long
	// a master may be unreachable before its replica takes over.
	NodeTimeout time.Duration
}

// RedisCLI returns the path of redis-cli, or skips the test.
func RedisCLI(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not on PATH: skipping a test that creates its own Redis Cluster (./scripts/test installs redis-server, which brings it)")
	}
	return bin
}

// StartCluster starts masters × (1 + replicas) redis-servers in cluster
// mode on loopback, with cluster-node-timeout nodeTimeout, joins them with
// redis-cli --cluster create (the slots split evenly between the masters,
// replicas following masters), and waits until every node reports
// cluster_state:ok and every replica's link to its master is up. The
// servers are stopped when the test ends.
func StartCluster(t testing.TB, masters, replicas int, nodeTimeout time.Duration) *Cluster {
	t.Helper()
	RedisBinary(t)
	cli := RedisCLI(t)
	if masters < 3 {
		t.Fatalf("servers: a Redis Cluster needs at least 3 masters, asked for %d", masters)
	}
	c := &Cluster{NodeTimeout: nodeTimeout}
	args := []string{"--cluster", "create"}
	for range masters * (1 + replicas) {
		r := StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			// A replica syncs at once, not after the default 5 s wait for others.
			"--repl-diskless-sync-delay", "0",
			"--cluster-port", strconv.Itoa(FreePort(t)),
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10))
		c.Nodes = append(c.Nodes, r)
		args = append(args, r.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("servers: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// Addrs returns every node's host:port, the seeds of a cluster client.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return a
}

// Client returns a go-redis cluster client of the cluster with go-redis's
// defaults, edited by edit when it is not nil, closed when the test ends.
func (c *Cluster) Client(t testing.TB, edit func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := &redis.ClusterOptions{Addrs: c.Addrs()}
	if edit != nil {
		edit(o)
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// ask runs one command on one node, on a connection of its own, giving up
// after half a second (a frozen node does not hold a caller long).
func ask(ctx context.Context, addr string, args ...any) (any, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, PoolSize: 1})
	defer cl.Close()
	return cl.Do(ctx, args...).Result()
}

// WaitOK waits, up to limit, until every running node reports
// cluster_state:ok, every running replica's link to its master is up, and
// every master with slots has a running replica when it had one.
func (c *Cluster) WaitOK(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := c.ok()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("servers: the cluster was not ok within %v: %w", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) ok() error {
	ctx := context.Background()
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		v, err := ask(ctx, n.Addr, "cluster", "info")
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", n.Addr, err)
		}
		if s, _ := v.(string); !strings.Contains(s, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster state not ok", n.Addr)
		}
		v, err = ask(ctx, n.Addr, "info", "replication")
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", n.Addr, err)
		}
		if s, _ := v.(string); strings.Contains(s, "role:slave") && !strings.Contains(s, "master_link_status:up") {
			return fmt.Errorf("%s: a replica whose link to its master is down", n.Addr)
		}
	}
	return nil
}

// Slot returns the cluster's hash slot of key (CLUSTER KEYSLOT).
func (c *Cluster) Slot(key string) (int, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		v, err := ask(context.Background(), n.Addr, "cluster", "keyslot", key)
		if err != nil {
			continue
		}
		if s, ok := v.(int64); ok {
			return int(s), nil
		}
	}
	return 0, fmt.Errorf("servers: no running node told the slot of %q", key)
}

// MasterOf returns the node that a running node's CLUSTER NODES names as
// the healthy master serving key's slot.
func (c *Cluster) MasterOf(key string) (*Redis, error) {
	slot, err := c.Slot(key)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		v, err := ask(context.Background(), n.Addr, "cluster", "nodes")
		if err != nil {
			lastErr = err
			continue
		}
		s, _ := v.(string)
		addr, ok := masterOfSlot(s, slot)
		if !ok {
			lastErr = fmt.Errorf("%s sees no healthy master for slot %d", n.Addr, slot)
			continue
		}
		for _, m := range c.Nodes {
			if m.Addr == addr {
				return m, nil
			}
		}
		return nil, fmt.Errorf("servers: slot %d is served by %s, not a node of this cluster", slot, addr)
	}
	return nil, fmt.Errorf("servers: the master of slot %d: %v", slot, lastErr)
}

// masterOfSlot finds, in CLUSTER NODES's text, the host:port of the master
// not flagged as failing that lists slot among its ranges.
func masterOfSlot(nodes string, slot int) (string, bool) {
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		flags := "," + f[2] + ","
		if !strings.Contains(flags, ",master,") || strings.Contains(flags, "fail") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && a <= slot && slot <= b {
				addr, _, _ := strings.Cut(f[1], "@")
				return addr, true
			}
		}
	}
	return "", false
}

// KillMasterOf kills (SIGKILL) the master serving key's slot and returns
// it, so that the test may start it again (it rejoins as a replica).
func (c *Cluster) KillMasterOf(key string) (*Redis, error) {
	m, err := c.MasterOf(key)
	if err != nil {
		return nil, err
	}
	m.Kill()
	return m, nil
}

// WaitNewMaster waits, up to limit, until a running node other than old
// is the healthy master of key's slot, and returns it.
func (c *Cluster) WaitNewMaster(key string, old *Redis, limit time.Duration) (*Redis, error) {
	deadline := time.Now().Add(limit)
	for {
		m, err := c.MasterOf(key)
		if err == nil && m != old && m.Running() {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("servers: no new master for %q within %v (last: %v)", key, limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
