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
