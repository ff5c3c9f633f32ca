package pool

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// TestSetLimitsRetires walks a pool through a plan applied live: a lowered
// Idle and Size retire idle resources at once, longest idle first; loans
// above the lowered Size are retired as they come home; a raised Size lets
// Take make again; a shortened Keep retires what it now finds too old.
func TestSetLimitsRetires(t *testing.T) {
	p, _ := New[int](Limits{Size: 6, Idle: 6}, ward.Ward{})
	now := time.Unix(100, 0)
	for i := 1; i <= 6; i++ {
		if a := p.Take(now, 0, 0); a.Kind != Make {
			t.Fatalf("Take %d = %v, want Make", i, a.Kind)
		}
		p.Made(i, p.Gen(), now, 0)
	}
	for i := 1; i <= 4; i++ { // 1..4 idle, 1 longest; 5 and 6 lent
		now = now.Add(time.Millisecond)
		p.Give(i, now)
	}
	got, err := p.SetLimits(Limits{Size: 6, Idle: 3}, now)
	if err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("SetLimits(Idle 3) = %v, %v; want [1]", got, err)
	}
	got, _ = p.SetLimits(Limits{Size: 3, Idle: 3}, now)
	if len(got) != 2 || got[0] != 2 || got[1] != 3 || p.Books().Live != 3 {
		t.Fatalf("SetLimits(Size 3) = %v, live %d; want [2 3], live 3", got, p.Books().Live)
	}
	got, _ = p.SetLimits(Limits{Size: 1, Idle: 3}, now)
	if len(got) != 1 || got[0] != 4 || p.Books().Live != 2 {
		t.Fatalf("SetLimits(Size 1) = %v, live %d; want [4], live 2", got, p.Books().Live)
	}
	if p.Give(5, now) || p.Books().Live != 1 {
		t.Fatalf("Give above a lowered Size kept it (live %d)", p.Books().Live)
	}
	if !p.Give(6, now) {
		t.Fatal("Give at Size retired it")
	}
	if a := p.Take(now, 0, 0); a.Kind != Ready || a.Item != 6 {
		t.Fatalf("Take = %+v, want Ready 6", a)
	}
	if a := p.Take(now, 0, 0); a.Kind != Wait {
		t.Fatalf("Take at Size 1 = %v, want Wait", a.Kind)
	}
	p.SetLimits(Limits{Size: 2}, now)
	if a := p.Take(now, 0, 0); a.Kind != Make {
		t.Fatalf("Take after Size rose = %v, want Make", a.Kind)
	}
	p.Made(7, p.Gen(), now, 0)
	p.Give(7, now)
	p.Give(6, now.Add(time.Second))
	got, _ = p.SetLimits(Limits{Size: 2, Keep: 500 * time.Millisecond, Life: time.Hour}, now.Add(time.Second))
	if len(got) != 1 || got[0] != 7 || p.Books().IdleRetired != 1 {
		t.Fatalf("SetLimits(Keep 500ms) = %v, books %+v; want [7], one idle-retired", got, p.Books())
	}
	if _, ok := p.Next(); !ok {
		t.Fatal("Next() = false with Life set on an idle resource: the birth heap was not built")
	}
	if _, err := p.SetLimits(Limits{Size: -1}, now); err == nil || p.limits.Size != 2 {
		t.Fatalf("SetLimits(Size -1) = %v, size %d; want an error and nothing changed", err, p.limits.Size)
	}
}
