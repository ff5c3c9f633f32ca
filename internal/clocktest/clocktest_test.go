package clocktest

import (
	"slices"
	"testing"
	"time"
)

func TestAdvanceRunsDueTimersInOrder(t *testing.T) {
	start := time.Unix(1000, 0)
	c := New(start)
	var got []string
	var at []time.Duration
	note := func(s string) func() {
		return func() { got = append(got, s); at = append(at, c.Now().Sub(start)) }
	}
	c.AfterFunc(3*time.Second, note("c"))
	c.AfterFunc(1*time.Second, note("a"))
	stopped := c.AfterFunc(2*time.Second, note("never"))
	c.AfterFunc(10*time.Second, note("later"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report armed once")
	}
	// A timer set by a timer, due inside the same Advance, runs too.
	c.AfterFunc(2*time.Second, func() { got = append(got, "b"); c.AfterFunc(500*time.Millisecond, note("b2")) })
	c.Advance(5 * time.Second)
	if want := []string{"a", "b", "b2", "c"}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
	if want := []time.Duration{time.Second, 2500 * time.Millisecond, 3 * time.Second}; !slices.Equal(at, want) {
		t.Fatalf("ran at %v", at)
	}
	if c.Now() != start.Add(5*time.Second) || c.Pending() != 1 {
		t.Fatalf("now %v pending %d", c.Now(), c.Pending())
	}
}

func TestResetRearmsAPrunedTimer(t *testing.T) {
	c := New(time.Unix(0, 0))
	n := 0
	tm := c.AfterFunc(time.Second, func() { n++ })
	c.Advance(time.Second) // fires and prunes it
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a fired timer reported armed")
	}
	c.Advance(time.Second)
	if n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}
}

// Step moves the time and runs nothing; Due then hands the timers due over,
// earliest first, and leaves later ones armed.
func TestStepThenDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	var ran []int
	c.AfterFunc(2*time.Second, func() { ran = append(ran, 2) })
	c.AfterFunc(time.Second, func() { ran = append(ran, 1) })
	c.AfterFunc(5*time.Second, func() { ran = append(ran, 5) })
	c.Step(3 * time.Second)
	if len(ran) != 0 || !c.Now().Equal(start.Add(3*time.Second)) {
		t.Fatalf("Step ran %v, reads %v", ran, c.Now())
	}
	due := c.Due()
	if len(due) != 2 || due[0].D != time.Second || due[1].D != 2*time.Second {
		t.Fatalf("Due = %+v, want the 1 s and 2 s timers in order", due)
	}
	for _, r := range due {
		r.F()
	}
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 2 || c.Pending() != 1 || len(c.Due()) != 0 {
		t.Fatalf("ran %v, %d pending", ran, c.Pending())
	}
}
