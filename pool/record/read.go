package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/internal/wire"
	"github.com/wardpool/wardpool/ward"
)

// This file reads a recording into a Recording: its steps, decoded, and its
// checkpoints, each a whole state of the pool, kept for Replay to rebuild
// from and to compare against.

// ErrRecording is wrapped by the errors ReadRecording and Replay return for
// bytes that are not a whole, well-formed recording: truncated, corrupted,
// of another version, or describing a state no pool can be in.
var ErrRecording = errors.New("wardpool: bad recording")

// Recording is a recording read by ReadRecording.
type Recording struct {
	// Limits are the recorded pool's limits at the first checkpoint; a
	// step of SetLimits changes them (Step.Limits).
	Limits pool.Limits
	// Steps are the steps held, oldest first; Steps[0].Index is how many
	// steps the recorder's ring dropped before them.
	Steps []Step
	// Total is how many steps the recorder had recorded when it was
	// written out; Steps ends with the last of them.
	Total uint64

	cps []checkpoint // cps[0] precedes Steps[0]
	end []byte       // the end record
}

// checkpoint is a checkpoint record: its parts, and at which step it
// stands.
type checkpoint struct {
	raw   []byte  // the whole record
	state []byte  // the pool's state in it
	known []int32 // the seats whose resources the recorder knew
	prev  int64   // the instant of the step before it
	step  int     // index in Steps of the step after it
}

// Step is one recorded call. Fields that the operation does not have are
// zero; resources are named by Ref (seat plus one, 0 for one the pool did
// not hold).
type Step struct {
	Index uint64        // the step's number since the recorder was attached
	Op    string        // the call: "Take", "Made", "Give", …
	At    time.Duration // now, since the recording's origin
	Roll  float64       // Take, Unmade, Reserve: the draw
	CPU   int           // Take, Reserve: the CPU reading
	Ref   uint64        // Made, Give, Drop: the resource
	Gen   uint32        // Made: the reservation's generation
	Extra time.Duration // Made: the life's jitter
	Guard ward.Guard    // Unmade: the guard outside the pool that refused; none for a failed make
	N     int           // Ceiling: the ceiling; Admit: the callers ahead
	Wait  time.Duration // Admit: how long the caller may wait
	Over  time.Duration // Reset: the window (0: at once)
	Hold  pool.Hold     // ResetFor: the hold that follows it
	Class int           // TakeAs, MadeAs, UnmadeAs: the caller's class
	// Fronts are a Serve's fronts: each class and when its front waiter
	// began to wait, since the recording's origin.
	Fronts []Front
	// Limits is a Limits step's new limits (Pool.SetLimits).
	Limits pool.Limits

	op     op
	raw    []byte        // the whole record
	answer int           // where in raw the answer begins
	delta  time.Duration // At as written: the difference from the step before
}

// Front is one of a Serve step's fronts (pool.Front), its instant since
// the recording's origin.
type Front struct {
	Class int
	Since time.Duration
}

// Answer describes the step's answer, as "Ready seat=3 idle=1ms".
func (s Step) Answer() string {
	if s.answer > len(s.raw) {
		return ""
	}
	return describeAnswer(s.op, s.raw[s.answer:])
}

// Kind is the answer's kind, for a Take or a Reserve; zero otherwise.
func (s Step) Kind() pool.Kind {
	if (s.op == opTake || s.op == opReserve || s.op == opTakeAs) && s.answer < len(s.raw) {
		return pool.Kind(s.raw[s.answer])
	}
	return 0
}

// OK is the answer of a Made, Give or Drop: whether the pool kept (or,
// for Drop, held) the resource; of an Unmade, whether the caller waits
// (see pool.Pool.Unmade); false for any other step.
func (s Step) OK() bool {
	switch s.op {
	case opMade, opGive, opDrop, opUnmade, opMadeAs, opUnmadeAs:
		return s.answer < len(s.raw) && s.raw[s.answer] == 1
	}
	return false
}

