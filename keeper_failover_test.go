package wardpool

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// Tests of the failover classifier's part in the Keeper: Classify (its
// panics and bad verdicts), Loan.Reset (once per generation, counted by
// cause, logged once) and Keeper.Reset's count.

var errReadOnly = errors.New("read only")

func readOnly(err error) (Verdict, string) {
	if errors.Is(err, errReadOnly) {
		return Reset, "ro"
	}
	return Reuse, ""
}

// TestLoanResetStormResetsOnce: 32 loans of one generation fail together;
// the first reset retires them all, the other 31 reset nothing, and what
// was dialled after the reset is kept.
func TestLoanResetStormResetsOnce(t *testing.T) {
	var logs bytes.Buffer
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits:   pool.Limits{Size: 40},
		Classify: readOnly,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	loans := make([]Loan[*res], 32)
	for i := range loans {
		loans[i] = mustAcquire(t, k)
	}
	idle := mustAcquire(t, k)
	idle.Release() // idle, of the old generation: closed by the reset
	first := loans[0]
	v, cause := k.Classify(fmt.Errorf("insert: %w", errReadOnly))
	if v != Reset || cause != "ro" {
		t.Fatalf("Classify = %v, %q", v, cause)
	}
	if !first.Reset(cause, errReadOnly) {
		t.Fatal("the first failure of the generation did not reset")
	}
	if !closedSoon(t, k, idle.Value()) || !first.Value().closed.Load() {
		t.Fatal("the idle resource or the failing one was not closed")
	}
	fresh := mustAcquire(t, k) // dialled after the reset
	var wg sync.WaitGroup
	var mu sync.Mutex
	resets := 0
	for _, l := range loans[1:] {
		wg.Go(func() {
			if l.Reset("ro", errReadOnly) {
				mu.Lock()
				resets++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if resets != 0 {
		t.Fatalf("%d more resets from the retired generation, want 0", resets)
	}
	fresh.Release()
	if closedSoon(t, k, fresh.Value()) {
		t.Fatal("a resource dialled after the reset was retired by the storm")
	}
	s := k.Stats()
	if s.Resets != 1 || s.ResetCauses["ro"] != 1 || len(s.ResetCauses) != 1 {
		t.Fatalf("resets %d by cause %v, want 1 under ro", s.Resets, s.ResetCauses)
	}
	if n := strings.Count(logs.String(), "wardpool: reset"); n != 1 {
		t.Fatalf("%d reset lines logged, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "cause=ro") || !strings.Contains(logs.String(), "read only") {
		t.Fatalf("the reset's log line lacks its cause or error:\n%s", logs.String())
	}
	if first.Reset("ro", errReadOnly) {
		t.Fatal("Reset of an ended loan reset")
	}
	if k.Stats().DoubleReleases != 1 {
		t.Fatal("Reset of an ended loan not counted as a double release")
	}
	checkBalanced(t, k, d)
}

// TestClassifyPanicsAndBadVerdicts: a classifier that panics is recovered,
// counted and answered Reuse; a verdict out of range reads as Reuse.
func TestClassifyPanicsAndBadVerdicts(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits: pool.Limits{Size: 2},
		Logger: quietLogger(),
		Classify: func(err error) (Verdict, string) {
			if err.Error() == "boom" {
				panic("classifier exploded")
			}
			return Verdict(9), "odd"
		},
	})
	if v, c := k.Classify(errors.New("boom")); v != Reuse || c != CausePanic {
		t.Fatalf("panicking classifier: %v %q, want reuse %q", v, c, CausePanic)
	}
	if k.Stats().Panics != 1 {
		t.Fatal("the classifier's panic was not counted")
	}
	if v, _ := k.Classify(errors.New("x")); v != Reuse {
		t.Fatalf("verdict 9 read as %v, want reuse", v)
	}
	if v, c := k.Classify(nil); v != Reuse || c != "" {
		t.Fatal("nil error not reused")
	}
	l := mustAcquire(t, k)
	l.Release()
	if k.Stats().Idle != 1 {
		t.Fatal("the pool stopped serving after a classifier's panic")
	}
	for v, want := range map[Verdict]string{Reuse: "reuse", Destroy: "destroy", Reset: "reset", Verdict(9): "Verdict(9)"} {
		if got := v.String(); got != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", uint8(v), got, want)
		}
	}
}

// TestResetEverythingStillServes: a classifier that resets on every error
// retires one generation per failing loan of it, and the pool goes on
// lending what it dials after.
func TestResetEverythingStillServes(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{
		Limits:   pool.Limits{Size: 4},
		Logger:   quietLogger(),
		Classify: func(error) (Verdict, string) { return Reset, "" },
	})
	for range 50 {
		l := mustAcquire(t, k)
		v, c := k.Classify(errors.New("any"))
		if v != Reset {
			t.Fatal("verdict")
		}
		l.Reset(c, nil)
	}
	s := k.Stats()
	if s.Resets != 50 || s.ResetCauses[CauseOther] != 50 {
		t.Fatalf("resets %d %v, want 50 under %q", s.Resets, s.ResetCauses, CauseOther)
	}
	l := mustAcquire(t, k)
	l.Release()
	checkBalanced(t, k, d)
}

// TestResetCausesAreBounded: past MaxCauses distinct causes, resets are
// counted under CauseOther; Keeper.Reset under CauseManual.
func TestResetCausesAreBounded(t *testing.T) {
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}, Logger: quietLogger()})
	k.Reset()
	for i := range MaxCauses + 5 {
		mustAcquire(t, k).Reset(fmt.Sprint("cause-", i), nil)
	}
	s := k.Stats()
	if len(s.ResetCauses) != MaxCauses || s.ResetCauses[CauseManual] != 1 || s.ResetCauses[CauseOther] != 7 {
		t.Fatalf("causes %v", s.ResetCauses)
	}
	if s.Resets != MaxCauses+6 {
		t.Fatalf("resets %d", s.Resets)
	}
	s.ResetCauses[CauseManual] = 99 // a copy: the Keeper's books stay
	if k.Stats().ResetCauses[CauseManual] != 1 {
		t.Fatal("Stats.ResetCauses is not a copy")
	}
}

