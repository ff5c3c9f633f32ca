package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// switchScenario is the failover built-in with a promotion of half a
// second (no node takes a connection from 8 s to 8.5 s) and no ward, held
// for holdFor (zero: not held).
func switchScenario(t *testing.T, holdFor time.Duration) Scenario {
	s := builtin(t, "failover")
	s.Outages = []Outage{{Span{8 * time.Second, 8500 * time.Millisecond}, 1}}
	s.HoldFor = holdFor
	return s
}

// runSwitch runs s, checking the books every second, and returns its
// summary.
func runSwitch(t *testing.T, s Scenario, opt Options) Summary {
	t.Helper()
	check := booksCheck(t, s.Name)
	observe := opt.Observe
	opt.Observe = func(x Second, b pool.Books) {
		check(x, b)
		if observe != nil {
			observe(x, b)
		}
	}
	r, err := Run(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r.Sum
}

func failed(m Summary) int { return m.Failover.Failed + m.DialErrors + m.TimedOut + m.Refused }

// TestHoldFailsFewer: the same seeded load through the same promotion,
// held and not. Not held, every caller that asks while no node takes a
// connection dials for itself and gets the error; held, the pool dials one
// at a time, the callers wait for it (within their timeout) and none of
// them fails: only the writes out on the old node at the failover do.
// With the hold ignored (ResetFor without it, or a put-back caller
// failed), the two runs fail the same.
func TestHoldFailsFewer(t *testing.T) {
	held := runSwitch(t, switchScenario(t, 2*time.Second), Options{})
	free := runSwitch(t, switchScenario(t, 0), Options{})
	t.Logf("held: %d failed, %+v", failed(held), held.Failover)
	t.Logf("not held: %d failed, %+v", failed(free), free.Failover)
	if failed(held)*10 > failed(free) {
		t.Errorf("calls failed: held %d, not held %d; want a tenth at most", failed(held), failed(free))
	}
	if held.DialErrors != 0 || held.TimedOut != 0 {
		t.Errorf("held: %d dial errors, %d timed out; want none", held.DialErrors, held.TimedOut)
	}
	if held.Failover.Failed != free.Failover.Failed {
		t.Errorf("writes failed on the old node: held %d, not held %d; the hold comes after them", held.Failover.Failed, free.Failover.Failed)
	}
	if held.Failover.PutBack == 0 || held.Failover.HoldWaits == 0 || free.Failover.PutBack != 0 || free.Failover.HoldWaits != 0 {
		t.Errorf("put back / hold waits: held %d / %d, not held %d / %d",
			held.Failover.PutBack, held.Failover.HoldWaits, free.Failover.PutBack, free.Failover.HoldWaits)
	}
	if held.Failover.DownDials*10 > free.Failover.DownDials {
		t.Errorf("dials failed in the switchover: held %d, not held %d", held.Failover.DownDials, free.Failover.DownDials)
	}
	// Both find the new node soon after the promotion: the held one
	// within a dial's spacing and a dial's time of it.
	for _, m := range []Summary{held, free} {
		if f := m.Failover.FirstMade; f < 500*time.Millisecond || f > 500*time.Millisecond+pool.DefaultHoldEvery+2*time.Duration(s20ms) {
			t.Errorf("first dial made %v after the failover, want within 140ms of the promotion's end (500ms)", f)
		}
	}
}

// s20ms is the failover built-in's dial time.
const s20ms = 20 * time.Millisecond

// TestHoldSpacesDials: while the pool holds, dials begin at most one every
// Every, for the default spacing and a set one; the dials that fail in the
// switchover are as many as the promotion has room for at that pace.
func TestHoldSpacesDials(t *testing.T) {
	for _, every := range []time.Duration{0, 40 * time.Millisecond, 250 * time.Millisecond} {
		s := switchScenario(t, 2*time.Second)
		s.HoldEvery = every
		want := every
		if want == 0 {
			want = pool.DefaultHoldEvery
		}
		fo := runSwitch(t, s, Options{}).Failover
		t.Logf("every %v: %+v", every, fo)
		if fo.HoldDials < 2 || fo.HoldGap < want {
			t.Errorf("every %v: %d dials while held, least gap %v; want two or more, %v apart at least", every, fo.HoldDials, fo.HoldGap, want)
		}
		// The hold starts at the reset and the promotion ends 500 ms after
		// the failover: one dial at once and one every want after it.
		most := int((500*time.Millisecond-fo.ResetAt)/want) + 1
		if fo.DownDials > most || fo.DownPeak > most {
			t.Errorf("every %v: %d dials failed in the switchover (peak %d a second), want %d at most", every, fo.DownDials, fo.DownPeak, most)
		}
	}
}

// TestHoldEndsAtFor: a promotion of 3 s against a hold of 1 s. The pool
// answers no hold's Wait past For after its reset, and the callers dial
// for themselves after it (and fail, the node still being down); no
// second is held past it. A hold read without its For (held until the
// first make) would wait on to the promotion's end.
func TestHoldEndsAtFor(t *testing.T) {
	const holdFor = time.Second
	s := switchScenario(t, holdFor)
	s.Outages = []Outage{{Span{8 * time.Second, 11 * time.Second}, 1}}
	s.Timeout = 5 * time.Second // callers outwait the hold
	var heldAt []int
	m := runSwitch(t, s, Options{Observe: func(x Second, b pool.Books) {
		if b.Holding {
			heldAt = append(heldAt, x.Sec)
		}
	}})
	fo := m.Failover
	t.Logf("%+v, held at the end of seconds %v", fo, heldAt)
	if fo.Resets != 1 || fo.ResetAt < 0 || fo.HoldLast < 0 {
		t.Fatalf("reset at %v, last hold wait at %v: want both", fo.ResetAt, fo.HoldLast)
	}
	if fo.HoldLast > fo.ResetAt+holdFor {
		t.Errorf("last hold wait %v after the failover, past the reset (%v) and For (%v)", fo.HoldLast, fo.ResetAt, holdFor)
	}
	if fo.HoldLast < fo.ResetAt+holdFor-pool.DefaultHoldEvery {
		t.Errorf("last hold wait %v after the failover: the hold ended early (reset %v, For %v)", fo.HoldLast, fo.ResetAt, holdFor)
	}
	for _, sec := range heldAt {
		if end := time.Duration(sec) * time.Second; end > s.Failover+fo.ResetAt+holdFor {
			t.Errorf("the pool still held at the end of second %d", sec)
		}
	}
	if m.DialErrors == 0 {
		t.Error("no dial error after the hold ran out, the node still down: the hold outlived For")
	}
}

// TestHoldReplays: the run of a held switchover, recorded, replays step
// for step (pool.Replay rebuilds the Pool from the recording and holds
// every answer, the hold's Waits and Unmade's true among them, against
// the recorded one), and the recording holds the reset with its hold.
// Read back as a Keeper's recording (ReadKeeper), it gives back every
// caller, and the sim replaying them every Take answer.
func TestHoldReplays(t *testing.T) {
	s := switchScenario(t, 2*time.Second)
	s.Seconds = 12
	rec := record.New(64 << 20)
	r, err := Run(s, Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sum.Failover.PutBack == 0 || r.Sum.Failover.HoldWaits == 0 {
		t.Fatalf("nothing held: %+v", r.Sum.Failover)
	}
	rc, err := record.ReadRecording(r.Recording)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Steps[0].Index != 0 {
		t.Fatalf("the recorder dropped %d steps", rc.Steps[0].Index)
	}
	holds, unmadeTrue := 0, 0
	for _, st := range rc.Steps {
		switch st.Op {
		case "ResetFor":
			if st.Hold.For == 2*time.Second {
				holds++
			}
		case "Unmade":
			if st.OK() {
				unmadeTrue++
			}
		}
	}
	if holds != 1 || unmadeTrue != r.Sum.Failover.PutBack {
		t.Errorf("recorded %d resets holding 2s and %d Unmade answering true; want 1 and %d", holds, unmadeTrue, r.Sum.Failover.PutBack)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	// Read as a Keeper's recording, the run gives back its callers: none
	// failed nor gave up (a put-back caller read as failed, or a queue
	// that waits for the hold's timer read as given up, would count), and
	// the sim, replaying them with the same scenario, every Take answer.
	kl, err := ReadKeeper(r.Recording)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read: %v", kl.Counts)
	c := kl.Counts
	if len(kl.Rows) != r.Sum.Arrived || c.Failed != r.Sum.DialErrors+r.Sum.Refused || c.GaveUp != 0 || c.Before != 0 || c.Estimated() != 0 {
		t.Errorf("read %d callers of %d: %v", len(kl.Rows), r.Sum.Arrived, c)
	}
	if m := replayedAs(t, s, kl); !m.Exact() {
		t.Errorf("replayed: %v", m)
	}
}

func TestHoldSettings(t *testing.T) {
	s, err := Parse(strings.NewReader("failover 8s\nhold-for 2s\nhold-every 50ms\n"), builtin(t, "steady"))
	if err != nil || s.HoldFor != 2*time.Second || s.HoldEvery != 50*time.Millisecond {
		t.Fatalf("Parse: %v, %v, %v", s.HoldFor, s.HoldEvery, err)
	}
	if s, err = Override(s, "hold-for=0"); err != nil || s.HoldFor != 0 || s.HoldEvery != 50*time.Millisecond {
		t.Errorf("Override: %v, %v, %v", s.HoldFor, s.HoldEvery, err)
	}
	for _, bad := range []string{"hold-for -1s", "hold-every", "hold-for 1s 2s"} {
		if _, err := Parse(strings.NewReader(bad), s); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	// Held with no failover, nothing is held.
	s = builtin(t, "steady")
	s.HoldFor = time.Second
	fo := runSwitch(t, s, Options{}).Failover
	if fo != (FailoverSum{}) {
		t.Errorf("no failover, figures %+v", fo)
	}
}

// TestHoldTimer: at two callers a second, nothing comes back and hardly
// anyone arrives while no node takes a connection, so only the timer a
// hold's Wait arms (its Delay, as Keeper.waitLocked arms it) asks for the
// waiting callers again: a dial every Every for the whole promotion, and
// the new node found within a spacing and a dial of its end. Without the
// timer, the next dial would wait for the next arrival.
func TestHoldTimer(t *testing.T) {
	s := switchScenario(t, 3*time.Second)
	s.Rate = 2
	s.Bursts = nil
	s.Timeout = 3 * time.Second
	s.Outages = []Outage{{Span{8 * time.Second, 9 * time.Second}, 1}}
	fo := runSwitch(t, s, Options{}).Failover
	t.Logf("%+v", fo)
	if fo.Resets != 1 {
		t.Fatalf("%d resets, want 1", fo.Resets)
	}
	if fo.HoldGap != pool.DefaultHoldEvery || fo.DownDials < 5 {
		t.Errorf("%d dials failed while held, least gap %v; want 5 or more, %v apart", fo.DownDials, fo.HoldGap, pool.DefaultHoldEvery)
	}
	if f := fo.FirstMade; f < time.Second || f > time.Second+pool.DefaultHoldEvery+s.Dial {
		t.Errorf("first dial made %v after the failover; the promotion ended at 1s", f)
	}
}