// String describes the step, as "#12 Take at=1.5s roll=0.25 cpu=0 → Ready
// seat=1 idle=0s".
func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %v", s.Index, s.Op)
	switch s.op {
	case opMade, opGive, opDrop:
		fmt.Fprintf(&b, " ref=%d", s.Ref)
	case opMadeAs:
		fmt.Fprintf(&b, " ref=%d class=%d", s.Ref, s.Class)
	case opTakeAs, opUnmadeAs:
		fmt.Fprintf(&b, " class=%d", s.Class)
	case opServe:
		for _, f := range s.Fronts {
			fmt.Fprintf(&b, " front=%d@%v", f.Class, f.Since)
		}
	case opResetFor:
		fmt.Fprintf(&b, " ref=%d", s.Ref)
		if s.Hold.For > 0 {
			fmt.Fprintf(&b, " hold=%v every=%v", s.Hold.For, s.Hold.Every)
		}
	case opCeiling:
		fmt.Fprintf(&b, " n=%d", s.N)
	case opAdmit:
		fmt.Fprintf(&b, " ahead=%d within=%v", s.N, s.Wait)
	case opReset:
		if s.Over > 0 {
			fmt.Fprintf(&b, " over=%v", s.Over)
		}
	case opLimits:
		l := s.Limits
		fmt.Fprintf(&b, " size=%d idle=%d keep=%v life=%v", l.Size, l.Idle, l.Keep, l.Life)
	}
	fmt.Fprintf(&b, " at=%v", s.At)
	switch s.op {
	case opTake, opReserve, opTakeAs:
		fmt.Fprintf(&b, " roll=%v cpu=%d", s.Roll, s.CPU)
	case opUnmade, opUnmadeAs:
		fmt.Fprintf(&b, " roll=%v", s.Roll)
		if s.Guard != ward.GuardNone {
			fmt.Fprintf(&b, " refused by %v", s.Guard)
		}
	case opMade, opMadeAs:
		fmt.Fprintf(&b, " gen=%d extra=%v", s.Gen, s.Extra)
	}
	if a := s.Answer(); a != "" {
		b.WriteString(" → " + a)
	}
	return b.String()
}

// ReadRecording reads a recording written by Pool.Recording or
// Keeper.Recording. It fails, with an error wrapping ErrRecording that says
// what and where, for anything else: a wrong magic or version, a checksum
// that does not match, a truncated or malformed record. It never panics.
func ReadRecording(data []byte) (*Recording, error) {
	bad := func(format string, args ...any) (*Recording, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrRecording}, args...)...)
	}
	if len(data) < len(magic)+8 || string(data[:len(magic)]) != magic {
		return bad("not a recording (no %q at the start)", magic)
	}
	body := data[:len(data)-8]
	var sum uint64
	for _, c := range data[len(data)-8:] {
		sum = sum<<8 | uint64(c)
	}
	if wire.FNV64(body) != sum {
		return bad("checksum mismatch: the recording is truncated or corrupted")
	}
	r := &wire.Reader{B: body, Off: len(magic)}
	if v := r.U(); r.Err == nil && v != version {
		switch {
		case v == 4:
			return bad("version %d, written by an older wardpool (before recordings held classes of callers); this build reads version %d only: replay it with the release that wrote it", v, version)
		case v < version:
			return bad("version %d, written by an older wardpool (before recordings held a full backend's room); this build reads version %d only: replay it with the release that wrote it", v, version)
		}
		return bad("version %d, this build reads version %d", v, version)
	}
	rc := &Recording{}
	r.U()          // the recorder's limit: for the reader's information
	at := int64(0) // the running instant: steps write differences
	for r.Err == nil {
		if r.Off >= len(r.B) {
			r.Fail("no end record")
			break
		}
		start := r.Off
		switch o := op(r.B[r.Off]); o {
		case opCheckpoint:
			r.Off++
			idx, prev := r.U(), r.I()
			known := make([]int32, r.Count(1))
			for i := range known {
				known[i] = int32(r.U32())
				if known[i] < 0 || i > 0 && known[i] <= known[i-1] {
					r.Fail("the known seats are not in order")
					break
				}
			}
			n := r.Count(1)
			if r.Err != nil {
				break
			}
			state := r.B[r.Off : r.Off+n]
			r.Off += n
			switch {
			case len(rc.cps) > 0 && prev != at:
				r.Fail("a checkpoint at instant %d after a step at %d", prev, at)
			case len(rc.cps) > 0 && len(rc.Steps) == 0:
				r.Fail("two checkpoints with no step between")
			case len(rc.cps) > 0 && idx != uint64(len(rc.Steps))+rc.Steps[0].Index:
				r.Fail("checkpoint at step %d follows step %d: steps are missing", idx, rc.Steps[len(rc.Steps)-1].Index)
			}
			if r.Err != nil {
				break
			}
			if len(rc.cps) == 0 {
				at = prev
				rc.Total = idx // the index of the first step, until the end says
				sr := &wire.Reader{B: state}
				rc.Limits = pool.Limits{Size: sr.N(), Idle: sr.N(), Keep: time.Duration(sr.I()), Life: time.Duration(sr.I())}
				if sr.Err != nil {
					r.Fail("the first checkpoint's limits: %v", sr.Err)
					break
				}
			}
			rc.cps = append(rc.cps, checkpoint{raw: r.B[start:r.Off], state: state, known: known, prev: prev, step: len(rc.Steps)})
		case opEnd:
			if len(rc.cps) == 0 {
				r.Fail("end before any checkpoint")
				break
			}
			r.Off++
			total := r.U()
			for range bookNames {
				r.U()
			}
			if r.Err != nil {
				break
			}
			if r.Off != len(r.B) {
				r.Fail("%d bytes after the end record", len(r.B)-r.Off)
				break
			}
			if want := rc.Total + uint64(len(rc.Steps)); total != want {
				r.Fail("the end counts %d steps, the recording holds up to %d", total, want)
				break
			}
			rc.Total, rc.end = total, r.B[start:]
			return rc, nil
		default:
			if len(rc.cps) == 0 {
				r.Fail("a step before the first checkpoint")
				break
			}
			s := readStep(r)
			if r.Err != nil {
				break
			}
			s.Index = rc.Total + uint64(len(rc.Steps))
			at += int64(s.delta)
			s.At = time.Duration(at)
			rc.Steps = append(rc.Steps, s)
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrRecording, r.Err)
}

