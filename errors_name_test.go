package wardpool

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/internal/poolname"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// An acquire's errors name their pool, count in the right number, and are
// not named twice by a driver that names its errors too.
func TestErrorsNameTheirPool(t *testing.T) {
	one := (&AcquireError{Pool: "orders", Err: context.DeadlineExceeded, Size: 1, Busy: 1, Waiting: 1, Leaked: 1, Ceiling: -1}).Error()
	for _, want := range []string{"orders: wardpool: acquire gave up", "1 of 1 resource busy", "1 caller waiting", "1 loan held longer"} {
		if !strings.Contains(one, want) {
			t.Errorf("%q does not say %q", one, want)
		}
	}
	two := (&AcquireError{Err: context.Canceled, Busy: 2, Waiting: 3, Ceiling: -1}).Error()
	if !strings.HasPrefix(two, "wardpool: ") || !strings.Contains(two, "2 resources busy, 3 callers waiting") {
		t.Errorf("unnamed, plural: %q", two)
	}
	shed := &ShedError{Pool: "orders", Guard: ward.GuardShedder}
	if !strings.HasPrefix(shed.Error(), "orders: wardpool: shed by the shedder") || !errors.Is(shed, ErrShed) {
		t.Errorf("shed: %q", shed.Error())
	}
	if got := poolname.Wrap("orders", shed); got != error(shed) {
		t.Errorf("a driver named an error that names its pool again: %v", got)
	}
	if got := poolname.Wrap("orders", ErrClosed); !errors.Is(got, ErrClosed) || !strings.HasPrefix(got.Error(), "orders: ") {
		t.Errorf("ErrClosed through a driver: %v", got)
	}
}

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
