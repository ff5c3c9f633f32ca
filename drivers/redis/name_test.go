package redisward

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/pool"
)

// A pool is named by its Config, or "redisward-N@addr" by default; the name
// is its Keeper's, so the Keeper's errors carry it.
func TestPoolName(t *testing.T) {
	p, err := New(context.Background(), Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if !strings.HasPrefix(p.Name(), "redisward-") || !strings.HasSuffix(p.Name(), "@127.0.0.1:1") {
		t.Fatalf("default Name = %q", p.Name())
	}
	q, err := New(context.Background(), Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true, Name: "sessions"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(context.Background())
	if q.Name() != "sessions" || q.k.Name() != "sessions" {
		t.Fatalf("Name = %q, the Keeper's %q", q.Name(), q.k.Name())
	}
}