// readStep reads one step at r (its op byte first), with At as written:
// the difference from the step before.
func readStep(r *wire.Reader) Step {
	start := r.Off
	s := Step{op: op(r.B[r.Off])}
	s.Op = s.op.String()
	r.Off++
	s.delta = time.Duration(r.I())
	switch s.op {
	case opTake, opReserve:
		s.Roll, s.CPU = r.F(), int(r.I())
	case opTakeAs:
		s.Roll, s.CPU, s.Class = r.F(), int(r.I()), int(r.I())
	case opMadeAs:
		s.Ref, s.Gen, s.Class, s.Extra = r.U(), r.U32(), int(r.I()), time.Duration(r.I())
	case opUnmadeAs:
		s.Roll, s.Guard, s.Class = r.F(), ward.Guard(r.Byte()), int(r.I())
	case opServe:
		s.Fronts = make([]Front, r.Count(2))
		for i := range s.Fronts {
			s.Fronts[i] = Front{Class: int(r.I()), Since: time.Duration(r.I())}
		}
	case opMade:
		s.Ref, s.Gen, s.Extra = r.U(), r.U32(), time.Duration(r.I())
	case opUnmade:
		s.Roll, s.Guard = r.F(), ward.Guard(r.Byte())
	case opGive, opDrop:
		s.Ref = r.U()
	case opReset:
		s.Over = time.Duration(r.I())
	case opResetFor:
		s.Ref = r.U()
		s.Hold = pool.Hold{For: time.Duration(r.I()), Every: time.Duration(r.I())}
	case opEvict, opClose, opRefusal, opLoans:
	case opCeiling:
		s.N = int(r.I())
	case opAdmit:
		s.N, s.Wait = int(r.I()), time.Duration(r.I())
	case opLimits:
		s.Limits = pool.Limits{Size: r.N(), Idle: r.N(), Keep: time.Duration(r.I()), Life: time.Duration(r.I())}
	default:
		r.Fail("unknown step %v", s.op)
		return s
	}
	s.answer = r.Off - start
	skipAnswer(r, s.op)
	s.raw = r.B[start:r.Off]
	return s
}

