package wardpool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// The queue type on its own.

func newWaiter() *waiter[int] { return &waiter[int]{ch: make(chan grant[int], 1)} }

func attach(w *waiter[int]) *waiter[int] {
	w.ticket++
	w.attached = true
	return w
}

func TestWaitersFIFO(t *testing.T) {
	var q waiters[int]
	ws := make([]*waiter[int], 20) // more than the first ring holds
	for i := range ws {
		ws[i] = attach(newWaiter())
		q.push(ws[i])
	}
	if q.Len() != 20 {
		t.Fatalf("len %d", q.Len())
	}
	for i := range ws {
		if w := q.pop(); w != ws[i] {
			t.Fatalf("pop %d: wrong waiter", i)
		}
	}
	if q.pop() != nil || q.Len() != 0 {
		t.Fatal("queue not empty")
	}
}

func TestWaitersRemoveAndFront(t *testing.T) {
	var q waiters[int]
	a, b, c := attach(newWaiter()), attach(newWaiter()), attach(newWaiter())
	q.push(a)
	q.push(b)
	q.push(c)
	q.remove(b)
	if q.Len() != 2 {
		t.Fatalf("len %d after remove", q.Len())
	}
	// b comes back (a new Acquire recycling it): its old slot stays dead.
	attach(b)
	q.push(b)
	d := attach(newWaiter())
	q.pushFront(d)
	want := []*waiter[int]{d, a, c, b}
	for i, w := range want {
		if got := q.pop(); got != w {
			t.Fatalf("pop %d: got another waiter", i)
		}
	}
	if q.pop() != nil {
		t.Fatal("a dead slot came back to life")
	}
}

func TestWaitersCompactUnderCancelStorm(t *testing.T) {
	var q waiters[int]
	head := attach(newWaiter())
	q.push(head)
	for range 10000 {
		w := attach(newWaiter())
		q.push(w)
		q.remove(w)
	}
	if q.Len() != 1 || len(q.ring) > 128 {
		t.Fatalf("len %d, ring %d: dead slots were not compacted", q.Len(), len(q.ring))
	}
	if q.pop() != head {
		t.Fatal("lost the head")
	}
}

// The Keeper's queue behaviour.

// queued starts an Acquire on its own goroutine and waits until it is queued
// (Waiting reaches n); the loan or error arrives on the channel.
type result struct {
	l   Loan[*res]
	err error
}

func queued(t *testing.T, k *Keeper[*res], ctx context.Context, n int) chan result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		l, err := k.Acquire(ctx)
		ch <- result{l, err}
	}()
	clocktest.Eventually(t, "a waiter to queue", func() bool { return k.Stats().Waiting == n })
	return ch
}

func TestKeeperServesWaitersInArrivalOrder(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)
	var chs []chan result
	for i := 1; i <= 16; i++ {
		chs = append(chs, queued(t, k, bg, i))
	}
	for i, ch := range chs {
		held.Release()
		r := <-ch
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		// Every other waiter is still queued: the handoff went to the oldest.
		if w := k.Stats().Waiting; w != len(chs)-i-1 {
			t.Fatalf("after serving waiter %d, %d still wait", i, w)
		}
		held = r.l
	}
	held.Release()
	s := k.Stats()
	if diff := cmp.Diff(Stats{Books: pool.Books{Made: 1}, Acquires: 17, EmptyAcquires: 17}, Stats{Books: pool.Books{Made: s.Made}, Acquires: s.Acquires, EmptyAcquires: s.EmptyAcquires}); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
}

// TestKeeperHandsOffWithoutBarging is puddle #46's situation: a resource
// released while a caller waits must go to that caller, not sit in the pool
// until the releaser parks (by which time it may have taken it back).
func TestKeeperHandsOffWithoutBarging(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	a := mustAcquire(t, k)
	b := queued(t, k, bg, 1)
	a.Release()
	// The releaser keeps running and asks again at once: it must not get the
	// resource back, which is already the waiter's.
	if _, err := k.TryAcquire(bg); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("the releaser took it back: TryAcquire = %v", err)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(Stats{Books: pool.Books{Idle: 0, Busy: 1}, Waiting: 0}, Stats{Books: pool.Books{Idle: s.Idle, Busy: s.Busy}, Waiting: s.Waiting}); diff != "" {
			t.Fatalf("after the handoff (-want +got):\n%s", diff)
		}
	}
	again := make(chan result, 1)
	go func() { l, err := k.Acquire(bg); again <- result{l, err} }()
	r := <-b // the waiter got it without the releaser parking first
	if r.err != nil {
		t.Fatal(r.err)
	}
	clocktest.Eventually(t, "the releaser to queue", func() bool { return k.Stats().Waiting == 1 })
	r.l.Release()
	(<-again).l.Release()
	checkBalanced(t, k, d)
}

