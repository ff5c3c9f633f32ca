package pool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file reads a recording (the format is at the top of record.go) into
// a Recording: its steps, decoded, and its checkpoints, each a whole state
// of the pool, kept for Replay (replay.go) to rebuild from and to compare
// against.

// ErrRecording is wrapped by the errors ReadRecording and Replay return for
// bytes that are not a whole, well-formed recording: truncated, corrupted,
// of another version, or describing a state no pool can be in.
var ErrRecording = errors.New("wardpool: bad recording")

// Recording is a recording read by ReadRecording.
type Recording struct {
	// Limits and Backoff are the recorded pool's limits and its ward's
	// backoff (nil without one); Ward returns all of its guards.
	Limits  Limits
	Backoff *ward.Backoff
	// Steps are the steps held, oldest first; Steps[0].Index is how many
	// steps the recorder's ring dropped before them.
	Steps []Step
	// Total is how many steps the recorder had recorded when it was
	// written out; Steps ends with the last of them.
	Total uint64

	cps   []checkpoint // cps[0] precedes Steps[0]
	end   []byte       // the end record
	flags uint64       // which guards the ward has (record_ward.go)
}

// checkpoint is a checkpoint record: raw, and at which step it stands.
type checkpoint struct {
	raw  []byte
	step int // index in Steps of the step after it
}

// Step is one recorded call. Fields that the operation does not have are
// zero; resources are named by Ref (seat plus one, 0 for one the pool did
// not hold).
type Step struct {
	Index uint64        // the step's number since the recorder was attached
	Op    Op            // the call
	At    time.Duration // now, since the recording's origin
	Roll  float64       // Take, Unmade, Reserve: the draw
	CPU   int           // Take, Reserve: the CPU reading
	Seat  int32         // GiveSeat, Relent: the seat argument
	Ref   uint64        // Made, Give, GiveSeat, Drop, Relent: the resource
	N     int           // Relent: the loans reported
	Guard ward.Guard    // Unreserve: the guard that refused
	Extra time.Duration // Made: the life's jitter
	// Limits is a Limits step's new limits (Pool.SetLimits).
	Limits Limits

	raw    []byte        // the whole record
	answer int           // where in raw the answer begins
	delta  time.Duration // At as written: the difference from the step before
}

// Answer describes the step's answer, as "Ready seat=3 idle=1ms".
func (s Step) Answer() string {
	if s.answer > len(s.raw) {
		return ""
	}
	return describeAnswer(s.Op, s.raw[s.answer:])
}

// String describes the step, as "#12 Take at=1.5s roll=0.25 cpu=0 → Ready
// seat=1 idle=0s".
func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %v", s.Index, s.Op)
	switch s.Op {
	case OpGiveSeat, OpRelent:
		fmt.Fprintf(&b, " seat=%d", s.Seat)
	}
	switch s.Op {
	case OpMade, OpGive, OpGiveSeat, OpDrop, OpRelent:
		fmt.Fprintf(&b, " ref=%d", s.Ref)
	}
	if s.Op == OpRelent {
		fmt.Fprintf(&b, " n=%d", s.N)
	}
	if s.Op == OpCeiling || s.Op == OpCeilingAt {
		fmt.Fprintf(&b, " n=%d", s.N)
	}
	if s.Op == OpLimits {
		l := s.Limits
		fmt.Fprintf(&b, " size=%d idle=%d keep=%v life=%v", l.Size, l.Idle, l.Keep, l.Life)
	}
	if s.Op != OpClose && s.Op != OpCeiling {
		fmt.Fprintf(&b, " at=%v", s.At)
	}
	switch s.Op {
	case OpTake, OpReserve:
		fmt.Fprintf(&b, " roll=%v cpu=%d", s.Roll, s.CPU)
	case OpUnmade:
		fmt.Fprintf(&b, " roll=%v", s.Roll)
	case OpUnreserve:
		fmt.Fprintf(&b, " guard=%v", s.Guard)
	case OpMade:
		fmt.Fprintf(&b, " extra=%v", s.Extra)
	}
	if a := s.Answer(); a != "" {
		b.WriteString(" → " + a)
	}
	return b.String()
}

