package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/ward/shared"
)

// TestStoreFollowsClusterFailover: a Store over a go-redis ClusterClient
// with its defaults (a map of slots reloaded once a minute) reaches the
// budget's slot again after its master is killed and its replica takes
// over, well before the client's own reload would: the Store asked it to
// reload when the dead master stopped answering. The wait is bounded at
// 30 s, half the client's own minute, so a Store that does not reload
// fails here.
func TestStoreFollowsClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the Redis Cluster failover")
	}
	c := servers.StartCluster(t, 3, 1, time.Second)
	s := NewClientStore(c.Client(t, nil), "t:")
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
	old, err := c.KillMasterOf("t:{b}:members")
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	errs := 0
	for step() != nil {
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
	if err != nil || m == old {
		t.Fatalf("the slot's master after the failover: %v %v", m, err)
	}
	t.Logf("the store answered again %v after the kill (node timeout %v), after %d failed steps and %d reloads",
		time.Since(killed).Round(10*time.Millisecond), c.NodeTimeout, errs, s.Reloads())
}