// TestKeeperSkipsExpiredWaiters is vitess #20310's situation: a waiter whose
// context has ended but who has not yet left the queue must not be handed the
// resource; the next live waiter gets it, and the expired one its error.
// (The live waiter's arrival asks the pool for the one ahead of it, and so
// finds it expired: it is told so then, before anything is released.)
func TestKeeperSkipsExpiredWaiters(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)

	// Park an expired waiter in the queue by hand, as if its goroutine had
	// not yet woken to leave: it cannot race us that way.
	dead, cancel := context.WithCancel(bg)
	cancel()
	k.mu.Lock()
	stale := k.attachLocked(dead, c.Now(), nil, 0)
	k.q.push(stale)
	k.mu.Unlock()
	live := queued(t, k, bg, 1)
	g := <-stale.ch
	if !errors.Is(g.err, context.Canceled) || g.loan.e != nil {
		t.Fatalf("the expired waiter was handed %+v", g)
	}

	held.Release()
	r := <-live
	if r.err != nil || r.l.Value() != held.Value() {
		t.Fatalf("the live waiter got %v, %v", r.l.Value(), r.err)
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(Stats{Canceled: 1, Waiting: 0}, Stats{Canceled: s.Canceled, Waiting: s.Waiting}); diff != "" {
			t.Fatalf("stats (-want +got):\n%s", diff)
		}
	}
	r.l.Release()
	checkBalanced(t, k, d)
}

// TestKeeperHandoffRacingCancelLosesNothing grants a waiter whose context
// ends at the same moment; whichever way the race goes, the resource is
// either the waiter's or back in the pool.
func TestKeeperHandoffRacingCancelLosesNothing(t *testing.T) {
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	won, lost := 0, 0
	for range 200 {
		held := mustAcquire(t, k)
		ctx, cancel := context.WithCancel(bg)
		k.mu.Lock()
		w := k.attachLocked(ctx, c.Now(), nil, 0)
		k.q.push(w)
		k.mu.Unlock()
		held.Release() // granted to w
		cancel()       // and w's context ends: both are ready in await
		l, again, err := k.await(ctx, w)
		switch {
		case again:
			t.Fatal("asked to go again")
		case err == nil:
			won++
			l.Release()
		case errors.Is(err, context.Canceled):
			lost++
		default:
			t.Fatal(err)
		}
		{
			s := k.Stats()
			if diff := cmp.Diff(pool.Books{Idle: 1, Busy: 0}, pool.Books{Idle: s.Idle, Busy: s.Busy}); diff != "" {
				t.Fatalf("resource lost (-want +got):\n%s", diff)
			}
		}
	}
	if won == 0 || lost == 0 {
		t.Logf("only one side of the race ran (won %d, lost %d)", won, lost)
	}
	checkBalanced(t, k, d)
}

func TestKeeperCancelledWaiterLeavesTheQueue(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	held := mustAcquire(t, k)
	ctx, cancel := context.WithCancel(bg)
	gone := queued(t, k, ctx, 1)
	stays := queued(t, k, bg, 2)
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", r.err)
	}
	clocktest.Eventually(t, "the cancelled waiter to leave", func() bool { return k.Stats().Waiting == 1 })
	held.Release()
	r := <-stays
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
	if s := k.Stats(); s.Canceled != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestKeeperDialsNoMoreThanSizeAllows: a crowd arriving at an empty pool
// starts at most Size dials (pgx #1780 had a pool dial past its maximum).
func TestKeeperDialsNoMoreThanSizeAllows(t *testing.T) {
	d := &dialer{gate: make(chan struct{})}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 3}})
	results := make(chan result, 10)
	for range 10 {
		go func() { l, err := k.Acquire(bg); results <- result{l, err} }()
	}
	clocktest.Eventually(t, "the crowd to arrive", func() bool {
		s := k.Stats()
		return s.Dialing == 3 && s.Waiting == 7
	})
	for range 3 {
		d.gate <- struct{}{}
	}
	for range 10 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.l.Release()
	}
	if _, _, most := d.counts(); most > 3 {
		t.Fatalf("%d dials at once with Size 3", most)
	}
	// A caller whose dial was slow may have been served by a return
	// first: its dial lands after, for nobody.
	clocktest.Eventually(t, "the dials to land", func() bool { return k.Stats().Dialing == 0 })
	if s := k.Stats(); s.Made != 3 {
		t.Fatalf("stats %+v", s)
	}
	checkBalanced(t, k, d)
}

