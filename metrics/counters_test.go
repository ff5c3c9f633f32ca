package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// TestEmptyAcquiresUnderConcurrency holds empty_acquires_total to its doc
// under load: it counts successful acquires that found nothing idle, so no
// reading, even one taken while acquires are in flight, has it above
// acquires_total.
func TestEmptyAcquiresUnderConcurrency(t *testing.T) {
	const (
		callers = 24
		rounds  = 300
		size    = 3
	)
	var next atomic.Int64
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits: pool.Limits{Size: size},
		Dial:   func(context.Context) (*conn, error) { return &conn{id: int(next.Add(1))}, nil },
		Close:  func(*conn) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Close(context.Background()) }()

	stop := make(chan struct{})
	var readings, ahead, worst atomic.Int64
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := k.Stats()
			readings.Add(1)
			if d := int64(s.EmptyAcquires) - int64(s.Acquires); d > 0 {
				ahead.Add(1)
				if d > worst.Load() {
					worst.Store(d)
				}
			}
		}
	}()

	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := k.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				l.Release()
			}
		}()
	}
	wg.Wait()
	close(stop)
	reader.Wait()

	s := k.Stats()
	if s.Acquires != callers*rounds {
		t.Errorf("acquires %d, want %d", s.Acquires, callers*rounds)
	}
	if s.EmptyAcquires > s.Acquires {
		t.Errorf("at rest: empty acquires %d > acquires %d", s.EmptyAcquires, s.Acquires)
	}
	if n := ahead.Load(); n > 0 {
		t.Errorf("%d of %d readings had empty acquires above acquires (by up to %d)", n, readings.Load(), worst.Load())
	}
	if s.EmptyAcquires == 0 {
		t.Errorf("no acquire waited: the test did not load the pool (%+v)", s)
	}
	t.Logf("%d readings, %d with empty ahead of acquires (worst by %d); at rest empty %d of %d acquires, waited %d",
		readings.Load(), ahead.Load(), worst.Load(), s.EmptyAcquires, s.Acquires, s.Waited)
}

// TestEmptyAcquiresCountSuccesses: an acquire that queued and then gave up
// is canceled, not empty, as in pgxpool.
func TestEmptyAcquiresCountSuccesses(t *testing.T) {
	const waiters = 5
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits: pool.Limits{Size: 1},
		Dial:   func(context.Context) (*conn, error) { return &conn{}, nil },
		Close:  func(*conn) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Close(context.Background()) }()
	held, err := k.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := k.Acquire(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("queued acquire: %v, want context.Canceled", err)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for k.Stats().Waiting < waiters {
		if time.Now().After(deadline) {
			t.Fatal("the callers never queued")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	held.Release()

	s := k.Stats()
	if s.Acquires != 1 || s.Canceled != waiters || s.EmptyAcquires != 1 {
		t.Errorf("acquires %d, canceled %d, empty %d; want 1, %d, 1 (the first acquire dialed)", s.Acquires, s.Canceled, s.EmptyAcquires, waiters)
	}
}
