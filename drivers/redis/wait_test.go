package redisward

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestAcquireTimeoutReachesTheKeeper: Config.AcquireTimeout bounds an
// Acquire waiting for the connection dialled for it (a dial that hangs
// here), on the pool's fake clock, whatever the caller's context allows.
func TestAcquireTimeoutReachesTheKeeper(t *testing.T) {
	clock := clocktest.New(time.Unix(1_000_000, 0))
	hang := func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p, err := New(context.Background(), Config{
		Options:        &redis.Options{Addr: "127.0.0.1:1", Dialer: hang},
		Limits:         pool.Limits{Size: 1},
		Clock:          clock,
		Lazy:           true,
		AcquireTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Acquire(context.Background())
		errc <- err
	}()
	clocktest.Eventually(t, "the dial to start", func() bool { return p.WardStats().Dialing == 1 })
	clock.Advance(50 * time.Millisecond)
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not give up")
	}
	if !errors.Is(err, wardpool.ErrAcquireTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the pool's acquire timeout", err)
	}
	if s := p.WardStats(); s.AcquireTimeouts != 1 {
		t.Fatalf("%d acquire timeouts counted", s.AcquireTimeouts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil { // cancels the hanging dial
		t.Fatal(err)
	}
}
