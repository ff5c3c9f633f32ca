package record

import (
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// count is how many of rc's steps are of op.
func count(rc *Recording, op string) int {
	n := 0
	for _, s := range rc.Steps {
		if s.Op == op {
			n++
		}
	}
	return n
}

// TestResetForIsRecorded: a recording holds a ResetFor that reset, with
// its hold, and nothing for one that did not; the hold's answers replay.
func TestResetForIsRecorded(t *testing.T) {
	now := time.Unix(50, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 4}, ward.Ward{})
	p, err := Wrap(raw, New(1024), now)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := new(int), new(int), new(int)
	for _, r := range []*int{a, b, c} {
		tk := p.Take(now, 0, 0)
		p.Made(r, tk.Gen, now, 0)
	}
	p.Give(c, now)
	hold := pool.Hold{For: 5 * time.Second, Every: 200 * time.Millisecond}
	if _, ok := p.ResetFor(a, now, hold); !ok {
		t.Fatal("no reset")
	}
	if _, ok := p.ResetFor(b, now, hold); ok {
		t.Fatal("a second reset from the old generation")
	}
	p.Give(a, now)
	p.Give(b, now)
	if tk := p.Take(now, 0, 0); tk.Kind != pool.Make {
		t.Fatalf("the hold's first take: %v, want Make", tk.Kind)
	}
	if tk := p.Take(now.Add(time.Millisecond), 0, 0); tk.Kind != pool.Wait || tk.Guard != ward.GuardHold || tk.Delay != 199*time.Millisecond {
		t.Fatalf("the hold's second take: %+v, want Wait by the hold for 199ms", tk)
	}
	if !p.Unmade(now.Add(2*time.Millisecond), 0, ward.GuardNone) {
		t.Fatal("a failed make of the hold: its caller does not wait")
	}
	data := p.Recording(nil)
	if err := Replay(data); err != nil {
		t.Fatalf("replay: %v", err)
	}
	rc, err := ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(rc, "Reset"); n != 0 {
		t.Fatalf("%d Reset steps, want 0", n)
	}
	var got []pool.Hold
	for i := range rc.Steps {
		if s := rc.Steps[i]; s.Op == "ResetFor" {
			got = append(got, s.Hold)
			if !strings.Contains(s.String(), "hold=5s every=200ms") {
				t.Errorf("step reads %q", s.String())
			}
		}
	}
	if len(got) != 1 || got[0] != hold {
		t.Fatalf("ResetFor steps hold %v, want one of %v", got, hold)
	}
}

// TestUnreserveIsRecorded: an Unmade step refused by a guard outside holds the guard that refused,
// and replays.
func TestUnreserveIsRecorded(t *testing.T) {
	t0 := time.Unix(100, 0)
	b := ward.DefaultBackoff
	raw, _ := pool.New[string](pool.Limits{Size: 1}, ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, t0), Backoff: &b})
	p, err := Wrap(raw, New(0), t0)
	if err != nil {
		t.Fatal(err)
	}
	p.Take(t0, 0.5, 0)
	p.Unmade(t0, 0, ward.GuardShared)
	p.Take(t0, 0.5, 0)
	p.Unmade(t0, 0, ward.GuardShared)
	p.Unmade(t0, 0, ward.GuardShared) // none open: nothing, still a step
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rc.Steps {
		if s.Op == "Unmade" && s.Guard == ward.GuardShared {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d Unmade steps refused by the shared guard recorded, want 3", n)
	}
}

// TestReservationGenerationIsRecorded: a Made that lands after a Reset,
// under a reservation opened before it, carries its generation in the
// recording; the replay lends it and retires it on its return, as the
// recorded pool did.
func TestReservationGenerationIsRecorded(t *testing.T) {
	t0 := time.Unix(10, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 2}, ward.Ward{})
	p, err := Wrap(raw, New(0), t0)
	if err != nil {
		t.Fatal(err)
	}
	tk := p.Take(t0, 0, 0) // a dial starts
	if tk.Kind != pool.Make {
		t.Fatalf("Take = %v", tk.Kind)
	}
	p.Reset(t0.Add(time.Millisecond), 0) // credentials rotated meanwhile
	v := new(int)
	if !p.Made(v, tk.Gen, t0.Add(2*time.Millisecond), 0) {
		t.Fatal("Made of the old reservation refused: its caller is owed it")
	}
	if p.Give(v, t0.Add(3*time.Millisecond)) {
		t.Fatal("a resource of the old generation was kept on its return")
	}
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	var made Step
	for _, s := range rc.Steps {
		if s.Op == "Made" {
			made = s
		}
	}
	if made.Gen != tk.Gen || made.Answer() != "true" {
		t.Fatalf("Made step %v, want gen %d", made, tk.Gen)
	}
	if got := rc.Steps[len(rc.Steps)-1].Answer(); got != "false" {
		t.Fatalf("the Give replays as %s, want false", got)
	}
}

// TestRetiredSeatsAcrossRolls: a resource the recorder saw lent, idle
// while the ring rolls past the steps that made it, is named by its seat
// when Evict retires it, and the replay (which starts after those steps)
// names the same seat.
func TestRetiredSeatsAcrossRolls(t *testing.T) {
	t0 := time.Unix(1, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 3, Keep: time.Hour}, ward.Ward{})
	p, err := Wrap(raw, New(MinLimit), t0)
	if err != nil {
		t.Fatal(err)
	}
	old, hot := new(int), new(int)
	for _, v := range []*int{old, hot} {
		tk := p.Take(t0, 0, 0)
		p.Made(v, tk.Gen, t0, 0)
	}
	p.Give(old, t0)
	p.Give(hot, t0)
	now := t0
	for range 5000 { // many rolls: only hot is lent
		now = now.Add(time.Millisecond)
		tk := p.Take(now, 0, 0)
		p.Give(tk.Item, now)
	}
	if got := p.Evict(t0.Add(2 * time.Hour)); len(got) != 2 {
		t.Fatalf("Evict = %d resources, want 2", len(got))
	}
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Steps[0].Index < 4 {
		t.Fatal("the ring did not roll past the makes")
	}
	last := rc.Steps[len(rc.Steps)-1]
	if last.Answer() != "seats [0 1]" && last.Answer() != "seats [1 0]" {
		t.Fatalf("Evict step %v: want both seats named", last)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
}
