package wardpool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// The faults an operator meets during an incident: a Close that hangs (a
// frozen backend), a check cut short by the caller, dials that never end,
// and a Dial that answers nothing. Each test proves the caller's deadline
// holds and the books stay exact.

// blockingCloser is a Config.Close that blocks until released, counting the
// closes that started and finished.
type blockingCloser struct {
	release chan struct{}
	started atomic.Int32
	done    atomic.Int32
}

func (b *blockingCloser) Close(*res) error {
	b.started.Add(1)
	<-b.release
	b.done.Add(1)
	return nil
}

func TestKeeperCloseNeverRunsOnTheCallersTime(t *testing.T) {
	// Close blocks (a backend frozen mid-cleanup) and Check fails: an
	// Acquire with a short deadline still returns within it, and a Destroy
	// returns at once. What is closed waits in the closers' queue, counted.
	d := &dialer{}
	bc := &blockingCloser{release: make(chan struct{})}
	k, err := NewKeeper(Config[*res]{
		Limits:    pool.Limits{Size: 2},
		Dial:      d.Dial,
		Close:     bc.Close,
		Closers:   1,
		Check:     func(context.Context, *res) error { return errors.New("broken") },
		CheckIdle: -1, // every borrow
		Logger:    quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := mustAcquire(t, k) // dialed for this caller: not checked
	first.Release()
	// Every borrow from idle now fails its check and is closed: the closes
	// block, and Acquire dials replacements instead of waiting on them.
	for i := range 3 {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		start := time.Now()
		l, err := k.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("acquire %d took %v: it waited on a Close", i, took)
		}
		start = time.Now()
		l.Destroy()
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Destroy took %v: it ran Close on the caller", took)
		}
	}
	clocktest.Eventually(t, "the one closer to start", func() bool { return bc.started.Load() == 1 })
	s := k.Stats()
	if s.Closing == 0 || bc.started.Load() != 1 || bc.done.Load() != 0 {
		t.Fatalf("want closes queued behind one blocked closer: %+v, started %d", s, bc.started.Load())
	}
	if s.Live != 0 || s.CheckFailures < 1 || s.Dropped < 3 {
		t.Fatalf("books %+v", s)
	}
	// Close waits for the closers within its ctx, and reports the timeout.
	short, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if err := k.Close(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with closes blocked = %v, want its ctx's error", err)
	}
	close(bc.release)
	if err := k.Close(bg); err != nil {
		t.Fatalf("Close once closes run: %v", err)
	}
	if s := k.Stats(); s.Closing != 0 || s.Closed != uint64(bc.done.Load()) || bc.done.Load() != bc.started.Load() {
		t.Fatalf("after Close: %+v, closes started %d done %d", s, bc.started.Load(), bc.done.Load())
	}
	opened, _, _ := d.counts()
	if int(bc.done.Load()) != opened {
		t.Fatalf("%d opened, %d closed", opened, bc.done.Load())
	}
}

func TestKeeperClosersAreBounded(t *testing.T) {
	d := &dialer{}
	bc := &blockingCloser{release: make(chan struct{})}
	k, err := NewKeeper(Config[*res]{Limits: pool.Limits{Size: 8}, Dial: d.Dial, Close: bc.Close, Closers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var loans []Loan[*res]
	for range 8 {
		loans = append(loans, mustAcquire(t, k))
	}
	for _, l := range loans {
		l.Destroy()
	}
	clocktest.Eventually(t, "two closes to start", func() bool { return bc.started.Load() == 2 })
	if s := k.Stats(); s.Closing != 8 || bc.started.Load() != 2 {
		t.Fatalf("Closing %d with %d closes started, want 8 and 2 (Closers)", s.Closing, bc.started.Load())
	}
	close(bc.release)
	if err := k.Close(bg); err != nil || bc.done.Load() != 8 {
		t.Fatalf("Close = %v, %d closed", err, bc.done.Load())
	}
}

func TestKeeperCheckCutShortByCancelIsRunAgain(t *testing.T) {
	// The caller gives up while the check runs; the check fails because of
	// that (as pgx's Ping closes the connection it was cancelled on). The
	// caller gets its ctx's error at once, and the check runs again in the
	// background: the resource is kept only if that one passes.
	for _, tc := range []struct {
		name       string
		secondPass bool
	}{{"broken by the cancel: destroyed", false}, {"sound: kept", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dialer{}
			var calls atomic.Int32
			inCheck := make(chan struct{})
			k, c := newTestKeeper(t, d, Config[*res]{
				Limits: pool.Limits{Size: 1},
				Check: func(ctx context.Context, r *res) error {
					if calls.Add(1) == 1 {
						close(inCheck)
						<-ctx.Done() // the caller gives up mid-check
						return ctx.Err()
					}
					if ctx.Err() != nil {
						return errors.New("the recheck ran on an ended context")
					}
					if tc.secondPass {
						return nil
					}
					return errors.New("conn closed")
				},
			})
			mustAcquire(t, k).Release()
			r := d.opened[0]
			c.Advance(2 * time.Second) // past CheckIdle
			ctx, cancel := context.WithCancel(bg)
			go func() { <-inCheck; cancel() }()
			if _, err := k.Acquire(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Acquire cancelled mid-check = %v", err)
			}
			clocktest.Eventually(t, "the recheck", func() bool { return settled(k) && calls.Load() == 2 })
			s := k.Stats()
			if tc.secondPass {
				if closedSoon(t, k, r) || s.Idle != 1 || s.CheckFailures != 0 {
					t.Fatalf("a resource that passed its recheck was not kept: %+v", s)
				}
				if l := mustAcquire(t, k); l.Value() != r {
					t.Fatal("the kept resource was not lent next")
				} else {
					l.Release()
				}
			} else if !closedSoon(t, k, r) || s.Live != 0 || s.CheckFailures != 1 || s.Dropped != 1 {
				t.Fatalf("a resource that failed its recheck was put back: closed %v, %+v", r.closed.Load(), s)
			}
			if s.Canceled != 1 {
				t.Fatalf("canceled %d, want 1", s.Canceled)
			}
			checkBalanced(t, k, d)
		})
	}
}

func TestKeeperDialsAreBoundedInTime(t *testing.T) {
	// A connect that hangs: the caller's dial and the background ones end
	// after DialTimeout, counted, and MinIdle is tried again by the timer.
	d := &dialer{gate: make(chan struct{})} // never opened: every dial hangs
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:      pool.Limits{Size: 4},
		MinIdle:     1,
		DialTimeout: 20 * time.Millisecond,
		Logger:      quietLogger(),
	})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	_, err := k.Acquire(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("Acquire with a hanging dial = %v: want the dial's timeout, well before the caller's", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the dial's error %v does not say it timed out", err)
	}
	clocktest.Eventually(t, "the MinIdle dial to time out", func() bool {
		s := k.Stats()
		return s.DialTimeouts >= 2 && s.Dialing == 0
	})
	s := k.Stats()
	if s.Live != 0 || s.Failed < 2 || s.LastDialError == nil {
		t.Fatalf("books after hanging dials: %+v", s)
	}
	// The timer retries MinIdle; with the backend back, it is warmed.
	close(d.gate)
	c.Advance(2 * time.Second)
	clocktest.Eventually(t, "MinIdle warmed after the backend came back", func() bool { return k.Stats().Idle == 1 })
	checkBalanced(t, k, d)
}

