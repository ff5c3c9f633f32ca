package engine

import (
	"cmp"
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// This file records real Keeper runs on a fake clock, with a load the test
// knows, and holds what ReadKeeper makes of the recordings against it.

// clockTo moves c to at (its Advance runs the timers due by then, in
// order, on the caller's goroutine); an at before now moves it back.
func clockTo(c *clocktest.Clock, at time.Time) { c.Advance(at.Sub(c.Now())) }

// gatedDialer makes resources whose dials end when the test opens them.
type gatedDialer struct {
	mu    sync.Mutex
	gates []gate // dials begun, not yet let through
	n     int
}

// gate holds one dial until the test closes ch; caller is the index of the
// caller it was made for (its context's callerKey), -1 for none.
type gate struct {
	ch     chan struct{}
	caller int
}

// callerKey keys a caller's index in its context: a Keeper's dial gets its
// caller's values.
type callerKey struct{}

func (d *gatedDialer) dial(ctx context.Context) (*int, error) {
	g := gate{ch: make(chan struct{}), caller: -1}
	if i, ok := ctx.Value(callerKey{}).(int); ok {
		g.caller = i
	}
	d.mu.Lock()
	d.gates = append(d.gates, g)
	d.mu.Unlock()
	<-g.ch
	d.mu.Lock()
	d.n++
	v := d.n
	d.mu.Unlock()
	return &v, nil
}

func (d *gatedDialer) take() []gate {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.gates
	d.gates = nil
	return g
}

// truth is one caller of a driven run, as the test saw it, in ns since the
// first arrival: -1 for what never happened.
type truth struct {
	asked, got, released int64
	behind               bool // arrived while others were queued
}

// drive runs load (arrivals with holds) against a recorded Keeper with
// limits l, on a fake clock, every dial taking dial, and returns the
// recording and what each caller saw. Every loan goes through the
// Keeper's lock and the Pool. Events of the load must fall on distinct instants (the test fails
// otherwise): two at one instant would leave their order to the scheduler.
//
// giveUp names callers that give up (their context is canceled) at an
// instant, if not served by then.
func drive(t *testing.T, load []Arrival, l pool.Limits, dial time.Duration, giveUp map[int]time.Duration) ([]byte, []truth) {
	t.Helper()
	base := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	clock := clocktest.New(base)
	d := &gatedDialer{}
	cfg := wardpool.Config[*int]{
		Limits:   l,
		Dial:     d.dial,
		Close:    func(*int) error { return nil },
		Clock:    clock,
		Recorder: record.New(8 << 20),
	}
	k, err := wardpool.NewKeeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		i    int
		loan wardpool.Loan[*int]
		err  error
	}
	results := make(chan result, len(load))
	seen := make([]truth, len(load))
	for i := range seen {
		seen[i] = truth{asked: int64(load[i].At), got: -1, released: -1}
	}
	type timed struct {
		at   time.Duration
		i    int                // the caller releasing, or -1: a dial ending
		stop context.CancelFunc // a caller giving up
		loan wardpool.Loan[*int]
		gate gate
	}
	var pending []timed
	now := time.Duration(0)
	outstanding := 0
	answered := make([]bool, len(load)) // the caller's Acquire returned
	// settle waits until every caller asking has been lent a resource or is
	// queued or waiting on a dial that is held at its gate. A caller
	// dialing may be served by a return before its dial lands: its dial
	// then lands for nobody, and it is no longer asking.
	settle := func() {
		deadline := time.Now().Add(30 * time.Second) // a hang guard, not a timing check
		for {
			for _, g := range d.take() {
				pending = append(pending, timed{at: now + dial, i: -1, gate: g})
			}
			select {
			case r := <-results:
				outstanding--
				answered[r.i] = true
				if r.err != nil {
					if _, ok := giveUp[r.i]; !ok {
						t.Fatalf("caller %d: %v", r.i, r.err)
					}
					continue
				}
				seen[r.i].got = int64(now)
				pending = append(pending, timed{at: now + load[r.i].Hold, i: r.i, loan: r.loan})
				continue
			default:
			}
			st := k.Stats()
			d.mu.Lock()
			held := len(d.gates)
			d.mu.Unlock()
			blocked, dialing, holding := 0, 0, 0
			for _, p := range pending {
				switch {
				case p.stop != nil:
				case p.i < 0:
					blocked++
					if p.gate.caller >= 0 && !answered[p.gate.caller] {
						dialing++ // its caller still waits for it
					}
				default:
					holding++
				}
			}
			// Every dial let through has landed, every resource lent has
			// reached its caller (Busy less the dials is what is lent), and
			// every caller asking is queued or waits for its dial.
			if held == 0 && st.Dialing == blocked && st.Busy-st.Dialing == holding && outstanding == st.Waiting+dialing {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Keeper did not settle: %d asking, %+v", outstanding, st)
			}
			runtime.Gosched()
		}
	}
	next := 0
	for {
		settle()
		slices.SortFunc(pending, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
		at, kind := time.Duration(-1), ""
		if next < len(load) {
			at, kind = load[next].At, "arrive"
		}
		if len(pending) > 0 && (at < 0 || pending[0].at <= at) {
			if at == pending[0].at || len(pending) > 1 && pending[1].at == pending[0].at {
				t.Fatalf("two events at %v: the load must keep its instants apart", pending[0].at)
			}
			at, kind = pending[0].at, "pending"
		}
		if at < 0 {
			break
		}
		now = at
		clockTo(clock, base.Add(at))
		switch kind {
		case "arrive":
			i := next
			next++
			seen[i].behind = k.Stats().Waiting > 0
			outstanding++
			ctx, stop := context.WithCancel(context.WithValue(context.Background(), callerKey{}, i))
			if at, ok := giveUp[i]; ok {
				pending = append(pending, timed{at: at, i: i, stop: stop})
			}
			go func() {
				defer stop()
				l, err := k.Acquire(ctx)
				results <- result{i, l, err}
			}()
		case "pending":
			p := pending[0]
			pending = pending[1:]
			if p.stop != nil {
				p.stop()
			} else if p.i < 0 {
				close(p.gate.ch)
			} else {
				seen[p.i].released = int64(now)
				p.loan.Release()
			}
		}
	}
	data := k.Recording()
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return data, seen
}

// steadyLoad is n callers arriving about every gap, each holding about
// hold, drawn from seed, at instants of whole microseconds plus an odd few
// nanoseconds so that no two events of a run meet.
func steadyLoad(seed uint64, n int, gap, hold time.Duration) []Arrival {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]Arrival, n)
	at := time.Duration(0)
	for i := range out {
		out[i] = Arrival{At: at, Hold: time.Duration(rng.Int64N(int64(2*hold)))/time.Microsecond*time.Microsecond + time.Duration(2*rng.IntN(400)+1)}
		at += time.Duration(rng.Int64N(int64(2*gap)))/time.Microsecond*time.Microsecond + time.Duration(2*rng.IntN(400)+1)
	}
	return out
}