// TestKeeperDialInFlightAcrossReset is issue 33's finding: a Keeper of
// Size 2 whose first dial is held open; Reset is called (credentials
// rotated, a primary moved); then the dial lands. The resource it made
// serves the caller it was dialled for once, is closed when it comes
// back, and is never lent again; the next Acquire dials a new one.
func TestKeeperDialInFlightAcrossReset(t *testing.T) {
	d := &dialer{gate: make(chan struct{})}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	got := acquireAsync(k, bg)
	clocktest.Eventually(t, "the dial to start", func() bool { return k.Stats().Dialing == 1 })
	k.Reset()
	d.gate <- struct{}{} // the dial lands after the Reset
	r := within(t, got)
	if r.err != nil {
		t.Fatal(r.err)
	}
	l := r.l
	old := l.Value()
	l.Release()
	if !closedSoon(t, k, old) {
		t.Fatal("a resource dialled before the Reset was kept on its return")
	}
	close(d.gate) // dials from now on do not wait
	for range 5 {
		l := mustAcquire(t, k)
		if l.Value() == old {
			t.Fatal("a resource dialled before the Reset was lent again")
		}
		l.Release()
	}
	{
		s := k.Stats()
		if diff := cmp.Diff(pool.Books{Made: 2, Live: 1}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
			t.Fatalf("stats %+v: want two made (the old one and its replacement), one live (-want +got):\n%s", s, diff)
		}
	}
	checkBalanced(t, k, d)
}

// TestKeeperRotatePaces: Rotate over 4 s on four idle resources closes one
// at once and one more each second, by the timer on the Keeper's clock;
// an Acquire meanwhile gets an old one still (its turn has not come) or a
// new one, and by the end none of the old is left.
func TestKeeperRotatePaces(t *testing.T) {
	d := &dialer{}
	k, clk := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 4}})
	var old []Loan[*res]
	for range 4 {
		old = append(old, mustAcquire(t, k))
	}
	for _, l := range old {
		l.Release()
	}
	k.Rotate(4 * time.Second)
	closed := func() int { d.mu.Lock(); defer d.mu.Unlock(); return d.closes }
	clocktest.Eventually(t, "the first to close", func() bool { return closed() == 1 })
	if s := k.Stats(); s.Rotating != 3 || s.ResetCauses[CauseRotate] != 1 {
		t.Fatalf("stats %+v: want three rotating, one rotation counted", s)
	}
	for want := 2; want <= 4; want++ {
		clk.Advance(time.Second)
		clocktest.Eventually(t, "the next turn", func() bool { return closed() == want })
	}
	if s := k.Stats(); s.Rotating != 0 || s.Live != 0 {
		t.Fatalf("stats %+v: want nothing old left", s)
	}
	l := mustAcquire(t, k)
	for _, o := range old {
		if l.Value() == o.Value() {
			t.Fatal("an old resource lent after the window")
		}
	}
	l.Release()
	checkBalanced(t, k, d)
}