func TestKeeperWarmsAFewAtATime(t *testing.T) {
	d := &dialer{gate: make(chan struct{})}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2000}, MinIdle: 2000})
	clocktest.Eventually(t, "the first dials", func() bool { return k.Stats().Dialing == warmDials })
	if s := k.Stats(); s.Dialing != warmDials {
		t.Fatalf("dialing %d for MinIdle 2000, want at most %d at once", s.Dialing, warmDials)
	}
	var once sync.Once
	stop := func() { once.Do(func() { close(d.gate) }) }
	defer stop()
	for range 20 {
		d.gate <- struct{}{}
	}
	clocktest.Eventually(t, "twenty warmed", func() bool { return k.Stats().Idle >= 20 })
	if _, _, most := d.counts(); most > warmDials {
		t.Fatalf("%d dials ran at once, want at most %d", most, warmDials)
	}
	stop()
	clocktest.Eventually(t, "all warmed", func() bool { return k.Stats().Idle == 2000 })
	checkBalanced(t, k, d)
}

func TestKeeperZeroFromDialIsAFailedDial(t *testing.T) {
	var n atomic.Int32
	d := &dialer{}
	k, err := NewKeeper(Config[*res]{
		Limits: pool.Limits{Size: 1},
		Dial: func(ctx context.Context) (*res, error) {
			if n.Add(1) == 1 {
				return nil, nil
			}
			return d.Dial(ctx)
		},
		Close:  d.Close,
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(bg)
	if _, err := k.Acquire(bg); !errors.Is(err, errZeroDial) {
		t.Fatalf("Acquire on a dial answering (nil, nil) = %v", err)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Failed: 1, Live: 0}, pool.Books{Failed: s.Failed, Live: s.Live}); diff != "" {
			t.Fatalf("books (-want +got):\n%s", diff)
		}
	}
	l := mustAcquire(t, k)
	if l.Value() == nil {
		t.Fatal("lent a nil resource")
	}
	l.Release()
}

func TestKeeperTimeoutSaysWhatThePoolWasDoing(t *testing.T) {
	// Every resource busy and the dials failing: the caller who gives up
	// gets its context's error, with the figures and the dial error behind
	// it.
	hang := make(chan struct{})
	defer close(hang)
	d := &dialer{fail: func(n int) error {
		switch {
		case n == 2:
			return errDial
		case n > 2:
			<-hang // a backend that stopped answering
		}
		return nil
	}}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Logger: quietLogger()})
	held := mustAcquire(t, k)
	if _, err := k.Acquire(bg); !errors.Is(err, errDial) {
		t.Fatalf("a failing dial = %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error)
	go func() {
		_, err := k.Acquire(ctx)
		done <- err
	}()
	clocktest.Eventually(t, "the caller to wait on its dial", func() bool { return k.Stats().Dialing == 1 })
	cancel()
	err := <-done
	var ae *AcquireError
	if !errors.As(err, &ae) || !errors.Is(err, context.Canceled) || errors.Is(err, errDial) {
		t.Fatalf("a cancelled acquire = %v (%T): want an *AcquireError that is context.Canceled, the dial error a field only", err, err)
	}
	if ae.Size != 2 || ae.Busy < 1 || ae.LastDialError != errDial {
		t.Fatalf("figures %+v", ae)
	}
	for _, want := range []string{"context canceled", "of 2 resources busy", "last dial failed", "dial refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	held.Release()
	// A context that ended before the call gets the context's error itself.
	if _, err := k.Acquire(ctx); err != context.Canceled {
		t.Fatalf("Acquire with a cancelled context = %v, want context.Canceled itself", err)
	}
}
