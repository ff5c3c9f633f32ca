package wardpool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Config.AcquireTimeout: the pool's own bound on an Acquire's wait, apart
// from the caller's context.

// acquireAsync starts an Acquire on ctx and returns where its result comes.
func acquireAsync(k *Keeper[*res], ctx context.Context) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := k.Acquire(ctx)
		ch <- acquired{l, err}
	}()
	return ch
}

type acquired struct {
	l   Loan[*res]
	err error
}

// within returns the result from ch, failing t if none comes within a
// generous wall-clock bound (a wait that should have ended and did not).
func within(t *testing.T, ch <-chan acquired) acquired {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return")
		return acquired{}
	}
}

// checkTimedOut fails t unless err is the pool's acquire timeout after
// waited.
func checkTimedOut(t *testing.T, err error, waited time.Duration) {
	t.Helper()
	var ae *AcquireError
	switch {
	case !errors.Is(err, ErrAcquireTimeout):
		t.Fatalf("Acquire = %v, want ErrAcquireTimeout", err)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("Acquire = %v: errors.Is context.DeadlineExceeded is false", err)
	case errors.Is(err, context.Canceled):
		t.Fatalf("Acquire = %v: errors.Is context.Canceled is true", err)
	case !errors.As(err, &ae):
		t.Fatalf("Acquire = %v (%T), want an *AcquireError", err, err)
	case ae.Waited != waited:
		t.Fatalf("Acquire waited %v, want %v: %v", ae.Waited, waited, err)
	}
	var to interface{ Timeout() bool }
	if !errors.As(err, &to) || !to.Timeout() {
		t.Fatalf("Acquire = %v: no Timeout() true in its chain", err)
	}
}

func TestAcquireTimeoutEndsALongContextsWait(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, AcquireTimeout: 50 * time.Millisecond})
	held := mustAcquire(t, k)
	ctx, cancel := context.WithTimeout(bg, time.Hour) // real time: never ends in this test
	defer cancel()
	res := acquireAsync(k, ctx)
	clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == 1 })

	c.Advance(49 * time.Millisecond)
	select {
	case r := <-res:
		t.Fatalf("Acquire returned %v before the timeout", r.err)
	default:
	}
	if s := k.Stats(); s.Waiting != 1 || s.AcquireTimeouts != 0 {
		t.Fatalf("before the timeout: %+v", s)
	}
	c.Advance(time.Millisecond)
	r := within(t, res)
	checkTimedOut(t, r.err, 50*time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("the caller's context ended: %v", ctx.Err())
	}
	if s := k.Stats(); s.Waiting != 0 || s.AcquireTimeouts != 1 || s.Canceled != 1 {
		t.Fatalf("after the timeout: waiting %d, timeouts %d, canceled %d", s.Waiting, s.AcquireTimeouts, s.Canceled)
	}
	// The pool goes on: the holder's resource goes idle, and is lent again.
	held.Release()
	mustAcquire(t, k).Release()
	checkBalanced(t, k, d)
}

func TestAcquireTimeoutZeroIsNone(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)
	res := acquireAsync(k, bg)
	clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == 1 })
	c.Advance(24 * time.Hour)
	if s := k.Stats(); s.Waiting != 1 || s.AcquireTimeouts != 0 || s.Canceled != 0 {
		t.Fatalf("a day on, with no timeout: %+v", s)
	}
	held.Release()
	r := within(t, res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
	checkBalanced(t, k, d)
}

// TestAcquireTimeoutOrContextWhicheverIsEarlier runs in a synctest bubble
// on the system clock, where the context's deadline and the Keeper's timer
// read the same fake time: the earlier of the two ends the wait, and the
// error says which.
func TestAcquireTimeoutOrContextWhicheverIsEarlier(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ctx      time.Duration // the caller's deadline
		timeout  time.Duration // Config.AcquireTimeout
		poolsOwn bool          // the pool's timeout ends it, not ctx
		at       time.Duration // when
	}{
		{"long context", time.Hour, 50 * time.Millisecond, true, 50 * time.Millisecond},
		{"shorter context", 20 * time.Millisecond, 50 * time.Millisecond, false, 20 * time.Millisecond},
		{"no timeout", 20 * time.Millisecond, 0, false, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &dialer{}
				k, err := NewKeeper(Config[*res]{Limits: pool.Limits{Size: 1}, Dial: d.Dial, Close: d.Close, AcquireTimeout: tc.timeout})
				if err != nil {
					t.Fatal(err)
				}
				held, err := k.Acquire(bg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(bg, tc.ctx)
				defer cancel()
				start := time.Now()
				_, err = k.Acquire(ctx)
				took := time.Since(start)
				if took != tc.at {
					t.Errorf("Acquire gave up after %v, want %v", took, tc.at)
				}
				if tc.poolsOwn {
					checkTimedOut(t, err, tc.at)
					if ctx.Err() != nil {
						t.Errorf("the caller's context ended: %v", ctx.Err())
					}
				} else {
					if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAcquireTimeout) {
						t.Errorf("Acquire = %v, want the context's deadline, not the pool's timeout", err)
					}
				}
				if s := k.Stats(); s.Canceled != 1 || (s.AcquireTimeouts == 1) != tc.poolsOwn {
					t.Errorf("canceled %d, timeouts %d", s.Canceled, s.AcquireTimeouts)
				}
				held.Release()
				if err := k.Close(bg); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestAcquireTimeoutEndsTheWaitForADial(t *testing.T) {
	d := &dialer{gate: make(chan struct{})}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, AcquireTimeout: time.Second})
	res := acquireAsync(k, bg)
	clocktest.Eventually(t, "the dial to start", func() bool { return k.Stats().Dialing == 1 })
	c.Advance(time.Second)
	checkTimedOut(t, within(t, res).err, time.Second)
	// The dial goes on, and its resource goes idle.
	d.gate <- struct{}{}
	clocktest.Eventually(t, "the dial to land", func() bool { return k.Stats().Idle == 1 })
	if s := k.Stats(); s.Made != 1 || s.Busy != 0 || s.AcquireTimeouts != 1 {
		t.Fatalf("after the dial: %+v", s)
	}
	checkBalanced(t, k, d)
}

func TestAcquireTimeoutBoundsTheBackoff(t *testing.T) {
	d := &dialer{fail: func(int) error { return errDial }}
	b := ward.DefaultBackoff
	b.Jitter = ward.Jitter{} // rigid: 100 ms
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:         pool.Limits{Size: 1},
		Ward:           ward.Ward{Backoff: &b},
		AcquireTimeout: 30 * time.Millisecond,
		Logger:         quietLogger(),
	})
	if _, err := k.Acquire(bg); !errors.Is(err, errDial) {
		t.Fatalf("Acquire = %v, want the dial's error", err)
	}
	res := acquireAsync(k, bg)
	clocktest.Eventually(t, "the backoff wait", func() bool { return c.Pending() >= 1 })
	c.Advance(30 * time.Millisecond)
	checkTimedOut(t, within(t, res).err, 30*time.Millisecond)
	if d.dials != 1 {
		t.Fatalf("%d dials, want the first only", d.dials)
	}
}

func TestAcquireTimeoutNegativeIsRefused(t *testing.T) {
	d := &dialer{}
	_, err := NewKeeper(Config[*res]{Dial: d.Dial, Close: d.Close, AcquireTimeout: -time.Second})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("NewKeeper = %v, want ErrConfig", err)
	}
}