// ReadRecording reads a recording written by Pool.Recording or
// Keeper.Recording. It fails, with an error wrapping ErrRecording that says
// what and where, for anything else: a wrong magic or version, a checksum
// that does not match (a corrupted or truncated file), or a record that
// does not parse.
func ReadRecording(data []byte) (*Recording, error) {
	bad := func(format string, args ...any) (*Recording, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrRecording}, args...)...)
	}
	if len(data) < len(recordMagic)+8 || string(data[:len(recordMagic)]) != recordMagic {
		return bad("not a recording (no %q at the start)", recordMagic)
	}
	body := data[:len(data)-8]
	var sum uint64
	for _, c := range data[len(data)-8:] {
		sum = sum<<8 | uint64(c)
	}
	if fnv64(body) != sum {
		return bad("checksum mismatch: the recording is truncated or corrupted")
	}
	r := &reader{b: body, off: len(recordMagic)}
	if v := r.u(); r.err == nil && v != recordVersion {
		if v == 1 {
			return bad("version 1, written before recordings held the ward's state; this build reads version %d", recordVersion)
		}
		return bad("version %d, this build reads version %d", v, recordVersion)
	}
	rc := &Recording{}
	r.u() // the recorder's limit: for the reader's information
	rc.Limits = Limits{Size: r.n(), Idle: r.n(), Keep: time.Duration(r.i()), Life: time.Duration(r.i())}
	if rc.flags = r.u(); rc.flags&^wardAll != 0 {
		r.fail("unknown ward flags %#x", rc.flags)
	}
	r.flags = rc.flags
	if r.err == nil {
		if err := rc.Limits.Validate(); err != nil {
			r.fail("%v", err)
		}
	}
	at := int64(0) // the running instant: steps write differences
	for r.err == nil {
		if r.off >= len(r.b) {
			r.fail("no end record")
			break
		}
		start := r.off
		switch op := Op(r.b[r.off]); op {
		case opCheckpoint:
			r.off++
			idx := r.u()
			prev := skipCheckpoint(r)
			if r.err != nil {
				break
			}
			if len(rc.cps) == 0 {
				at = prev
			} else if prev != at {
				r.fail("a checkpoint at instant %d after a step at %d", prev, at)
				break
			}
			if len(rc.cps) > 0 && len(rc.Steps) == 0 {
				r.fail("two checkpoints with no step between")
				break
			}
			if len(rc.cps) > 0 && idx != uint64(len(rc.Steps))+rc.Steps[0].Index {
				r.fail("checkpoint at step %d follows step %d: steps are missing", idx, rc.Steps[len(rc.Steps)-1].Index)
				break
			}
			if len(rc.cps) == 0 {
				rc.Total = idx // the index of the first step, until the end says
			}
			rc.cps = append(rc.cps, checkpoint{raw: r.b[start:r.off], step: len(rc.Steps)})
		case opEnd:
			if len(rc.cps) == 0 {
				r.fail("end before any checkpoint")
				break
			}
			r.off++
			total := r.u()
			for range 14 {
				r.u()
			}
			if r.err != nil {
				break
			}
			if r.off != len(r.b) {
				r.fail("%d bytes after the end record", len(r.b)-r.off)
				break
			}
			if want := rc.Total + uint64(len(rc.Steps)); total != want {
				r.fail("the end counts %d steps, the recording holds up to %d", total, want)
				break
			}
			rc.Total, rc.end = total, r.b[start:]
			rc.Backoff = rc.Ward().Backoff
			return rc, nil
		default:
			if len(rc.cps) == 0 {
				r.fail("a step before the first checkpoint")
				break
			}
			s := readStep(r)
			if r.err != nil {
				break
			}
			s.Index = rc.Total + uint64(len(rc.Steps))
			at += int64(s.delta)
			s.At = time.Duration(at)
			rc.Steps = append(rc.Steps, s)
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrRecording, r.err)
}

// readStep reads one step at r (its op byte first), with At as written:
// the difference from the step before.
func readStep(r *reader) Step {
	start := r.off
	s := Step{Op: Op(r.b[r.off])}
	r.off++
	switch s.Op {
	case OpTake, OpReserve:
		s.At, s.Roll, s.CPU = time.Duration(r.i()), r.f(), int(r.i())
	case OpMade:
		s.Ref, s.At, s.Extra = r.u(), time.Duration(r.i()), time.Duration(r.i())
	case OpUnmade:
		s.At, s.Roll = time.Duration(r.i()), r.f()
	case OpUnreserve:
		s.At, s.Guard = time.Duration(r.i()), ward.Guard(r.byte())
	case OpGive, OpDrop:
		s.Ref, s.At = r.u(), time.Duration(r.i())
	case OpGiveSeat:
		s.Seat, s.Ref, s.At = r.seat(), r.u(), time.Duration(r.i())
	case OpRelent:
		s.Seat, s.Ref, s.N, s.At = r.seat(), r.u(), int(r.i()), time.Duration(r.i())
	case OpEvict, OpReset, OpRefusal, OpLoans, OpTrim:
		s.At = time.Duration(r.i())
	case OpCeiling:
		s.N = int(r.i())
	case OpCeilingAt:
		s.N, s.At = int(r.i()), time.Duration(r.i())
	case OpLimits:
		s.Limits = Limits{Size: r.n(), Idle: r.n(), Keep: time.Duration(r.i()), Life: time.Duration(r.i())}
		s.At = time.Duration(r.i())
	case OpClose:
	default:
		r.fail("unknown operation %d at byte %d", s.Op, start)
		return s
	}
	s.delta = s.At
	s.answer = r.off - start
	skipAnswer(r, s.Op)
	if r.err == nil {
		s.raw = r.b[start:r.off]
	}
	return s
}

