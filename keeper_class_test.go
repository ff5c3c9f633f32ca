package wardpool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"go.uber.org/goleak"
)

// Classes of callers (Config.Classes) in the Keeper: the proof's
// classes, interactive with 2 of 8 reserved and batch.

func classConfig() Config[*res] {
	return Config[*res]{
		Limits:  pool.Limits{Size: 8, Idle: 8},
		Classes: []pool.Class{{Name: "interactive", Reserve: 2}, {Name: "batch"}},
		Logger:  quietLogger(),
	}
}

var (
	inter = WithClass(bg, "interactive")
	batch = WithClass(bg, "batch")
)

func acquireAs(t *testing.T, k *Keeper[*res], ctx context.Context) Loan[*res] {
	t.Helper()
	l, err := k.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire as %q: %v", ClassOf(ctx), err)
	}
	return l
}

// classStats is the Stats.Classes entry of the class named name.
func classStats(t *testing.T, s Stats, name string) ClassStats {
	t.Helper()
	for _, c := range s.Classes {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no class %q in %+v", name, s.Classes)
	return ClassStats{}
}

// checkClassStats checks that the classes' books add up to the pool's.
func checkClassStats(t *testing.T, s Stats) {
	t.Helper()
	held, waiting := 0, 0
	for _, c := range s.Classes {
		held += c.Held
		waiting += c.Waiting
	}
	if held != s.Busy || waiting != s.Waiting {
		t.Fatalf("classes hold %d and wait %d; the pool %d busy, %d waiting", held, waiting, s.Busy, s.Waiting)
	}
}

// While interactive has asked within its Lend, batch is held to 6 of 8;
// once it has not for a second, the timer lets batch have all 8.
func TestKeeperClassBatchHeldWhileInteractivePresent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	k, c := newTestKeeper(t, &dialer{}, classConfig())
	acquireAs(t, k, inter).Release()
	var loans []Loan[*res]
	for range 6 {
		loans = append(loans, acquireAs(t, k, batch))
	}
	seventh, eighth := acquireAsync(k, batch), acquireAsync(k, batch)
	clocktest.Eventually(t, "two batch callers held back", func() bool { return k.Stats().Waiting == 2 })
	s := k.Stats()
	if b := classStats(t, s, "batch"); b.Held != 6 || b.Waiting != 2 || b.HeldBack == 0 {
		t.Fatalf("batch: %+v, want 6 held, 2 waiting, held back", b)
	}
	if i := classStats(t, s, "interactive"); !i.Present || i.Reserve != 2 {
		t.Fatalf("interactive: %+v, want present, reserve 2", i)
	}
	checkClassStats(t, s)
	c.Advance(999 * time.Millisecond)
	if s := k.Stats(); s.Waiting != 2 {
		t.Fatalf("%d waiting before the Lend ran out, want 2", s.Waiting)
	}
	c.Advance(time.Millisecond)
	for _, ch := range []<-chan acquired{seventh, eighth} {
		r := within(t, ch)
		if r.err != nil {
			t.Fatalf("batch after the Lend: %v", r.err)
		}
		loans = append(loans, r.l)
	}
	s = k.Stats()
	if s.Busy != 8 || classStats(t, s, "batch").Held != 8 || classStats(t, s, "interactive").Present {
		t.Fatalf("after the Lend: busy %d, classes %+v; want batch holding all 8", s.Busy, s.Classes)
	}
	checkClassStats(t, s)
	b := classStats(t, s, "batch")
	if b.Acquires != 8 || b.AcquireWait != 2*time.Second || classStats(t, s, "interactive").Acquires != 1 {
		t.Fatalf("batch: %d acquires waiting %v, interactive %d; want 8 waiting 2s in all (two waited 1s each), 1", b.Acquires, b.AcquireWait, classStats(t, s, "interactive").Acquires)
	}
	for _, l := range loans {
		l.Release()
	}
}

