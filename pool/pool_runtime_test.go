package pool

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wardpool/wardpool/ward"
)

// Tests of the calls a runtime makes beside Take and Give: Made of a held
// handle after Close, Reset and its generations, Relent (the lane's loans
// reported to the pool), and Limits.Past.

func TestMadeOfAHeldHandleAfterClose(t *testing.T) {
	p := mustNew(t, Limits{})
	run(t, p, []step{
		{0, "made", 1, "true", 1, 0},
		{0, "close", 0, "", 1, 0},
		{0, "made", 1, "true", 1, 0},  // still held: the caller must not close it
		{0, "give", 1, "false", 0, 0}, // comes home to a closed pool: closed once, now
	})
}

func TestResetRetiresIdleNowAndLentOnReturn(t *testing.T) {
	p, _ := New[string](Limits{Size: 4}, ward.Ward{})
	t0 := time.Unix(100, 0)
	for _, s := range []string{"a", "b", "c"} {
		if p.Take(t0, 0, 0).Kind != Make || !p.Made(s, p.Gen(), t0, 0) {
			t.Fatal("make")
		}
	}
	p.Give("a", t0)
	gen := p.gen
	if diff := cmp.Diff([]string{"a"}, p.Reset(t0, 0)); diff != "" {
		t.Fatalf("Reset returned other than the idle [a] (-want +got):\n%s", diff)
	}
	if p.gen != gen+1 {
		t.Fatal("Reset did not move the generation on")
	}
	if p.Take(t0, 0, 0).Kind != Make || !p.Made("d", p.Gen(), t0, 0) {
		t.Fatal("make after Reset")
	}
	if p.Give("b", t0) {
		t.Fatal("a resource lent before Reset was kept on its return")
	}
	if !p.Give("d", t0) {
		t.Fatal("a resource made after Reset was not kept")
	}
	if !p.Drop("c", t0) {
		t.Fatal("Drop of a resource lent before Reset")
	}
	b := p.Books()
	if b.Retired != 2 || b.Live != 1 || b.Idle != 1 || b.Dropped != 1 {
		t.Fatalf("books %+v", b)
	}
	if p.Close(); p.Reset(t0, 0) != nil {
		t.Fatal("Reset of a closed pool returned resources")
	}
}

func TestLimitsPastIsStrict(t *testing.T) {
	l := Limits{Keep: time.Second, Life: time.Minute}
	for _, c := range []struct {
		idle, age time.Duration
		want      bool
	}{
		{time.Second, time.Second, false},
		{time.Second + 1, time.Second, true},
		{0, time.Minute, false},
		{0, time.Minute + 1, true},
	} {
		if got := l.why(int64(c.idle), int64(c.age)) != fresh; got != c.want {
			t.Errorf("Past(%v, %v) = %v, want %v", c.idle, c.age, got, c.want)
		}
	}
	if (Limits{}).why(int64(time.Hour*1e4), int64(time.Hour*1e4)) != fresh {
		t.Error("zero Limits hold no age")
	}
}

// TestResetForOncePerGeneration is the storm: every resource of one
// generation fails in turn; the first failure resets, the others find
// their generation retired already and reset nothing, so the resources
// made after the reset are kept.
func TestResetForOncePerGeneration(t *testing.T) {
	p, _ := New[int](Limits{Size: 8}, ward.Ward{})
	t0 := time.Unix(100, 0)
	for i := range 6 {
		if p.Take(t0, 0, 0).Kind != Make || !p.Made(i, p.Gen(), t0, 0) {
			t.Fatal("make")
		}
	}
	p.Give(5, t0) // one idle, five lent
	retired, ok := p.ResetFor(0, t0, Hold{})
	if !ok {
		t.Fatalf("first ResetFor = %v, %v; want true", retired, ok)
	}
	if diff := cmp.Diff([]int{5}, retired); diff != "" {
		t.Fatalf("first ResetFor retired (-want +got):\n%s", diff)
	}
	if p.Give(0, t0) {
		t.Fatal("the failing resource was kept after its reset")
	}
	// The reset's room is dialled at once, with the new generation.
	if p.Take(t0, 0, 0).Kind != Make || !p.Made(10, p.Gen(), t0, 0) {
		t.Fatal("make after reset")
	}
	resets := 0
	for i := 1; i < 5; i++ {
		if _, ok := p.ResetFor(i, t0, Hold{}); ok {
			resets++
		}
		if p.Give(i, t0) {
			t.Fatalf("resource %d of the old generation was kept", i)
		}
	}
	if resets != 0 {
		t.Fatalf("%d more resets from the old generation, want 0", resets)
	}
	if !p.Give(10, t0) || p.Books().Idle != 1 {
		t.Fatal("the resource made after the reset was not kept")
	}
	if _, ok := p.ResetFor(99, t0, Hold{}); ok {
		t.Fatal("ResetFor of a resource not on the books reset")
	}
	// A resource of the new generation resets again.
	if got, ok := p.ResetFor(10, t0, Hold{}); !ok || len(got) != 1 {
		t.Fatalf("ResetFor of the current generation = %v, %v", got, ok)
	}
	p.Close()
	if _, ok := p.ResetFor(10, t0, Hold{}); ok {
		t.Fatal("ResetFor reset a closed pool")
	}
}