// skipAnswer reads past the answer of op at r.
func skipAnswer(r *reader, op Op) {
	switch op {
	case OpTake:
		kind, _ := r.byte(), r.byte()
		switch Kind(kind) {
		case Ready:
			r.u()
			r.i()
		case Stale:
			r.u()
		case Later:
			r.i()
		}
	case OpMade, OpGive, OpGiveSeat, OpDrop, OpRelent, OpReserve:
		r.byte()
	case OpEvict, OpClose, OpReset, OpTrim, OpCeilingAt, OpLimits:
		for n := r.count(1); n > 0; n-- {
			r.u()
		}
	case OpRefusal:
		r.f()
	case OpLoans:
		for n := r.count(2); n > 0; n-- {
			r.u()
			r.i()
		}
	}
}

// describeAnswer renders an answer of op for people.
func describeAnswer(op Op, ans []byte) string {
	r := &reader{b: ans}
	var out string
	switch op {
	case OpTake:
		kind, guard := Kind(r.byte()), ward.Guard(r.byte())
		out = kind.String()
		if guard != ward.GuardNone {
			out += " guard=" + guard.String()
		}
		switch kind {
		case Ready:
			out += fmt.Sprintf(" seat=%d idle=%v", int64(r.u())-1, time.Duration(r.i()))
		case Stale:
			out += fmt.Sprintf(" seat=%d", int64(r.u())-1)
		case Later:
			out += fmt.Sprintf(" delay=%v", time.Duration(r.i()))
		}
	case OpMade, OpGive, OpGiveSeat, OpDrop, OpRelent, OpReserve:
		out = strconv.FormatBool(r.byte() == 1)
	case OpEvict, OpClose, OpReset, OpTrim, OpCeilingAt, OpLimits:
		seats := []string{}
		for n := r.count(1); n > 0; n-- {
			seats = append(seats, strconv.FormatInt(int64(r.u())-1, 10))
		}
		out = "seats [" + strings.Join(seats, " ") + "]"
	case OpRefusal:
		out = strconv.FormatFloat(r.f(), 'g', -1, 64)
	case OpLoans:
		loans := []string{}
		for n := r.count(2); n > 0; n-- {
			seat := int64(r.u()) - 1
			loans = append(loans, fmt.Sprintf("%d:%v", seat, time.Duration(r.i())))
		}
		out = "loans [" + strings.Join(loans, " ") + "]"
	}
	if r.err != nil || r.off != len(ans) {
		return fmt.Sprintf("%s (malformed answer %x)", out, ans)
	}
	return out
}

// skipCheckpoint reads past a checkpoint's fields after its index, and
// returns the instant of the step before it.
func skipCheckpoint(r *reader) int64 {
	var cp cpState
	cp.read(r)
	return cp.prev
}

// cpState is a checkpoint's fields, read.
type cpState struct {
	hasOrigin, closed, started bool
	prev, epoch, last, lastAt  int64
	gen                        uint32
	hint                       int32
	making, failures           int
	holdUntil                  int64
	lastDelay                  time.Duration
	ceiling                    int
	books                      Books
	seats                      []seat[uint64]
	free, heap                 []int32
	top, bottom                int32
	ward                       ward.Ward
}

func (c *cpState) read(r *reader) {
	c.hasOrigin = r.flag()
	c.prev = r.i()
	c.closed, c.started = r.flag(), r.flag()
	if c.gen = uint32(r.u32()); c.gen > genMask {
		r.fail("generation %d, past the %d a pool counts to", c.gen, genMask)
		return
	}
	c.hint = r.seat()
	c.making = r.n()
	c.epoch, c.last, c.lastAt = r.i(), r.i(), r.i()
	c.failures = r.n()
	c.holdUntil, c.lastDelay = r.i(), time.Duration(r.i())
	c.ceiling = int(r.i())
	k := &c.books
	for _, v := range [...]*uint64{&k.Made, &k.Failed, &k.Loans, &k.Reused, &k.Retired,
		&k.IdleRetired, &k.LifeRetired, &k.Dropped, &k.Waited, &k.Deferred, &k.Shed} {
		*v = r.u()
	}
	n := r.count(1)
	c.seats = make([]seat[uint64], n)
	for i := range c.seats {
		s := &c.seats[i]
		st := r.u()
		if st > uint64(lent) {
			r.fail("seat %d in state %d", i, st)
			return
		}
		s.setSt(state(st))
		s.up, s.down, s.hi = none, none, none
		if s.st() == free {
			continue
		}
		var g uint32
		s.born, s.since, g = r.i(), r.i(), uint32(r.u32())
		if g > genMask {
			r.fail("seat %d of generation %d, past the %d a pool counts to", i, g, genMask)
			return
		}
		s.setGen(g)
		s.up, s.down, s.hi = r.seat(), r.seat(), r.seat()
	}
	c.free = r.seats(n)
	c.top, c.bottom = r.seat(), r.seat()
	c.heap = r.seats(n)
	c.ward = readWard(r, r.flags, replayBase)
}
