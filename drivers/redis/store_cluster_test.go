package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/ward/shared"
)

// TestStoreFollowsClusterFailover: a Store over a go-redis ClusterClient
// with its defaults (a map of slots reloaded once a minute) reaches the
// budget's slot again after its master is killed (connections refused) or
// frozen (no answer: timeouts) and its replica takes over, well before the
// client's own reload would: the Store asked it to reload when the master
// stopped answering. The wait is bounded at 30 s, half the client's own
// minute, so a Store that does not reload fails here. The client is set as
// Store's doc asks for a master that may hang: ContextTimeoutEnabled
// (without it a step to the frozen master took go-redis's ReadTimeout for
// each of its tries, 9 s, not the step's 250 ms) and a ReadTimeout of
// 250 ms (with the default 3 s, the client's reload, which asks the nodes
// in turn, waited on the frozen one: the store answered 3.7 to 4.8 s after
// the promotion instead of 0.3 s).
func TestStoreFollowsClusterFailover(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("two Redis Cluster failovers, some 15 s: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	for _, how := range []string{"killed", "frozen"} {
		t.Run(how, func(t *testing.T) {
			storeFollows(t, func(r *servers.Redis) {
				if how == "killed" {
					r.Kill()
				} else {
					r.Freeze() // thawed when the test stops it
				}
			})
		})
	}
}

func storeFollows(t *testing.T, fail func(*servers.Redis)) {
	c := servers.StartCluster(t, 3, 1, time.Second)
	s := NewClientStore(c.Client(t, func(o *redis.ClusterOptions) { o.ContextTimeoutEnabled = true; o.ReadTimeout = 250 * time.Millisecond }), "t:")
	op := shared.BudgetOp{Step: shared.StepLease, Key: "{b}", Replica: "r", Budget: 10, TTL: time.Minute}
	step := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		_, err := s.Budget(ctx, op)
		return err
	}
	if err := step(); err != nil {
		t.Fatal(err)
	}
	if s.Reloads() != 0 {
		t.Fatalf("%d reloads before anything failed", s.Reloads())
	}
	old, err := c.MasterOf("t:{b}:members")
	if err != nil {
		t.Fatal(err)
	}
	fail(old)
	killed := time.Now()
	promoted := make(chan time.Duration, 1)
	go func() {
		if _, err := c.WaitNewMaster("t:{b}:members", old, 30*time.Second); err == nil {
			promoted <- time.Since(killed)
		}
		close(promoted)
	}()
	errs := 0
	var longest time.Duration
	for {
		began := time.Now()
		err := step()
		longest = max(longest, time.Since(began))
		if err == nil {
			break
		}
		errs++
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the store did not reach the slot's new master within 30 s of the kill (%d failed steps, %d reloads asked)", errs, s.Reloads())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if errs == 0 || s.Reloads() == 0 {
		t.Fatalf("%d failed steps, %d reloads: the kill went unnoticed", errs, s.Reloads())
	}
	m, err := c.MasterOf("t:{b}:members")
	if err != nil || m == old || m.Addr == old.Addr {
		t.Fatalf("the slot's master after the failover: %v %v", m, err)
	}
	back := time.Since(killed)
	t.Logf("the store answered again %v after the master failed (node timeout %v; the replica was promoted at %v), after %d failed steps (the longest took %v) and %d reloads",
		back.Round(10*time.Millisecond), c.NodeTimeout, <-promoted, errs, longest.Round(time.Millisecond), s.Reloads())
}

// TestStoreFollowsSentinelFailover: a Store over go-redis's Sentinel
// failover client, with its defaults, answers again once the Sentinel has
// promoted the replica of a master that was killed, with no reload asked:
// the client asks the Sentinel where the master is at every new
// connection.
func TestStoreFollowsSentinelFailover(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("a Sentinel failover, some 10 s: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	const name = "st"
	m := servers.StartRedis(t)
	servers.StartReplica(t, m)
	sen := servers.StartSentinel(t, name, m)
	servers.WaitSentinelReplicas(t, sen, name, 1)
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: []string{sen.Addr}})
	defer fc.Close()
	s := NewClientStore(fc, "t:")
	op := shared.BudgetOp{Step: shared.StepLease, Key: "{b}", Replica: "r", Budget: 10, TTL: time.Minute}
	step := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		_, err := s.Budget(ctx, op)
		return err
	}
	if err := step(); err != nil {
		t.Fatal(err)
	}
	m.Kill()
	killed := time.Now()
	errs := 0
	for step() != nil {
		errs++
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("the store did not reach the new master within 30 s of the kill (%d failed steps)", errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	back := time.Since(killed)
	if errs == 0 {
		t.Fatal("no step failed: the kill went unnoticed")
	}
	if a, err := servers.MasterAddr(sen, name); err != nil || a == m.Addr {
		t.Fatalf("the Sentinel's master after the failover: %q %v", a, err)
	}
	if s.Reloads() != 0 {
		t.Fatalf("%d reloads asked of a client without a map of slots", s.Reloads())
	}
	t.Logf("the store answered again %v after the master was killed, after %d failed steps", back.Round(10*time.Millisecond), errs)
}
