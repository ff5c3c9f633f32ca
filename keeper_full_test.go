package wardpool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// errNoRoom stands for a backend's "too many connections" (PostgreSQL's
// 53300), which classifyNoRoom answers Full for.
var errNoRoom = errors.New("sorry, too many clients already")

func classifyNoRoom(err error) (Verdict, string) {
	if errors.Is(err, errNoRoom) {
		return Full, "53300"
	}
	return Reuse, ""
}

// switchedDialer is a dialer whose dials fail with err while the flag it
// returns is set.
func switchedDialer(err error) (*dialer, *atomic.Bool) {
	on := new(atomic.Bool)
	return &dialer{fail: func(int) error {
		if on.Load() {
			return err
		}
		return nil
	}}, on
}

func (d *dialer) dialCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

// TestKeeperFullBackendWaitsForReturn: a dial the backend refuses for want
// of room, while others are lent, does not fail its caller: the caller
// waits for a return, no further dial goes to the full backend while as
// many are live, and a second later the pool tries a dial again.
func TestKeeperFullBackendWaitsForReturn(t *testing.T) {
	d, full := switchedDialer(errNoRoom)
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4}, Classify: classifyNoRoom, Logger: quietLogger()})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	full.Store(true)

	third := acquireAsync(k, bg)
	clocktest.Eventually(t, "the third caller's dial refused, the caller queued", func() bool {
		s := k.Stats()
		return s.Failed == 1 && s.Waiting == 1 && s.Dialing == 0
	})
	if s := k.Stats(); s.Live != 2 || !errors.Is(s.LastDialError, errNoRoom) {
		t.Fatalf("after the refusal: live %d, last dial error %v; want 2, the refusal", s.Live, s.LastDialError)
	}
	a.Release()
	r3 := within(t, third)
	if r3.err != nil || r3.l.Value() != a.Value() {
		t.Fatalf("third caller: %v, %v; want the returned resource %v", r3.l.Value(), r3.err, a.Value())
	}

	// Two lent, the backend's room is two: a fourth caller waits without
	// dialing.
	fourth := acquireAsync(k, bg)
	clocktest.Eventually(t, "the fourth caller queued", func() bool { return k.Stats().Waiting == 1 })
	if n := d.dialCount(); n != 3 {
		t.Fatalf("%d dials, want 3: the pool dialled a backend that said it was full", n)
	}
	// A second later the room is forgotten and the pool dials again.
	full.Store(false)
	c.Advance(time.Second)
	r4 := within(t, fourth)
	if r4.err != nil {
		t.Fatalf("fourth caller after the room lifted: %v", r4.err)
	}
	if n := d.dialCount(); n != 4 {
		t.Fatalf("%d dials, want 4", n)
	}
	for _, l := range []Loan[*res]{b, r3.l, r4.l} {
		l.Release()
	}
	checkBalanced(t, k, d)
	if s := k.Stats(); s.Made != 3 || s.Failed != 1 {
		t.Fatalf("made %d failed %d, want 3 and 1", s.Made, s.Failed)
	}
}

// TestKeeperFullBackendNothingLent: with nothing of the pool's live, no
// return is coming: the refusal is the caller's error, as any failed dial.
func TestKeeperFullBackendNothingLent(t *testing.T) {
	d := &dialer{fail: func(int) error { return errNoRoom }}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4}, Classify: classifyNoRoom, Logger: quietLogger()})
	if _, err := k.Acquire(bg); !errors.Is(err, errNoRoom) {
		t.Fatalf("Acquire = %v, want the refusal", err)
	}
	if s := k.Stats(); s.Failed != 1 || s.Waiting != 0 {
		t.Fatalf("failed %d waiting %d, want 1 and 0", s.Failed, s.Waiting)
	}
}

// TestKeeperFullBackendCallerDeadline: a caller waiting on a full backend
// still leaves when its context ends, and the books stay balanced.
func TestKeeperFullBackendCallerDeadline(t *testing.T) {
	d, full := switchedDialer(errNoRoom)
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Classify: classifyNoRoom, Logger: quietLogger()})
	a := mustAcquire(t, k)
	full.Store(true)
	ctx, cancel := context.WithCancel(bg)
	w := acquireAsync(k, ctx)
	clocktest.Eventually(t, "the caller queued after the refusal", func() bool { return k.Stats().Waiting == 1 })
	cancel()
	if r := within(t, w); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", r.err)
	}
	a.Release()
	if s := k.Stats(); s.Waiting != 0 || s.Idle != 1 {
		t.Fatalf("waiting %d idle %d, want 0 and 1", s.Waiting, s.Idle)
	}
	checkBalanced(t, k, d)
}

// TestClassifyReadsFullAsDestroy: Full is about dials; on an operation's
// error Keeper.Classify reads it as Destroy.
func TestClassifyReadsFullAsDestroy(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, Classify: classifyNoRoom})
	if v, cause := k.Classify(errNoRoom); v != Destroy || cause != "53300" {
		t.Fatalf("Classify = %v %q, want destroy 53300", v, cause)
	}
	if Full.String() != "full" {
		t.Fatalf("Full.String() = %q", Full.String())
	}
}

