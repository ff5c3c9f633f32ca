package servers

import (
	"context"
	"testing"
	"time"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// TestRedisStopStartKill holds the life cycle a failover test relies on:
// the address is kept across a restart, a stopped or killed server refuses,
// a frozen one does not answer in time, and a thawed one answers again.
func TestRedisStopStartKill(t *testing.T) {
	r := StartRedis(t)
	c := r.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if r.Running() {
		t.Fatal("Running after Stop")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a stopped server answered PING")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after a restart without persistence: exists=%d err=%v, want 0 <nil>", n, err)
	}
	r.Freeze()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("a frozen server answered PING")
	}
	r.Thaw()
	if err := r.waitUp(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a killed server answered PING")
	}
	r.Stop() // a no-op now
}