// A returning interactive caller is handed the next resource that frees,
// ahead of an older batch waiter, and batch is held to 6 again.
func TestKeeperClassInteractiveServedFirst(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := classConfig()
	cfg.Recorder = record.New(0) // the Keeper's calls replay, classes and all
	k, c := newTestKeeper(t, &dialer{}, cfg)
	var loans []Loan[*res]
	for range 8 {
		loans = append(loans, acquireAs(t, k, batch)) // interactive never asked
	}
	older := acquireAsync(k, batch)
	clocktest.Eventually(t, "a batch caller queued", func() bool { return k.Stats().Waiting == 1 })
	c.Advance(time.Millisecond)
	newer := acquireAsync(k, inter)
	clocktest.Eventually(t, "an interactive caller queued", func() bool { return k.Stats().Waiting == 2 })
	freed := loans[0]
	freed.Release()
	r := within(t, newer)
	if r.err != nil || r.l.Value() != freed.Value() {
		t.Fatalf("interactive: %v, %v; want the resource just freed", r.l.Value(), r.err)
	}
	loans[1].Release()
	select {
	case r := <-older:
		t.Fatalf("batch served (%v, %v) into interactive's reserve", r.l.Value(), r.err)
	case <-time.After(20 * time.Millisecond):
	}
	if s := k.Stats(); s.Idle != 1 || s.Waiting != 1 {
		t.Fatalf("idle %d, waiting %d; want interactive's reserve idle, batch waiting", s.Idle, s.Waiting)
	}
	// Interactive gets it at once. With both of its loans back, batch
	// holds 6 and is still held to 6 while interactive is present; a
	// second after interactive's last ask, batch has one more.
	l := acquireAs(t, k, inter)
	r.l.Release()
	l.Release()
	select {
	case r := <-older:
		t.Fatalf("batch served (%v, %v) into interactive's reserve", r.l.Value(), r.err)
	case <-time.After(20 * time.Millisecond):
	}
	c.Advance(time.Second)
	ro := within(t, older)
	if ro.err != nil {
		t.Fatal(ro.err)
	}
	if s := k.Stats(); classStats(t, s, "batch").Held != 7 || s.Busy != 7 {
		t.Fatalf("batch holds %d, busy %d; want 7", classStats(t, s, "batch").Held, s.Busy)
	}
	ro.l.Release()
	for _, l := range loans[2:] {
		l.Release()
	}
	checkClassStats(t, k.Stats())
	data := k.Recording()
	if err := record.Replay(data); err != nil {
		t.Fatal(err)
	}
	rc, err := record.ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, s := range rc.Steps {
		ops[s.Op]++
	}
	if ops["TakeAs"] == 0 || ops["MadeAs"] == 0 || ops["Serve"] == 0 {
		t.Fatalf("the recording's steps: %v, want TakeAs, MadeAs and Serve among them", ops)
	}
}

// A caller held back by its class still leaves at its context's end and at
// the acquire timeout, and its error names its class.
func TestKeeperClassWaitEnds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := classConfig()
	cfg.AcquireTimeout = 2 * time.Second
	cfg.Classes[1].Ceiling = 1
	k, c := newTestKeeper(t, &dialer{}, cfg)
	l := acquireAs(t, k, batch)
	ctx, cancel := context.WithCancel(batch)
	canceled := acquireAsync(k, ctx)
	timed := acquireAsync(k, batch)
	clocktest.Eventually(t, "two batch callers queued", func() bool { return k.Stats().Waiting == 2 })
	cancel()
	r := within(t, canceled)
	var ae *AcquireError
	if !errors.Is(r.err, context.Canceled) || !errors.As(r.err, &ae) || ae.Class != "batch" || !strings.Contains(r.err.Error(), `class "batch"`) {
		t.Fatalf("canceled: %v, want an AcquireError of class batch", r.err)
	}
	c.Advance(2 * time.Second)
	r = within(t, timed)
	if !errors.Is(r.err, ErrAcquireTimeout) || !errors.As(r.err, &ae) || ae.Class != "batch" {
		t.Fatalf("timed out: %v, want ErrAcquireTimeout of class batch", r.err)
	}
	// The default class is not held by batch's ceiling.
	d := mustAcquire(t, k)
	d.Release()
	l.Release()
	checkClassStats(t, k.Stats())
}

func TestKeeperClassUnknown(t *testing.T) {
	k, _ := newTestKeeper(t, &dialer{}, classConfig())
	ctx := WithClass(bg, "bulk")
	for name, f := range map[string]func(context.Context) (Loan[*res], error){"Acquire": k.Acquire, "TryAcquire": k.TryAcquire} {
		_, err := f(ctx)
		var ce *ClassError
		if !errors.Is(err, ErrUnknownClass) || !errors.As(err, &ce) || ce.Class != "bulk" || !strings.Contains(err.Error(), `"interactive" "batch"`) {
			t.Fatalf("%s with an unknown class: %v", name, err)
		}
	}
	// Without classes, a class in the context is ignored.
	k2, _ := newTestKeeper(t, &dialer{}, Config[*res]{Logger: quietLogger()})
	l, err := k2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if k2.Stats().Classes != nil {
		t.Fatal("Stats.Classes without classes")
	}
}

// TryAcquire answers by its own class: a batch caller held back does not
// make an interactive TryAcquire wait.
func TestKeeperClassTryAcquire(t *testing.T) {
	cfg := classConfig()
	cfg.Classes[1].Ceiling = 1
	k, _ := newTestKeeper(t, &dialer{}, cfg)
	l := acquireAs(t, k, batch)
	held := acquireAsync(k, batch)
	clocktest.Eventually(t, "a batch caller queued", func() bool { return k.Stats().Waiting == 1 })
	if _, err := k.TryAcquire(batch); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("batch TryAcquire at its ceiling: %v", err)
	}
	// Room, but nothing idle: a dial starts in the background.
	if _, err := k.TryAcquire(inter); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("interactive TryAcquire: %v", err)
	}
	clocktest.Eventually(t, "the dial landed", func() bool { return k.Stats().Idle == 1 })
	li, err := k.TryAcquire(inter)
	if err != nil {
		t.Fatalf("interactive TryAcquire with one idle: %v", err)
	}
	if n := classStats(t, k.Stats(), "interactive").Acquires; n != 1 {
		t.Fatalf("interactive acquires %d, want 1: the TryAcquire", n)
	}
	li.Release()
	l.Release()
	r := within(t, held)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
}

