package wardpool

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
)

// This file holds the fakes the Keeper's tests run on: a clock that moves
// only when told, and a dialer that counts what it opened and closed and can
// be made to fail, panic or block.

// fakeClock is the tests' clock: it moves only by Advance (or Step).
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
}

// res is a fake resource.
type res struct {
	id     int
	closed atomic.Bool
}

// dialer opens and closes res values and counts them.
type dialer struct {
	mu      sync.Mutex
	next    int
	opened  []*res
	closes  int
	double  int // closes of an already closed res
	inDial  int
	maxDial int

	fail  func(n int) error // n counts dials from 1; nil: never fail
	panic func(n int) bool
	gate  chan struct{} // when set, each dial waits for a value from it
	dials int
}

var errDial = errors.New("dial refused")

func (d *dialer) Dial(ctx context.Context) (*res, error) {
	d.mu.Lock()
	d.dials++
	n := d.dials
	d.inDial++
	d.maxDial = max(d.maxDial, d.inDial)
	gate := d.gate
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inDial--
		d.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.panic != nil && d.panic(n) {
		panic("dial exploded")
	}
	if d.fail != nil {
		if err := d.fail(n); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	r := &res{id: d.next}
	d.opened = append(d.opened, r)
	return r, nil
}

func (d *dialer) Close(r *res) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.closed.Swap(true) {
		d.double++
	}
	d.closes++
	return nil
}

// open returns how many resources are open (made and not closed).
func (d *dialer) open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.opened) - d.closes
}

func (d *dialer) counts() (opened, closed, maxDial int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.opened), d.closes, d.maxDial
}

// newTestKeeper builds a Keeper on d and a fake clock, with cfg's other
// fields as given, and closes it when the test ends.
func newTestKeeper(t testing.TB, d *dialer, cfg Config[*res]) (*Keeper[*res], *fakeClock) {
	t.Helper()
	c, _ := cfg.Clock.(*fakeClock)
	if cfg.Clock == nil {
		c = newFakeClock()
		cfg.Clock = c
	}
	cfg.Dial, cfg.Close = d.Dial, d.Close
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0.5 }
	}
	k, err := NewKeeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("Close at cleanup: %v (loans still out: %v)", err, k.Loans())
		}
		if d.double > 0 {
			t.Errorf("%d resources closed twice", d.double)
		}
	})
	return k, c
}

// settled reports whether the Keeper's background work (dial goroutines,
// timer callbacks) has all finished.
func settled(k *Keeper[*res]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cpuTimer != nil && !k.closed {
		return k.bg == 1 // the CPU sampler runs while the pool is in use
	}
	return k.bg == 0
}

// checkBalanced asserts the books balance and match what the dialer holds
// open, once nothing is in flight.
// closesDone reports whether k's closers have closed everything queued.
func closesDone(k *Keeper[*res]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.closing.queue) == 0 && k.closing.workers == 0
}

// closedSoon reports whether r is closed once k's closers have closed
// everything queued so far: closing runs in the background (Config.Close).
func closedSoon(t testing.TB, k *Keeper[*res], r *res) bool {
	t.Helper()
	clocktest.Eventually(t, "the closers to finish", func() bool { return closesDone(k) })
	return r.closed.Load()
}

func checkBalanced(t testing.TB, k *Keeper[*res], d *dialer) {
	t.Helper()
	clocktest.Eventually(t, "the closers to finish", func() bool { return closesDone(k) })
	s := k.Stats()
	if s.Live != s.Idle+s.Busy {
		t.Fatalf("live %d != idle %d + busy %d", s.Live, s.Idle, s.Busy)
	}
	if open := d.open(); open != s.Live {
		t.Fatalf("dialer holds %d open, books say %d live (%+v)", open, s.Live, s)
	}
}

// quietLogger discards what a test provokes on purpose.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
