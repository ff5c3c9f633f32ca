package pool

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// TestAdmitPredictsFromMeasuredHolds: with every resource lent and loans
// measured at 20 ms, a caller with ahead callers before it is predicted to
// wait (ahead+1) × 20 ms / lent, and refused (counted shed) when it may
// wait less than that; it is admitted while the pool cannot predict.
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
		{0, 15 * time.Millisecond, 10 * time.Millisecond, true},
		{0, 5 * time.Millisecond, 10 * time.Millisecond, false},
		{3, 50 * time.Millisecond, 40 * time.Millisecond, true},
		{3, 30 * time.Millisecond, 40 * time.Millisecond, false},
		{9, 0, 0, true}, // no deadline: nothing to refuse for
		{-4, time.Millisecond, 10 * time.Millisecond, false}, // ahead < 0 reads as 0
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