func TestKeeperClassConfig(t *testing.T) {
	d := &dialer{}
	for _, tc := range []struct {
		cs   []pool.Class
		want string
	}{
		{cs: []pool.Class{{Name: "a", Reserve: 9}}, want: `class "a": Reserve 9 is above Size 8`},
		{cs: []pool.Class{{Name: "a"}, {Name: "a"}}, want: `named twice`},
	} {
		cfg := Config[*res]{Limits: pool.Limits{Size: 8}, Dial: d.Dial, Close: d.Close, Classes: tc.cs}
		_, err := NewKeeper(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig with %q", tc.cs, err, tc.want)
		}
	}
}

// With classes the leak watch still records the stack from Acquire's
// caller on: its first frame is the function that called Acquire.
func TestKeeperClassLeakStackStartsAtTheCaller(t *testing.T) {
	for _, classes := range []bool{false, true} {
		var leaks []Leak[*res]
		var mu = make(chan struct{}, 1)
		mu <- struct{}{}
		cfg := Config[*res]{
			Limits:    pool.Limits{Size: 2},
			LeakAfter: time.Minute,
			OnLeak:    func(l Leak[*res]) { <-mu; leaks = append(leaks, l); mu <- struct{}{} },
		}
		if classes {
			cfg.Classes = []pool.Class{{Name: "interactive", Reserve: 1}}
		}
		k, c := newTestKeeper(t, &dialer{}, cfg)
		l := acquireClassLeak(t, k)
		c.Advance(61 * time.Second)
		<-mu
		if len(leaks) != 1 {
			t.Fatalf("classes %v: %d leak reports, want 1", classes, len(leaks))
		}
		first, _, _ := strings.Cut(string(leaks[0].Stack), "\n")
		mu <- struct{}{}
		if !strings.Contains(first, "acquireClassLeak") {
			t.Fatalf("classes %v: the stack's first frame is %q, want acquireClassLeak", classes, first)
		}
		l.Release()
	}
}

func acquireClassLeak(t *testing.T, k *Keeper[*res]) Loan[*res] {
	l, err := k.Acquire(inter)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestKeeperClassStress: callers of three classes (one without a class)
// acquire, hold a moment and release, some giving up early, on the real
// clock with a Lend short enough to come and go; at the end nothing is
// lent, nobody waits, and every class's books are back to zero.
func TestKeeperClassStress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := Config[*res]{
		Limits: pool.Limits{Size: 4, Idle: 4},
		Classes: []pool.Class{
			{Name: "interactive", Reserve: 2, Lend: 5 * time.Millisecond},
			{Name: "batch", Ceiling: 3},
		},
		Clock:          newSystemClock(),
		AcquireTimeout: 200 * time.Millisecond,
		Logger:         quietLogger(),
	}
	k, _ := newTestKeeper(t, &dialer{}, cfg)
	ctxs := []context.Context{inter, batch, bg}
	var wg sync.WaitGroup
	var served, failed atomic.Int64
	for g := range 12 {
		wg.Go(func() {
			for i := range 60 {
				ctx, cancel := context.WithTimeout(ctxs[(g+i)%3], time.Duration(1+i%7)*time.Millisecond*3)
				var l Loan[*res]
				var err error
				if i%5 == 4 {
					l, err = k.TryAcquire(ctx)
				} else {
					l, err = k.Acquire(ctx)
				}
				if err == nil {
					served.Add(1)
					time.Sleep(time.Duration(i%3) * 200 * time.Microsecond)
					l.Release()
				} else {
					failed.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	clocktest.Eventually(t, "every loan and waiter gone", func() bool {
		s := k.Stats()
		return s.Busy == 0 && s.Waiting == 0
	})
	s := k.Stats()
	checkClassStats(t, s)
	var acquires uint64
	for _, c := range s.Classes {
		if c.Held != 0 || c.Waiting != 0 || c.Lent != 0 || c.Making != 0 {
			t.Fatalf("class %q after the load: %+v", c.Name, c)
		}
		acquires += c.Acquires
	}
	if served.Load() == 0 || acquires != uint64(served.Load()) || s.Acquires != uint64(served.Load()) {
		t.Fatalf("served %d (failed %d); classes count %d acquires, Stats %d", served.Load(), failed.Load(), acquires, s.Acquires)
	}
	t.Logf("served %d, failed %d", served.Load(), failed.Load())
}