// skipAnswer reads past the answer of o at r.
func skipAnswer(r *wire.Reader, o op) {
	switch o {
	case opTake, opReserve, opTakeAs:
		kind, _ := r.Byte(), r.Byte()
		switch pool.Kind(kind) {
		case pool.Ready:
			r.U()
			r.I()
		case pool.Stale, pool.Make:
			r.U()
		case pool.Later, pool.Wait:
			r.I()
		}
	case opMade, opGive, opDrop, opUnmade, opMadeAs, opUnmadeAs:
		r.Byte()
	case opServe:
		r.I()
		r.I()
	case opEvict, opClose, opReset, opResetFor, opCeiling, opLimits:
		for n := r.Count(1); n > 0; n-- {
			r.U()
		}
	case opRefusal:
		r.F()
	case opAdmit:
		r.I()
		r.Byte()
	case opLoans:
		for n := r.Count(2); n > 0; n-- {
			r.U()
			r.I()
		}
	}
}

// describeAnswer renders an answer of o for people.
func describeAnswer(o op, ans []byte) string {
	r := &wire.Reader{B: ans}
	var out string
	switch o {
	case opTake, opReserve, opTakeAs:
		kind, guard := pool.Kind(r.Byte()), ward.Guard(r.Byte())
		out = kind.String()
		if guard != ward.GuardNone {
			out += " guard=" + guard.String()
		}
		switch kind {
		case pool.Ready:
			out += fmt.Sprintf(" seat=%d idle=%v", int64(r.U())-1, time.Duration(r.I()))
		case pool.Stale:
			out += fmt.Sprintf(" seat=%d", int64(r.U())-1)
		case pool.Later:
			out += fmt.Sprintf(" delay=%v", time.Duration(r.I()))
		case pool.Wait:
			if d := time.Duration(r.I()); d > 0 {
				out += fmt.Sprintf(" delay=%v", d)
			}
		case pool.Make:
			out += fmt.Sprintf(" gen=%d", r.U())
		}
	case opMade, opGive, opDrop, opMadeAs:
		out = strconv.FormatBool(r.Byte() == 1)
	case opServe:
		i, d := r.I(), time.Duration(r.I())
		out = fmt.Sprintf("front %d", i)
		if d > 0 {
			out += fmt.Sprintf(" delay=%v", d)
		}
	case opUnmade, opUnmadeAs:
		out = "fail"
		if r.Byte() == 1 {
			out = "wait"
		}
	case opEvict, opClose, opReset, opResetFor, opCeiling, opLimits:
		seats := []string{}
		for n := r.Count(1); n > 0; n-- {
			seats = append(seats, strconv.FormatInt(int64(r.U())-1, 10))
		}
		out = "seats [" + strings.Join(seats, " ") + "]"
	case opRefusal:
		out = strconv.FormatFloat(r.F(), 'g', -1, 64)
	case opAdmit:
		wait := time.Duration(r.I())
		out = fmt.Sprintf("%v wait=%v", r.Byte() == 1, wait)
	case opLoans:
		loans := []string{}
		for n := r.Count(2); n > 0; n-- {
			seat := int64(r.U()) - 1
			loans = append(loans, fmt.Sprintf("%d:%v", seat, time.Duration(r.I())))
		}
		out = "loans [" + strings.Join(loans, " ") + "]"
	}
	if r.Err != nil || r.Off != len(ans) {
		return fmt.Sprintf("%s (malformed answer %x)", out, ans)
	}
	return out
}

// Ward returns the recorded pool's guards as they stood at the recording's
// first checkpoint, fresh ones on every call, their instants counted from
// the Unix epoch as the replay's are (see Recording.Replay). Build a pool
// with them and the recording's Limits to re-run the recorded calls, or
// change them to ask what another ward would have done.
func (rc *Recording) Ward() ward.Ward {
	if len(rc.cps) == 0 {
		return ward.Ward{} // not read by ReadRecording
	}
	_, w, _, err := pool.ReadState(rc.cps[0].state, replayBase)
	if err != nil {
		return ward.Ward{}
	}
	return w
}
