package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/google/go-cmp/cmp"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/internal/wire"
	"github.com/wardpool/wardpool/ward"
)

// drivePool makes steps random calls of every recorded kind into p, with
// the clock moving on, standing still or stepping back, and the answers
// acted on as a runtime would (made what Take said to make, gave back what
// it lent).
func drivePool(t *rapid.T, p *Pool[*int], steps int) {
	now := driveStart
	var lent []*int
	made := 0
	fresh := func() *int { made++; v := made; return &v }
	pick := func() (int, bool) {
		if len(lent) == 0 {
			return 0, false
		}
		return rapid.IntRange(0, len(lent)-1).Draw(t, "loan"), true
	}
	for range steps {
		switch rapid.IntRange(0, 15).Draw(t, "op") {
		case 0, 1, 2:
			// The CPU reading: hot now and then, for a ward's shedder.
			cpu := rapid.SampledFrom([]int{0, 0, 0, 950, 1000}).Draw(t, "cpu")
			a := p.Take(now, rapid.Float64Range(0, 0.999).Draw(t, "roll"), cpu)
			switch a.Kind {
			case pool.Ready:
				lent = append(lent, a.Item)
			case pool.Make:
				if rapid.IntRange(0, 4).Draw(t, "fail") == 0 {
					p.Unmade(now, rapid.Float64Range(0, 0.999).Draw(t, "roll"), ward.GuardNone)
				} else if v := fresh(); p.Made(v, a.Gen, now, time.Duration(rapid.IntRange(-5, 5).Draw(t, "jitter"))*time.Millisecond) {
					lent = append(lent, v)
				}
			}
		case 3, 4:
			if i, ok := pick(); ok {
				v := lent[i]
				lent = append(lent[:i], lent[i+1:]...)
				if rapid.Bool().Draw(t, "late") {
					// Given back late: the runtime learned of it after
					// asking the pool something later (see Pool.Give).
					p.Give(v, now.Add(-time.Duration(rapid.IntRange(1, 50).Draw(t, "early"))*time.Millisecond))
				} else {
					p.Give(v, now)
				}
			}
		case 5:
			if i, ok := pick(); ok {
				p.Drop(lent[i], now)
				lent = append(lent[:i], lent[i+1:]...)
			} else {
				p.Drop(fresh(), now) // unknown: false
			}
		case 6:
			p.Evict(now)
		case 7:
			if rapid.IntRange(0, 20).Draw(t, "close") == 0 {
				p.Close()
			}
		case 8:
			if rapid.IntRange(0, 5).Draw(t, "reset") == 0 {
				// At once, or rolling over a window of up to 3 s.
				p.Reset(now, time.Duration(rapid.SampledFrom([]int{0, 0, 1, 500, 3000}).Draw(t, "over ms"))*time.Millisecond)
			}
		case 9:
			if i, ok := pick(); ok {
				p.Give(lent[i], now)
				lent = append(lent[:i], lent[i+1:]...)
			}
		case 10:
			if a := p.Reserve(now, 0.5, 0); a.Kind == pool.Make {
				if v := fresh(); p.Made(v, a.Gen, now, 0) {
					lent = append(lent, v)
				}
			}
		case 11:
			p.Refusal(now)
		case 12:
			p.Loans(now)
			p.Admit(now, rapid.IntRange(0, 4).Draw(t, "ahead"), time.Duration(rapid.IntRange(0, 3000).Draw(t, "within ms"))*time.Millisecond)
		case 13:
			p.Give(fresh(), now) // unknown, or filling an open reservation
		default:
			step := time.Duration(rapid.IntRange(-200, 3000).Draw(t, "ms")) * time.Millisecond
			now = now.Add(step)
		}
	}
}

