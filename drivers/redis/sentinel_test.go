package redisward

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
)

func TestFromFailoverOptionsRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		fo   *redis.FailoverOptions
		want string
	}{
		{"nil", nil, "nil"},
		{"no master", &redis.FailoverOptions{SentinelAddrs: []string{"127.0.0.1:1"}}, "MasterName"},
		{"no sentinels", &redis.FailoverOptions{MasterName: "m"}, "SentinelAddrs"},
		{"replicas", &redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, ReplicaOnly: true}, "replicas"},
		{"latency", &redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, RouteByLatency: true}, "replicas"},
	} {
		_, err := FromFailoverOptions(c.fo)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig naming %q", c.name, err, c.want)
		}
	}
}

// TestFromFailoverOptionsNoSentinel: a dial that finds no Sentinel fails
// New with an error naming the master and the Sentinel tried.
func TestFromFailoverOptionsNoSentinel(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(servers.FreePort(t))
	cfg, err := FromFailoverOptions(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{addr}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), cfg)
	if err == nil {
		_ = p.Close(context.Background())
		t.Fatal("New succeeded with no Sentinel listening")
	}
	if !strings.Contains(err.Error(), `master "m"`) || !strings.Contains(err.Error(), addr) {
		t.Errorf("New: %v, want the master's name and the Sentinel's address", err)
	}
}

// TestFromFailoverOptionsFollowsMaster: a pool built from FailoverOptions
// writes to the master Sentinel names and, after a failover and the old
// master's demotion, to the new one; the connection left on the old
// master fails once (READONLY) and is not lent again.
func TestFromFailoverOptionsFollowsMaster(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("a failover on servers of its own, several seconds: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	m := servers.StartRedis(t)
	r := servers.StartReplica(t, m)
	s := servers.StartSentinel(t, "wp", m)
	servers.WaitSentinelReplicas(t, s, "wp", 1)
	unknown, err := FromFailoverOptions(&redis.FailoverOptions{MasterName: "nope", SentinelAddrs: []string{s.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := New(context.Background(), unknown); err == nil {
		_ = p.Close(context.Background())
		t.Error("New succeeded for a master the Sentinel does not know")
	} else if !strings.Contains(err.Error(), "does not know") {
		t.Errorf("New for an unknown master: %v, want it to say the Sentinel does not know it", err)
	}
	cfg, err := FromFailoverOptions(&redis.FailoverOptions{MasterName: "wp", SentinelAddrs: []string{s.Addr}, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Options.Addr != "wp" || cfg.Limits.Size != 2 {
		t.Fatalf("Addr %q Size %d, want wp 2", cfg.Options.Addr, cfg.Limits.Size)
	}
	ctx := context.Background()
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if err := p.Do(ctx, "SET", "k", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Client(t).Get(ctx, "k").Result(); got != "1" {
		t.Fatalf("the master holds k=%q, want 1", got)
	}
	now, err := servers.Failover(s, "wp")
	if err != nil {
		t.Fatal(err)
	}
	if now != r.Addr {
		t.Fatalf("new master %s, want %s", now, r.Addr)
	}
	if err := servers.Demote(m, now); err != nil {
		t.Fatal(err)
	}
	var failed []error
	clocktest.Eventually(t, "a write on the new master", func() bool {
		err := p.Do(ctx, "SET", "k", "2").Err()
		if err != nil {
			failed = append(failed, err)
		}
		return err == nil
	})
	// At most one failure per connection open (Size 2), each READONLY.
	if len(failed) > 2 {
		t.Errorf("%d writes failed after the failover, want at most 2: %v", len(failed), failed)
	}
	for _, err := range failed {
		if !strings.HasPrefix(err.Error(), "READONLY") {
			t.Errorf("a write failed with %v, want READONLY", err)
		}
	}
	if got, _ := r.Client(t).Get(ctx, "k").Result(); got != "2" {
		t.Fatalf("the new master holds k=%q, want 2", got)
	}
}
