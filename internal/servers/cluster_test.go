package servers

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/testenv"
)

// TestMasterOfSlot reads CLUSTER NODES's text as Redis 7 writes it.
func TestMasterOfSlot(t *testing.T) {
	const nodes = `a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7002@17002 master,fail - 0 0 2 connected 5461-10922
c3 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16000 16001 [16002->-a1] 16002-16383
d4 127.0.0.1:7004@17004 slave a1 0 0 1 connected
`
	for _, c := range []struct {
		slot int
		addr string
		ok   bool
	}{
		{0, "127.0.0.1:7001", true},
		{5460, "127.0.0.1:7001", true},
		{5461, "", false}, // its master failed
		{16001, "127.0.0.1:7003", true},
		{16383, "127.0.0.1:7003", true},
	} {
		addr, ok := masterOfSlot(nodes, c.slot)
		if addr != c.addr || ok != c.ok {
			t.Errorf("slot %d: %q %v, want %q %v", c.slot, addr, ok, c.addr, c.ok)
		}
	}
}

// TestClusterFailover holds what a failover test relies on: a cluster of
// three masters with a replica each answers through a cluster client; the
// master of a key's slot, killed, is replaced by its replica; and started
// again, it rejoins and the cluster is ok on every node.
func TestClusterFailover(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("a Redis Cluster's failover on servers of its own, some 6 s: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	t0 := time.Now()
	c := StartCluster(t, 3, 1, 1000*time.Millisecond)
	t.Logf("started in %v", time.Since(t0))
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	ctx := context.Background()
	cc := c.Client(t, func(o *redis.ClusterOptions) { o.ClusterStateReloadInterval = 200 * time.Millisecond })
	if err := cc.Set(ctx, "{k}x", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Replication is asynchronous: wait until the replica has the key, or
	// the kill may lose it and the new master answer nil for good.
	m0, err := c.MasterOf("{k}x")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m0.Client(t).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
		t.Fatalf("WAIT on the slot's master: %d replicas acknowledged (%v), want 1", n, err)
	}
	old, err := c.KillMasterOf("{k}x")
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	m, err := c.WaitNewMaster("{k}x", old, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the slot's new master %s took over %v after the kill (node timeout %v)", m.Addr, time.Since(killed).Round(time.Millisecond), c.NodeTimeout)
	clientCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var lastLog time.Time
	for {
		gctx, gcancel := context.WithTimeout(clientCtx, 500*time.Millisecond)
		t1 := time.Now()
		v, err := cc.Get(gctx, "{k}x").Result()
		gcancel()
		if time.Since(lastLog) > time.Second {
			lastLog = time.Now()
			t.Logf("at %v: %v (took %v)", time.Since(killed), err, time.Since(t1))
		}
		if err == nil {
			if v != "v" {
				t.Fatalf("after the failover the key holds %q", v)
			}
			break
		}
		if clientCtx.Err() != nil {
			t.Fatalf("the client never reached the new master: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("client back %v after the kill", time.Since(killed))
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if again, err := c.MasterOf("{k}x"); err != nil || again != m {
		t.Fatalf("after the old master rejoined the slot is served by %v (%v), want %s", again, err, m.Addr)
	}
}
