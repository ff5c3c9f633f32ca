package pgxward

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardpool/wardpool"
)

// TestAcquireTimeoutReachesTheKeeper: Config.AcquireTimeout bounds an
// Acquire waiting for the connection dialled for it (a dial that hangs
// here), whatever the caller's context allows. In a synctest bubble the
// Keeper's default clock is the bubble's, so no test time passes.
func TestAcquireTimeoutReachesTheKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := ParseConfig("postgres://app@127.0.0.1:1/app?pool_max_conns=1")
		if err != nil {
			t.Fatal(err)
		}
		c.ConnConfig.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		c.AcquireTimeout = 50 * time.Millisecond
		p, err := NewWithConfig(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		start := time.Now()
		_, err = p.Acquire(context.Background())
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Errorf("Acquire gave up after %v, want 50ms", took)
		}
		var ae *AcquireError
		if !errors.Is(err, wardpool.ErrAcquireTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) || ae.Pool != p.Name() {
			t.Fatalf("Acquire = %v, want an *AcquireError of the pool's acquire timeout", err)
		}
		if s := p.WardStats(); s.AcquireTimeouts != 1 {
			t.Fatalf("%d acquire timeouts counted", s.AcquireTimeouts)
		}
	})
}
