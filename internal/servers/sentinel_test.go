package servers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/testenv"
)

// TestSentinelFailover holds what the Redis failover scenario relies on:
// a Sentinel over a master and its replica fails over on SENTINEL
// FAILOVER, the replica takes writes, and the old master, once demoted,
// answers a write with READONLY.
func TestSentinelFailover(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("a failover on servers of its own, several seconds: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	m := StartRedis(t)
	r := StartReplica(t, m)
	s := StartSentinel(t, "wp", m)
	if got, err := MasterAddr(s, "wp"); err != nil || got != m.Addr {
		t.Fatalf("master of wp: %q %v, want %s", got, err, m.Addr)
	}
	WaitSentinelReplicas(t, s, "wp", 1)
	now, err := Failover(s, "wp")
	if err != nil {
		t.Fatal(err)
	}
	if now != r.Addr {
		t.Fatalf("after the failover the master is %s, want the replica %s", now, r.Addr)
	}
	ctx := context.Background()
	if err := r.Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("write on the promoted replica: %v", err)
	}
	old := m.Client(t)
	if err := Demote(m, now); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := old.Set(ctx, "k", "v", 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "READONLY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old master still answers a write with %v 10 s after the failover, want READONLY", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