// TestKeeperGivingUpDuringADialWastesNothing: the caller a dial was for
// leaves; the resource goes to the next waiter, or to idle if there is none.
func TestKeeperGivingUpDuringADialWastesNothing(t *testing.T) {
	d := &dialer{gate: make(chan struct{})}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})

	ctx, cancel := context.WithCancel(bg)
	first := make(chan result, 1)
	go func() { l, err := k.Acquire(ctx); first <- result{l, err} }()
	clocktest.Eventually(t, "the dial to start", func() bool { return k.Stats().Dialing == 1 })
	next := queued(t, k, bg, 1)
	cancel()
	if r := <-first; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("first: %v", r.err)
	}
	d.gate <- struct{}{}
	r := <-next
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()

	// Now with nobody behind: the resource goes idle.
	r.l.Hijack() // no-op, the loan ended; keep one idle resource around
	ctx2, cancel2 := context.WithCancel(bg)
	held := mustAcquire(t, k)
	held.Destroy() // room for a dial again
	go func() { k.Acquire(ctx2) }()
	clocktest.Eventually(t, "the second dial to start", func() bool { return k.Stats().Dialing == 1 })
	cancel2()
	clocktest.Eventually(t, "the caller to leave", func() bool { return k.Stats().Canceled == 2 })
	d.gate <- struct{}{}
	clocktest.Eventually(t, "the dial to land in idle", func() bool { return k.Stats().Idle == 1 })
	checkBalanced(t, k, d)
	_ = time.Second
}

// TestKeeperAdmissionRefusesDoomedCallers: with Config.Admission, a caller
// that would queue with too little time left for the wait the pool
// predicts (holds measured at 200 ms, two lent: about 100 ms a turn; 20 ms
// left is a chance of 1 − e^−0.2, 0.18) is refused at once with a
// *LateError that reads as its deadline passing; one with time enough, and
// one with no deadline, wait and are served.
func TestKeeperAdmissionRefusesDoomedCallers(t *testing.T) {
	d := &dialer{}
	k, clk := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Admission: true})
	for range 4 { // eight loans of 200 ms measured
		a, b := mustAcquire(t, k), mustAcquire(t, k)
		clk.Advance(200 * time.Millisecond)
		a.Release()
		b.Release()
	}
	a, b := mustAcquire(t, k), mustAcquire(t, k)

	// A caller that waited its deadline out would get the context's error,
	// not a LateError: the LateError is the refusal at once.
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	_, err := k.Acquire(ctx)
	var late *LateError
	if !errors.As(err, &late) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrShed) {
		t.Fatalf("Acquire with 20ms left behind two 200ms loans = %v; want a *LateError", err)
	}
	if late.Predicted != 100*time.Millisecond || late.Ahead != 0 {
		t.Errorf("LateError %+v: want 100ms predicted, nobody ahead", late)
	}
	if s := k.Stats(); s.Late != 1 || s.Waiting != 0 {
		t.Errorf("stats %+v: want one late, nobody left waiting", s)
	}

	// Time enough (an hour), and no deadline at all: both wait their turn.
	got := make(chan error, 2)
	long, cancelLong := context.WithTimeout(bg, time.Hour)
	defer cancelLong()
	for i, c := range []context.Context{long, bg} {
		go func() {
			l, err := k.Acquire(c)
			if err == nil {
				l.Release()
			}
			got <- err
		}()
		clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == i+1 })
	}
	a.Release()
	b.Release()
	for range 2 {
		if err := <-got; err != nil {
			t.Fatalf("a caller with time enough: %v", err)
		}
	}
	checkBalanced(t, k, d)
}

// TestKeeperDialingCallerTakesAReturn: a caller whose dial is in flight is
// served by a resource given back meanwhile, if that comes first; its
// dial's resource joins the idle ones when it lands.
func TestKeeperDialingCallerTakesAReturn(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a := mustAcquire(t, k)
	first := a.Value()
	d.mu.Lock()
	d.gate = make(chan struct{}) // the next dial hangs until told
	d.mu.Unlock()
	got := acquireAsync(k, bg)
	clocktest.Eventually(t, "the second dial to start", func() bool { return k.Stats().Dialing == 1 })
	a.Release()
	r := within(t, got) // fails when the caller waits for its own dial while a resource sits idle
	if r.err != nil {
		t.Fatal(r.err)
	}
	b := r.l
	if b.Value() != first {
		t.Fatalf("served %v, want the resource given back", b.Value())
	}
	close(d.gate) // the dial lands with nobody waiting for it
	clocktest.Eventually(t, "the dialed resource to go idle", func() bool { s := k.Stats(); return s.Dialing == 0 && s.Idle == 1 })
	b.Release()
	if s := k.Stats(); s.Idle != 2 || s.Made != 2 {
		t.Fatalf("stats %+v: want both idle, two made", s)
	}
	checkBalanced(t, k, d)
}