func newRecordedPool(t *rapid.T, limit int) (*Pool[*int], *Recorder) {
	l := pool.Limits{
		Size: rapid.IntRange(0, 5).Draw(t, "size"),
		Idle: rapid.IntRange(0, 5).Draw(t, "idle"),
		Keep: time.Duration(rapid.IntRange(0, 3).Draw(t, "keep")) * time.Second,
		Life: time.Duration(rapid.IntRange(0, 5).Draw(t, "life")) * time.Second,
	}
	var w ward.Ward
	if rapid.Bool().Draw(t, "backoff") {
		b := ward.DefaultBackoff
		b.Jitter = []ward.Jitter{ward.Rigid, ward.Full, ward.Equal, ward.Decorrelated, ward.Spread(0.3)}[rapid.IntRange(0, 4).Draw(t, "jitter")]
		w.Backoff = &b
	}
	raw, err := pool.New[*int](l, w)
	if err != nil {
		t.Fatal(err)
	}
	r := New(limit)
	p, err := Wrap(raw, r, driveStart)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// TestRecordReplayPool records random runs of a Pool, some long enough to
// roll the ring many times, and replays each with no difference.
func TestRecordReplayPool(t *testing.T) {
	rolled := 0
	rapid.Check(t, func(t *rapid.T) {
		p, r := newRecordedPool(t, MinLimit)
		drivePool(t, p, rapid.SampledFrom([]int{0, 1, 20, 300, 4000}).Draw(t, "steps"))
		data := p.Recording(nil)
		rc, err := ReadRecording(data)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Total != r.Steps() {
			t.Fatalf("the recording counts %d steps, the recorder %d", rc.Total, r.Steps())
		}
		// The limit counts steps; the checkpoints (a fixed part of some
		// 150 bytes, about ten bytes a seat) and the step that filled a
		// half come on top.
		if len(data) > MinLimit+640+32*8 {
			t.Fatalf("a recording of %d bytes from a recorder limited to %d", len(data), MinLimit)
		}
		if err := rc.Replay(); err != nil {
			t.Fatal(err)
		}
		if len(rc.cps) > 1 {
			rolled++
		}
	})
	if rolled == 0 {
		t.Fatal("no run rolled the ring: the checkpoints in the middle went untested")
	}
}

// TestRecordingRollsAndKeepsTheLatest checks that a long run keeps only the
// latest steps, from a checkpoint, and that they replay.
func TestRecordingRollsAndKeepsTheLatest(t *testing.T) {
	raw, _ := pool.New[*int](pool.Limits{Size: 2, Keep: time.Second}, ward.Ward{})
	r := New(MinLimit)
	now := time.Unix(1000, 0)
	p, err := Wrap(raw, r, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10000 {
		now = now.Add(time.Millisecond)
		a := p.Take(now, 0, 0)
		switch a.Kind {
		case pool.Make:
			v := i
			p.Made(&v, a.Gen, now, 0)
			p.Give(&v, now)
		case pool.Ready:
			p.Give(a.Item, now)
		}
	}
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Total != r.Steps() || rc.Steps[len(rc.Steps)-1].Index != rc.Total-1 {
		t.Fatalf("total %d, recorder %d, last step %d", rc.Total, r.Steps(), rc.Steps[len(rc.Steps)-1].Index)
	}
	if rc.Steps[0].Index == 0 || len(rc.cps) != 2 {
		t.Fatalf("the ring did not roll: first step %d, %d checkpoints", rc.Steps[0].Index, len(rc.cps))
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
}

// TestReplayNamesTheAlteredStep changes one answer in a recording (and
// mends the checksum): Replay must name that step, and show both answers.
func TestReplayNamesTheAlteredStep(t *testing.T) {
	now := time.Unix(50, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 2}, ward.Ward{})
	p, err := Wrap(raw, New(0), now)
	if err != nil {
		t.Fatal(err)
	}
	a, b := new(int), new(int)
	p.Take(now, 0, 0)    // 0: Make
	p.Made(a, 0, now, 0) // 1
	p.Take(now, 0, 0)    // 2: Make
	p.Made(b, 0, now, 0) // 3
	p.Give(a, now)       // 4: true
	p.Give(b, now)       // 5: true
	p.Take(now, 0, 0)    // 6: Ready b
	p.Take(now, 0, 0)    // 7: Ready a
	p.Take(now, 0, 0)    // 8: Wait
	data := p.Recording(nil)
	if err := Replay(data); err != nil {
		t.Fatalf("unaltered: %v", err)
	}
	rc, err := ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	s := rc.Steps[5]
	if s.Op != "Give" || s.Answer() != "true" {
		t.Fatalf("step 5 is %v", s)
	}
	// Step 5's answer is its last byte: true becomes false.
	off := len(data) - 8 - len(rc.end) - sumLen(rc.Steps[6:])
	if data[off-1] != 1 {
		t.Fatalf("byte %d is %d, want the answer true", off-1, data[off-1])
	}
	altered := mend(append([]byte(nil), data...), off-1, 0)
	err = Replay(altered)
	var d *Divergence
	if !errors.As(err, &d) {
		t.Fatalf("Replay of an altered answer: %v", err)
	}
	if d.Index != 5 || d.Op != "Give" || !strings.HasSuffix(d.Want, "→ false") || !strings.HasSuffix(d.Got, "→ true") {
		t.Fatalf("divergence %+v", d)
	}
	t.Log(d)
}

func sumLen(steps []Step) int {
	n := 0
	for _, s := range steps {
		n += len(s.raw)
	}
	return n
}

// mend sets data[i] to v and writes the checksum again.
func mend(data []byte, i int, v byte) []byte {
	data[i] = v
	body := data[:len(data)-8]
	sum := wire.FNV64(body)
	for j := range 8 {
		data[len(body)+j] = byte(sum >> (8 * (7 - j)))
	}
	return data
}

// TestRecordRefusesWardsItCannotRebuild: a guard that does not read back
// from its state (a zero one, not built by its constructor) is refused, by
// name, with ErrUnrecordable, and the pool is left unrecorded; so is a
// second pool for one Recorder.
func TestRecordRefusesWardsItCannotRebuild(t *testing.T) {
	now := time.Unix(1, 0)
	for name, w := range map[string]ward.Ward{
		"Breaker": {Breaker: new(ward.Breaker)},
		"Shedder": {Shedder: new(ward.Shedder)},
		"Bucket":  {Bucket: new(ward.Bucket)},
		"Limiter": {Limiter: new(ward.Limiter)},
	} {
		p, _ := pool.New[*int](pool.DefaultLimits, w)
		r := New(0)
		got, err := Wrap(p, r, now)
		if !errors.Is(err, ErrUnrecordable) || !strings.Contains(err.Error(), name) || got != nil {
			t.Errorf("%s: %v", name, err)
		}
		if r.attached {
			t.Errorf("%s: the Recorder is attached after a refusal", name)
		}
	}
	r := New(0)
	p1, _ := pool.New[*int](pool.DefaultLimits, ward.Ward{})
	p2, _ := pool.New[*int](pool.DefaultLimits, ward.Ward{})
	if _, err := Wrap(p1, r, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Wrap(p2, r, now); !errors.Is(err, ErrUnrecordable) {
		t.Fatalf("one Recorder on two pools: %v", err)
	}
	if _, err := Wrap(p2, nil, now); !errors.Is(err, ErrUnrecordable) {
		t.Fatalf("a nil Recorder: %v", err)
	}
}

// TestRecordAttachesToARunningPool: a recorder attached mid-run starts at a
// checkpoint of the state as it stands, and replays from there.
func TestRecordAttachesToARunningPool(t *testing.T) {
	b := ward.DefaultBackoff
	raw, _ := pool.New[*int](pool.Limits{Size: 3, Keep: time.Second, Life: 3 * time.Second}, ward.Ward{Backoff: &b})
	now := time.Unix(7, 0)
	x, y := new(int), new(int)
	raw.Take(now, 0, 0)
	raw.Made(x, 0, now, 0)
	raw.Take(now, 0, 0)
	raw.Unmade(now, 0.3, ward.GuardNone) // backoff holds makes back
	raw.Take(now, 0, 0)                  // Later
	now = now.Add(time.Second)
	raw.Take(now, 0, 0)
	raw.Made(y, 0, now, time.Millisecond)
	raw.Give(x, now)
	now = now.Add(300 * time.Millisecond) // attached later than the pool's last instant
	p, err := Wrap(raw, New(0), now)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(1500 * time.Millisecond)
	p.Evict(now)
	p.Take(now, 0, 0)
	p.Give(y, now)
	p.Loans(now)
	p.Reset(now, 0)
	if err := Replay(p.Recording(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestRecordingStepsRead checks the steps as read: operations, instants
// and answers.
func TestRecordingStepsRead(t *testing.T) {
	raw, _ := pool.New[*int](pool.Limits{Size: 1}, ward.Ward{})
	t0 := time.Unix(100, 0)
	p, err := Wrap(raw, New(0), t0)
	if err != nil {
		t.Fatal(err)
	}
	v := new(int)
	p.Take(t0, 0.25, 0)
	p.Made(v, 0, t0.Add(time.Millisecond), 0)
	p.Take(t0.Add(2*time.Millisecond), 0, 0)
	p.Give(v, t0.Add(time.Second))
	p.Take(t0.Add(1500*time.Millisecond), 0, 0)
	p.Close()
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"#0 Take at=0s roll=0.25 cpu=0 → Make gen=0",
		"#1 Made ref=0 at=1ms gen=0 extra=0s → true",
		"#2 Take at=2ms roll=0 cpu=0 → Wait",
		"#3 Give ref=1 at=1s → true",
		"#4 Take at=1.5s roll=0 cpu=0 → Ready seat=0 idle=500ms",
		"#5 Close at=1.5s → seats []",
	}
	var got []string
	for _, s := range rc.Steps {
		got = append(got, s.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestRecordingOfABigPool: a checkpoint larger than the limit (two
// thousand idle seats, a 4 KiB recorder) does not crowd the steps out:
// the limit counts steps, each half holds its checkpoint on top.
func TestRecordingOfABigPool(t *testing.T) {
	raw, _ := pool.New[*int](pool.Limits{}, ward.Ward{})
	now := time.Unix(9, 0)
	items := make([]*int, 2000)
	for i := range items {
		items[i] = new(int)
		raw.Take(now, 0, 0)
		raw.Made(items[i], 0, now, 0)
	}
	for _, v := range items {
		raw.Give(v, now)
	}
	p, err := Wrap(raw, New(MinLimit), now)
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		now = now.Add(time.Microsecond)
		a := p.Take(now, 0, 0)
		p.Give(a.Item, now)
	}
	rc, err := ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Steps) < 200 || len(rc.cps) != 2 {
		t.Fatalf("%d steps held of %d, %d checkpoints", len(rc.Steps), rc.Total, len(rc.cps))
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
}

// TestRecordedInstantsAreTheCalls: whichever way a hook takes the instant
// (the same reading as the step before, the pool's latest reading, a
// reading behind it, the same instant in another location, a jump far
// enough to move the pool's epoch), each step holds the instant its call
// was given, and the recording replays.
func TestRecordedInstantsAreTheCalls(t *testing.T) {
	raw, _ := pool.New[*int](pool.Limits{Size: 2}, ward.Ward{})
	t0 := time.Unix(100, 0)
	p, err := Wrap(raw, New(0), t0)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	far := t0.Add(40 * 365 * 24 * time.Hour) // past reanchor: the epoch moves
	v := new(int)
	var ats []time.Time
	take := func(now time.Time) pool.Taken[*int] { ats = append(ats, now); return p.Take(now, 0, 0) }
	give := func(now time.Time) { ats = append(ats, now); p.Give(v, now) }

	if a := take(t0); a.Kind != pool.Make {
		t.Fatalf("first Take: %v", a.Kind)
	}
	ats = append(ats, t0)
	p.Made(v, 0, t0, 0)
	give(t0)                 // the same reading again
	take(ms(1))              // a later one
	give(ms(1))              // and again
	take(ms(1).In(time.UTC)) // the same instant, another location
	give(ms(1))              // back to the first representation
	take(ms(0).Add(500 * time.Microsecond))
	give(ms(0).Add(500 * time.Microsecond)) // behind the clock, twice
	give(ms(1))                             // the latest reading again, after those
	take(ms(2))
	give(ms(2))
	take(far)
	give(far) // the same reading just after the epoch moved
	take(far.Add(time.Millisecond))
	give(far.Add(time.Millisecond))

	data := p.Recording(nil)
	rc, err := ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []time.Duration
	for _, s := range rc.Steps {
		got = append(got, s.At)
	}
	for _, a := range ats {
		want = append(want, a.Sub(t0))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the steps' instants (-want +got):\n%s", diff)
	}
	if err := Replay(data); err != nil {
		t.Fatal(err)
	}
}