func TestUnreserveIsARefusalNotAFailure(t *testing.T) {
	t0 := time.Unix(100, 0)
	br := ward.NewBreaker(ward.DefaultSre, t0)
	var b ward.Backoff = ward.DefaultBackoff
	p, _ := New[string](Limits{Size: 1}, ward.Ward{Breaker: br, Backoff: &b})
	if a := p.Take(t0, 0.5, 0); a.Kind != Make {
		t.Fatalf("Take = %v, want Make", a.Kind)
	}
	p.Unmade(t0, 0, ward.GuardShared)
	bk := p.Books()
	if bk.Live != 0 || bk.Failed != 0 || bk.Shed != 1 {
		t.Fatalf("books after Unreserve %+v: want the room back, one shed, none failed", bk)
	}
	if _, held := p.HeldUntil(); held || br.Ratio(t0) != 0 {
		t.Fatal("Unreserve told the backoff or the breaker of a failure")
	}
	if a := p.Take(t0, 0.5, 0); a.Kind != Make {
		t.Fatalf("Take after Unreserve = %v, want Make: the room is free", a.Kind)
	}
	p.Unmade(t0, 0, ward.GuardShared)
	p.Unmade(t0, 0, ward.GuardShared) // none open: nothing
	if bk := p.Books(); bk.Shed != 2 || bk.Live != 0 {
		t.Fatalf("books %+v", bk)
	}
}

// TestMadeUnderAReservationFromBeforeAReset: a dial in flight when Reset
// is called makes a resource of the old generation. It serves the caller
// it was made for once, is retired on its return, and never resets the
// pool on its own word; a reservation opened after the Reset makes one of
// the new generation, which is kept.
func TestMadeUnderAReservationFromBeforeAReset(t *testing.T) {
	t0 := time.Unix(100, 0)
	p, _ := New[string](Limits{Size: 3}, ward.Ward{})
	before := p.Take(t0, 0, 0)
	if before.Kind != Make {
		t.Fatalf("Take = %v, want Make", before.Kind)
	}
	p.Reset(t0, 0)
	after := p.Take(t0, 0, 0)
	if after.Kind != Make || after.Gen == before.Gen {
		t.Fatalf("Take after Reset = %+v: want a Make of a new generation (before: %d)", after, before.Gen)
	}
	// The newer dial lands first; then the older one.
	if !p.Made("new", after.Gen, t0, 0) || !p.Made("old", before.Gen, t0, 0) {
		t.Fatal("Made refused a reservation's resource")
	}
	if _, reset := p.ResetFor("old", t0, Hold{}); reset {
		t.Fatal("a resource of the old generation reset the pool")
	}
	if p.Give("old", t0) {
		t.Fatal("the old generation's resource was kept on its return")
	}
	if !p.Give("new", t0) {
		t.Fatal("the new generation's resource was not kept")
	}
	if tk := p.Take(t0, 0, 0); tk.Kind != Ready || tk.Item != "new" {
		t.Fatalf("Take = %+v, want the new one Ready", tk)
	}
	if b := p.Books(); b.Retired != 1 || b.Made != 2 || b.Live != 1 {
		t.Fatalf("books %+v: want 2 made, 1 retired, 1 live", b)
	}
}
