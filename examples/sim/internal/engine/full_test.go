package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// fullScenario is a pool of 8 in front of a backend that takes 4 of its
// connections, as a role's CONNECTION LIMIT 4 would: 75 callers a second
// holding 40 ms keep 3 busy on average and more than 4 often, with a
// second-long timeout and no ward. how is Scenario.Full.
func fullScenario(t *testing.T, how string) Scenario {
	s := builtin(t, "steady")
	s.Seconds = 20
	s.Rate = 75
	s.Limits.Size, s.Limits.Idle, s.Limits.Keep = 8, 8, 30*time.Second
	s.Timeout = time.Second
	s.ServerMax = 4
	s.Full = how
	return s
}

// runFull runs s, checking the books every second, and returns the result.
func runFull(t *testing.T, s Scenario, opt Options) *Result {
	t.Helper()
	opt.Observe = booksCheck(t, s.Name)
	r, err := Run(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refusedBound checks that, after the seconds of the first burst of
// refusals, the backend refused at most a dial a second (the pool's probe;
// two when a probe falls at either end of a second), and at most
// Size-ServerMax plus one a second in all.
func refusedBound(t *testing.T, s Scenario, r *Result) {
	t.Helper()
	first := -1
	for i, x := range r.Rows {
		if x.Full > 0 && first < 0 {
			first = i
		}
		if first >= 0 && i > first+1 && x.Full > 2 {
			t.Errorf("second %d: %d dials refused, want a probe or two", x.Sec, x.Full)
		}
	}
	if bound := s.Limits.Size - s.ServerMax + s.Seconds; r.Sum.Full.Refused > bound {
		t.Errorf("%d dials refused, want at most %d (the first burst and one a second)", r.Sum.Full.Refused, bound)
	}
}

// TestFullWaits: the same seeded load through a backend that takes 4
// connections from a pool of 8. Told the refusal is for want of room, the
// pool has the callers wait for a return: none fails, the backend refuses
// the first burst of dials and then about one a second, and never holds
// more than its 4. Told it is a failed dial, as pgxpool does, the callers
// whose dial it refused fail, unless a return served them meanwhile.
// Without the limit, or with the refusal
// failing its caller either way, the two runs would fail the same.
func TestFullWaits(t *testing.T) {
	s := fullScenario(t, FullWait)
	wait := runFull(t, s, Options{})
	fail := runFull(t, fullScenario(t, FullFail), Options{})
	w, f := wait.Sum, fail.Sum
	t.Logf("wait: %d failed, %d dials, p50 %v p99 %v, %+v", failed(w), w.Dials, w.P50, w.P99, w.Full)
	t.Logf("fail: %d failed, %d dials, p50 %v p99 %v, %+v", failed(f), f.Dials, f.P50, f.P99, f.Full)
	if w.Full.Refused == 0 || w.Full.PutBack == 0 || w.Full.Waits == 0 {
		t.Fatalf("the backend refused nothing, or nobody waited for it: %+v", w.Full)
	}
	if failed(w) != 0 {
		t.Errorf("waiting: %d calls failed (%d dial errors, %d timed out), want none", failed(w), w.DialErrors, w.TimedOut)
	}
	if w.Full.Conns > s.ServerMax || f.Full.Conns > s.ServerMax {
		t.Errorf("the backend held %d and %d connections, past its %d", w.Full.Conns, f.Full.Conns, s.ServerMax)
	}
	refusedBound(t, s, wait)
	// (A refused dial whose caller a return served meanwhile fails
	// nobody.)
	if f.DialErrors < 50 || f.DialErrors > f.Full.Refused {
		t.Errorf("failing: %d dial errors of %d refused dials, want 50 or more", f.DialErrors, f.Full.Refused)
	}
	if w.DeadDials != 0 || f.DeadDials != 0 {
		t.Errorf("refused dials counted as dead: %d and %d", w.DeadDials, f.DeadDials)
	}
}

// TestFullClosesFreeRoom: with Keep short and the load coming in bursts,
// the pool closes idle connections between them and the backend has room
// again: the next burst dials, and no call fails for want of room (a
// closed connection the backend still counted would refuse every dial,
// and with nothing live a refusal fails its caller).
func TestFullClosesFreeRoom(t *testing.T) {
	s := fullScenario(t, FullWait)
	s.Limits.Keep = 300 * time.Millisecond
	s.Rate = 10
	s.Bursts = []Burst{{Span{4 * time.Second, 6 * time.Second}, 8}, {Span{10 * time.Second, 12 * time.Second}, 8}, {Span{16 * time.Second, 18 * time.Second}, 8}}
	r := runFull(t, s, Options{})
	m := r.Sum
	t.Logf("%d failed, %d opened, %d dials, %+v", failed(m), m.Opened, m.Dials, m.Full)
	if failed(m) != 0 || m.Full.Conns > s.ServerMax {
		t.Errorf("%d calls failed, %d connections at most (limit %d)", failed(m), m.Full.Conns, s.ServerMax)
	}
	if m.Opened <= 2*s.ServerMax || m.Full.Refused == 0 {
		t.Errorf("%d opened and %d refused: the bursts never met the limit after a close", m.Opened, m.Full.Refused)
	}
}

// TestFullNoLimit: a limit at the pool's Size or above, or none, refuses
// nothing and changes nothing.
func TestFullNoLimit(t *testing.T) {
	s := fullScenario(t, FullWait)
	s.ServerMax = 0
	free := runFull(t, s, Options{}).Sum
	s.ServerMax = s.Limits.Size
	at := runFull(t, s, Options{}).Sum
	if at.Full.Refused != 0 || free.Full.Refused != 0 {
		t.Fatalf("refused %d and %d dials", free.Full.Refused, at.Full.Refused)
	}
	at.Full.Conns = free.Full.Conns
	if at != free {
		t.Errorf("a limit at Size changed the run:\n%+v\n%+v", free, at)
	}
}

// TestFullReplays: the waiting run, recorded, replays step for step (every
// Unmade with ward.GuardFull, its true answer and the Waits with their
// Delay held against the recorded ones); read back as a Keeper's recording
// (ReadKeeper) it gives back every caller, the put-back ones as queued
// rather than failed, and the sim replaying them every Take answer.
func TestFullReplays(t *testing.T) {
	s := fullScenario(t, FullWait)
	s.Seconds = 8
	r, err := Run(s, Options{Recorder: record.New(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sum.Full.PutBack == 0 {
		t.Fatalf("nobody put back: %+v", r.Sum.Full)
	}
	rc, err := record.ReadRecording(r.Recording)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Steps[0].Index != 0 {
		t.Fatalf("the recorder dropped %d steps", rc.Steps[0].Index)
	}
	full, fullTrue := 0, 0
	for _, st := range rc.Steps {
		if st.Op == "Unmade" && st.Guard == ward.GuardFull {
			full++
			if st.OK() {
				fullTrue++
			}
		}
	}
	// (Unmade answers true for a dial whose caller a return served
	// meanwhile too: nobody is put back then.)
	if full != r.Sum.Full.Refused || fullTrue < r.Sum.Full.PutBack {
		t.Errorf("recorded %d Unmade for a full backend, %d true; want %d, and %d true or more", full, fullTrue, r.Sum.Full.Refused, r.Sum.Full.PutBack)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	kl, err := ReadKeeper(r.Recording)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read: %v", kl.Counts)
	c := kl.Counts
	if len(kl.Rows) != r.Sum.Arrived || c.Failed != 0 || c.GaveUp != 0 || c.Before != 0 || c.Estimated() != 0 {
		t.Errorf("read %d callers of %d: %v", len(kl.Rows), r.Sum.Arrived, c)
	}
	if m := replayedAs(t, s, kl); !m.Exact() {
		t.Errorf("replayed: %v", m)
	}
}

func TestFullSettings(t *testing.T) {
	s, err := Parse(strings.NewReader("server-max 4\nfull fail\n"), builtin(t, "steady"))
	if err != nil || s.ServerMax != 4 || s.Full != FullFail {
		t.Fatalf("Parse: %v, %q, %v", s.ServerMax, s.Full, err)
	}
	if s, err = Override(s, "full=wait"); err != nil || s.Full != FullWait || s.ServerMax != 4 {
		t.Errorf("Override: %v, %q, %v", s.ServerMax, s.Full, err)
	}
	for _, bad := range []string{"server-max -1", "server-max", "full", "full maybe", "server-max 1 2"} {
		if _, err := Parse(strings.NewReader(bad), s); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	s.Full = "Wait"
	if s.Validate() == nil {
		t.Error("Validate took full \"Wait\"")
	}
}