// checkRows holds the rows ReadKeeper read against what each caller saw:
// lent and returned at the same instants, and asking at the same instant,
// except a caller who arrived behind others, which is first seen when the
// Keeper asks for it (queued: at a Take answering Wait for it; or served),
// between its true arrival and its loan.
func checkRows(t *testing.T, rows []Row, seen []truth) {
	t.Helper()
	if len(rows) != len(seen) {
		t.Fatalf("%d rows read, %d callers", len(rows), len(seen))
	}
	got := slices.Clone(rows)
	slices.SortFunc(got, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Acquired, b.Acquired), cmp.Compare(a.Release, b.Release), cmp.Compare(a.Asked, b.Asked))
	})
	want := slices.Clone(seen)
	slices.SortFunc(want, func(a, b truth) int {
		return cmp.Or(cmp.Compare(a.got, b.got), cmp.Compare(a.released, b.released), cmp.Compare(a.asked, b.asked))
	})
	for i, r := range got {
		w := want[i]
		ok := r.Acquired == w.got && r.Release == w.released
		if w.behind {
			ok = ok && r.Asked >= w.asked && r.Asked <= w.got
		} else {
			ok = ok && r.Asked == w.asked
		}
		if !ok {
			t.Fatalf("row %d of %d: read %+v, the run was %+v", i, len(want), r, w)
		}
	}
}

// replayed runs the sim on kl's load with its recorded limits and dial
// time, recording the run, and holds its Take answers against the
// recording's.
func replayed(t *testing.T, kl *KeeperLoad, dial time.Duration) Match {
	t.Helper()
	s, _ := Builtin("steady")
	s.Limits, s.Dial, s.Timeout, s.Bursts = kl.Limits, dial, 0, nil
	s.Seconds = int(kl.End()/time.Second) + 2
	return replayedAs(t, s, kl)
}

