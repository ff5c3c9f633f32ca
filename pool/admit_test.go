package pool

import (
	"math"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// TestAdmitPredictsFromMeasuredHolds: with every resource lent and loans
// measured at 20 ms, a caller with ahead callers before it is predicted to
// wait (ahead+1) × 20 ms / lent, and refused (counted shed) when its chance
// of being served within its deadline, returns coming as a Poisson process
// of rate lent / 20 ms, is under admitOdds; it is admitted while the pool
// cannot predict.
func TestAdmitPredictsFromMeasuredHolds(t *testing.T) {
	t0 := time.Unix(100, 0)
	p, _ := New[int](Limits{Size: 2}, ward.Ward{})
	now := t0
	for i := 1; i <= 2; i++ {
		tk := p.Take(now, 0, 0)
		p.Made(i, tk.Gen, now, 0)
	}
	if _, ok := p.Admit(now, 5, time.Millisecond); !ok {
		t.Fatal("refused with no hold measured: nothing to predict from")
	}
	for range 4 { // 8 loans of 20 ms each
		now = now.Add(20 * time.Millisecond)
		for i := 1; i <= 2; i++ {
			p.Give(i, now)
		}
		for range 2 {
			if tk := p.Take(now, 0, 0); tk.Kind != Ready {
				t.Fatalf("Take = %v", tk.Kind)
			}
		}
	}
	shed := p.Books().Shed
	for _, c := range []struct {
		ahead  int
		within time.Duration
		wait   time.Duration
		ok     bool
	}{
		{0, 15 * time.Millisecond, 10 * time.Millisecond, true},  // 1 − e^−1.5: 0.78
		{0, 8 * time.Millisecond, 10 * time.Millisecond, true},   // 0.55: the mean alone refused it
		{0, 5 * time.Millisecond, 10 * time.Millisecond, false},  // 0.39
		{3, 50 * time.Millisecond, 40 * time.Millisecond, true},  // P(Gamma(4) ≤ 5): 0.73
		{3, 38 * time.Millisecond, 40 * time.Millisecond, true},  // 0.53
		{3, 30 * time.Millisecond, 40 * time.Millisecond, false}, // 0.35
		{9, 0, 0, true}, // no deadline: nothing to refuse for
		{-4, time.Millisecond, 10 * time.Millisecond, false}, // ahead < 0 reads as 0; 0.095
	} {
		wait, ok := p.Admit(now, c.ahead, c.within)
		if wait != c.wait || ok != c.ok {
			t.Errorf("Admit(ahead %d, within %v) = %v, %v; want %v, %v", c.ahead, c.within, wait, ok, c.wait, c.ok)
		}
	}
	if got := p.Books().Shed - shed; got != 3 {
		t.Errorf("%d refusals counted shed, want 3", got)
	}
	p.Close()
	if _, ok := p.Admit(now, 100, time.Nanosecond); !ok {
		t.Error("a closed pool refused by prediction: Take answers Closed, not Admit")
	}
}

// TestServedIsTheGammaCDF: served(k, x) is P(Gamma(k, 1) ≤ x), summed for
// small k and approximated beyond 64, checked against the Poisson sum taken
// in logarithms.
func TestServedIsTheGammaCDF(t *testing.T) {
	exact := func(k int, x float64) float64 {
		sum := 0.0
		for i := range k {
			lg, _ := math.Lgamma(float64(i + 1))
			sum += math.Exp(-x + float64(i)*math.Log(x) - lg)
		}
		return 1 - sum
	}
	for _, c := range []struct {
		k    int
		x    float64
		want float64
	}{
		{1, 1, 1 - math.Exp(-1)},
		{1, 0, 0},
		{4, 0, 0},
		{10, 10, 0.5421},
		{1, 800, 1},
		{64, 1000, 1},
	} {
		if got := served(c.k, c.x); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("served(%d, %v) = %.5f, want %.5f", c.k, c.x, got, c.want)
		}
	}
	for _, k := range []int{2, 9, 30, 64, 65, 100, 1000, 1 << 20} {
		for _, f := range []float64{0.5, 0.8, 0.9, 1, 1.1, 1.3, 2} {
			x := f * float64(k)
			want := 1.0
			if k <= 5000 {
				want = exact(k, x)
			} else if f < 1 {
				want = 0
			} else if f == 1 {
				want = 0.5
			}
			if got := served(k, x); math.Abs(got-want) > 0.005 {
				t.Errorf("served(%d, %v) = %.4f, want %.4f", k, x, got, want)
			}
		}
	}
}

// TestAdmitAllocatesNothing: Admit is on every queued caller's path.
func TestAdmitAllocatesNothing(t *testing.T) {
	p, _ := New[int](Limits{Size: 1}, ward.Ward{})
	now := time.Unix(100, 0)
	tk := p.Take(now, 0, 0)
	p.Made(1, tk.Gen, now, 0)
	for range holdsMin {
		now = now.Add(20 * time.Millisecond)
		p.Give(1, now)
		p.Take(now, 0, 0)
	}
	if n := testing.AllocsPerRun(100, func() { p.Admit(now, 40, 700*time.Millisecond) }); n != 0 {
		t.Errorf("Admit allocates %v times", n)
	}
}