// errDown stands for the dials that fail while no node takes writes;
// errReadOnly (keeper_failover_test.go) for the error that resets.
var errDown = errors.New("connection refused")

// TestKeeperHoldsCallersThroughFailover: after a reset on a resource's
// word, with Config.Hold, callers wait while one dial at a time, one per
// Hold.Every, looks for the new node; a dial that fails meanwhile does not
// fail its caller; the first dial that succeeds ends the hold and every
// caller is served.
func TestKeeperHoldsCallersThroughFailover(t *testing.T) {
	d, down := switchedDialer(errDown)
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:   pool.Limits{Size: 4},
		Classify: readOnly,
		Hold:     pool.Hold{For: 5 * time.Second, Every: 100 * time.Millisecond},
		Logger:   quietLogger(),
	})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	down.Store(true)
	if !a.Reset("25006", errReadOnly) {
		t.Fatal("the read-only error reset nothing")
	}
	if s := k.Stats(); !s.Holding {
		t.Fatal("no hold after the failover's reset")
	}
	first := acquireAsync(k, bg)
	clocktest.Eventually(t, "the first caller's dial failed and the caller waits", func() bool {
		s := k.Stats()
		return s.Failed == 1 && s.Waiting == 1 && s.Dialing == 0
	})
	second := acquireAsync(k, bg)
	clocktest.Eventually(t, "the second caller waits", func() bool { return k.Stats().Waiting == 2 })
	if n := d.dialCount(); n != 3 {
		t.Fatalf("%d dials, want 3: one per Every during the hold", n)
	}
	c.Advance(100 * time.Millisecond) // the next dial of the hold, still down
	clocktest.Eventually(t, "the hold's second dial failed", func() bool {
		s := k.Stats()
		return s.Failed == 2 && s.Dialing == 0 && s.Waiting == 2
	})
	if n := d.dialCount(); n != 4 {
		t.Fatalf("%d dials after one Every, want 4", n)
	}
	down.Store(false) // the new node takes writes
	c.Advance(100 * time.Millisecond)
	r1 := within(t, first)
	if r1.err != nil {
		t.Fatalf("first caller: %v", r1.err)
	}
	if s := k.Stats(); s.Holding {
		t.Fatal("still holding after a dial succeeded")
	}
	c.Advance(100 * time.Millisecond) // the second caller is asked for again
	r2 := within(t, second)
	if r2.err != nil {
		t.Fatalf("second caller: %v", r2.err)
	}
	for _, l := range []Loan[*res]{b, r1.l, r2.l} {
		l.Release()
	}
	checkBalanced(t, k, d)
	if s := k.Stats(); s.Resets != 1 || s.Failed != 2 || s.Canceled != 0 {
		t.Fatalf("resets %d failed %d canceled %d, want 1, 2, 0", s.Resets, s.Failed, s.Canceled)
	}
}

// TestKeeperHoldRunsOut: when no dial succeeds within Hold.For, the hold
// ends and a waiting caller gets its dial's error, as without a hold.
func TestKeeperHoldRunsOut(t *testing.T) {
	d, down := switchedDialer(errDown)
	k, c := newTestKeeper(t, d, Config[*res]{
		Limits:   pool.Limits{Size: 2},
		Classify: readOnly,
		Hold:     pool.Hold{For: 300 * time.Millisecond},
		Logger:   quietLogger(),
	})
	a := mustAcquire(t, k)
	down.Store(true)
	a.Reset("25006", errReadOnly)
	w := acquireAsync(k, bg)
	clocktest.Eventually(t, "the caller waits after a failed dial", func() bool {
		s := k.Stats()
		return s.Failed == 1 && s.Waiting == 1 && s.Dialing == 0
	})
	for i := range 3 { // DefaultHoldEvery, three times: the hold runs out
		c.Advance(pool.DefaultHoldEvery)
		clocktest.Eventually(t, "the next dial failed", func() bool {
			s := k.Stats()
			return s.Failed == uint64(i+2) && s.Dialing == 0
		})
	}
	if r := within(t, w); !errors.Is(r.err, errDown) {
		t.Fatalf("Acquire after the hold ran out = %v, want the dial's error", r.err)
	}
	if s := k.Stats(); s.Holding || s.Waiting != 0 {
		t.Fatalf("holding %v waiting %d after the hold ran out", s.Holding, s.Waiting)
	}
	if n := d.dialCount(); n != 5 {
		t.Fatalf("%d dials, want 5: the first, three during the hold, the one after", n)
	}
}

// TestKeeperNoHoldByDefault: without Config.Hold a dial that fails after a
// failover fails its caller at once, as pgxpool's does.
func TestKeeperNoHoldByDefault(t *testing.T) {
	d, down := switchedDialer(errDown)
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Classify: readOnly, Logger: quietLogger()})
	a := mustAcquire(t, k)
	down.Store(true)
	a.Reset("25006", errReadOnly)
	if _, err := k.Acquire(bg); !errors.Is(err, errDown) {
		t.Fatalf("Acquire = %v, want the dial's error", err)
	}
	if k.Stats().Holding {
		t.Fatal("holding without Config.Hold")
	}
}