// replayedAs runs scenario s on kl's load, recording the run, and holds its
// Take answers against the recording's.
func replayedAs(t *testing.T, s Scenario, kl *KeeperLoad) Match {
	t.Helper()
	res, err := Run(s, Options{Load: kl.Load(s.Hold), Recorder: record.New(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := record.ReadRecording(res.Recording)
	if err != nil {
		t.Fatal(err)
	}
	return Reproduced(kl.Source, got)
}

// TestKeeperRecordingThroughTheLock records Keeper runs whose every loan
// goes through the lock and the Pool, a light load and
// a heavy one, and checks every caller ReadKeeper rebuilds against the run:
// exact, except callers who queued behind others, who are first seen when
// asked for. The sim replaying the load with the recorded limits and dial
// time gives back every Take answer, in order and at its instant.
func TestKeeperRecordingThroughTheLock(t *testing.T) {
	const dial = 7 * time.Millisecond
	limits := pool.Limits{Size: 3, Idle: 3, Keep: time.Minute}
	for _, c := range []struct {
		name   string
		seed   uint64
		gap    time.Duration
		behind bool // callers queue behind others
	}{{"light", 2, 15 * time.Millisecond, false}, {"heavy", 1, 9 * time.Millisecond, true}} {
		t.Run(c.name, func(t *testing.T) {
			load := steadyLoad(c.seed, 150, c.gap, 20*time.Millisecond)
			data, seen := drive(t, load, limits, dial, nil)
			kl, err := ReadKeeper(data)
			if err != nil {
				t.Fatal(err)
			}
			if kl.Limits != limits || kl.Backoff || kl.Dropped != 0 {
				t.Fatalf("limits %+v backoff %v dropped %d", kl.Limits, kl.Backoff, kl.Dropped)
			}
			behind := 0
			for _, s := range seen {
				if s.behind {
					behind++
				}
			}
			n := kl.Counts
			t.Logf("%d callers, %d behind others: %v", len(seen), behind, n)
			if n.Queued == 0 || n.Dialed == 0 || n.Lock == 0 || (behind > 0) != c.behind {
				t.Fatalf("the load did not exercise what it is for: %v", n)
			}
			if n.Lane != 0 || n.Before != 0 || n.Guessed != 0 || n.Failed+n.GaveUp+n.Waiting != 0 {
				t.Fatalf("counts %v", n)
			}
			// A caller behind others is read at its arrival: the Keeper
			// asked for the head on its behalf, and the Wait is recorded.
			if n.AtReturn != 0 {
				t.Errorf("%d callers read as first seen at a return, want each read at its arrival", n.AtReturn)
			}
			checkRows(t, kl.Rows, seen)
			if kl.Dial != dial {
				t.Errorf("dial time read as %v, it was %v", kl.Dial, dial)
			}
			m := replayed(t, kl, dial)
			t.Logf("replay: %v", m)
			if !m.Exact() || m.Recorded == 0 {
				t.Errorf("replay: %v", m)
			}
		})
	}
}

// A caller that gives up while queued is not in the recording as such: its
// Wait is, and the next return serves nobody, so it reads as having given
// up, never served.
func TestKeeperRecordingOfACallerWhoGaveUp(t *testing.T) {
	ms := time.Millisecond
	load := []Arrival{{At: 0, Hold: 50 * ms}, {At: 10 * ms, Hold: 5 * ms}, {At: 60 * ms, Hold: 5 * ms}}
	data, seen := drive(t, load, pool.Limits{Size: 1, Idle: 1, Keep: time.Minute}, 3*ms, map[int]time.Duration{1: 20 * ms})
	kl, err := ReadKeeper(data)
	if err != nil {
		t.Fatal(err)
	}
	c := kl.Counts
	if c.Dialed != 1 || c.Lock != 1 || c.GaveUp != 1 || c.Queued+c.AtReturn+c.Failed+c.Waiting != 0 {
		t.Fatalf("%v", c)
	}
	want := []Row{
		{Asked: 0, Acquired: seen[0].got, Release: seen[0].released, Answers: "dialed"},
		{Asked: int64(10 * ms), Acquired: -1, Release: -1, Answers: "gaveup"},
		{Asked: int64(60 * ms), Acquired: int64(60 * ms), Release: int64(65 * ms), Answers: "lock"},
	}
	for i := range kl.Rows {
		kl.Rows[i].Line = 0
	}
	if !slices.Equal(kl.Rows, want) {
		t.Fatalf("rows %+v, want %+v", kl.Rows, want)
	}
}

// Over loads of every weight, pools of one to four and dials of several
// lengths: every caller is read as it was (or, queued behind others, no
// earlier than it arrived), and the replay gives back every Take answer.
func TestKeeperRecordingReplaysItsDecisions(t *testing.T) {
	var all KeeperCounts
	for seed := range uint64(12) {
		size := 1 + int(seed%4)
		gap := time.Duration(3+seed*2) * time.Millisecond
		dial := time.Duration(1+seed%5) * time.Millisecond
		load := steadyLoad(seed+100, 80, gap, 15*time.Millisecond)
		data, seen := drive(t, load, pool.Limits{Size: size, Idle: size, Keep: time.Minute}, dial, nil)
		kl, err := ReadKeeper(data)
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, kl.Rows, seen)
		if m := replayed(t, kl, dial); !m.Exact() {
			t.Errorf("seed %d, Size %d, gap %v, dial %v: %v (%v)", seed, size, gap, dial, m, kl.Counts)
		}
		all.Lock += kl.Counts.Lock
		all.Queued += kl.Counts.Queued
		all.Dialed += kl.Counts.Dialed
		all.Returned += kl.Counts.Returned
		all.AtReturn += kl.Counts.AtReturn
	}
	t.Logf("%v", all)
	if all.Lock == 0 || all.Queued == 0 || all.Dialed == 0 {
		t.Fatalf("the loads did not queue, dial and queue behind: %v", all)
	}
}

// A caller whose own dial is in flight is served by a resource given back
// meanwhile, and its dial lands for nobody: the new resource goes idle and
// serves the caller queued by then. ReadKeeper reads the Take at the return
// as the dialing caller's acquire (one caller, not two) and the landing as a
// dial handed on, and the sim replaying the load gives back every decision.
func TestKeeperRecordingOfADialerServedByAReturn(t *testing.T) {
	ms := time.Millisecond
	// Size 2, dials of 10 ms. Caller 0 dials and holds until 15 ms; caller
	// 1 dials at 12 ms and is served by caller 0's return at 15 ms; caller 2
	// queues at 20 ms (one lent, one being made: Size reached) and is
	// served at 22 ms by caller 1's dial, landing for nobody; caller 3
	// finds both idle.
	load := []Arrival{{At: 0, Hold: 5 * ms}, {At: 12 * ms, Hold: 20 * ms}, {At: 20 * ms, Hold: 3 * ms}, {At: 40 * ms, Hold: 5 * ms}}
	const dial = 10 * time.Millisecond
	data, seen := drive(t, load, pool.Limits{Size: 2, Idle: 2, Keep: time.Minute}, dial, nil)
	if seen[1].got != int64(15*ms) || seen[2].got != int64(22*ms) {
		t.Fatalf("the Keeper served caller 1 at %v and caller 2 at %v, want 15ms and 22ms: %+v",
			time.Duration(seen[1].got), time.Duration(seen[2].got), seen)
	}
	kl, err := ReadKeeper(data)
	if err != nil {
		t.Fatal(err)
	}
	c := kl.Counts
	if c.Dialed != 1 || c.Returned != 1 || c.Queued != 1 || c.Lock != 1 ||
		c.AtReturn+c.Lane+c.Failed+c.GaveUp+c.Waiting+c.Open+c.Before+c.Guessed != 0 {
		t.Fatalf("%v", c)
	}
	want := []Row{
		{Asked: 0, Acquired: int64(10 * ms), Release: int64(15 * ms), Answers: "dialed"},
		{Asked: int64(12 * ms), Acquired: int64(15 * ms), Release: int64(35 * ms), Answers: "returned"},
		{Asked: int64(20 * ms), Acquired: int64(22 * ms), Release: int64(25 * ms), Answers: "queued"},
		{Asked: int64(40 * ms), Acquired: int64(40 * ms), Release: int64(45 * ms), Answers: "lock"},
	}
	for i := range kl.Rows {
		kl.Rows[i].Line = 0
	}
	if !slices.Equal(kl.Rows, want) {
		t.Fatalf("rows %+v, want %+v", kl.Rows, want)
	}
	checkRows(t, kl.Rows, seen)
	if kl.Dials != 2 || kl.Dial != dial {
		t.Errorf("%d dials of %v read, want 2 of %v", kl.Dials, kl.Dial, dial)
	}
	if m := replayed(t, kl, dial); !m.Exact() || m.Recorded != 6 {
		t.Errorf("replay: %v", m)
	}
}
