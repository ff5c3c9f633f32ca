package wardpool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// A Keeper is named by its Config, or "wardpool-N" by default, and its
// acquire errors carry the name.
func TestKeeperNameInItsErrors(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, Name: "orders"})
	if k.Name() != "orders" {
		t.Fatalf("Name = %q", k.Name())
	}
	l := mustAcquire(t, k)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := k.Acquire(ctx)
		done <- err
	}()
	clocktest.Eventually(t, "the caller to queue", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.q.live > 0
	})
	cancel()
	err := <-done
	var ae *AcquireError
	if !errors.As(err, &ae) || ae.Pool != "orders" || !strings.HasPrefix(err.Error(), "orders: ") {
		t.Fatalf("err = %v", err)
	}
	l.Release()
	checkBalanced(t, k, d)
	k2, _ := newTestKeeper(t, &dialer{}, Config[*res]{Limits: pool.Limits{Size: 1}})
	if !strings.HasPrefix(k2.Name(), "wardpool-") {
		t.Fatalf("default Name = %q", k2.Name())
	}
}
