package pool

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file reads a recording (the format is at the top of record.go) and
// replays it: a fresh Pool, rebuilt from the recording's first checkpoint,
// is given the same calls, and every step it records must come out the same
// as the recorded one, byte for byte; so must every later checkpoint (the
// whole state) and the books at the end.

// ErrRecording is wrapped by the errors ReadRecording and Replay return for
// bytes that are not a whole, well-formed recording: truncated, corrupted,
// of another version, or describing a state no pool can be in.
var ErrRecording = errors.New("wardpool: bad recording")

// Recording is a recording read by ReadRecording.
type Recording struct {
	// Limits and Backoff are the recorded pool's limits and its ward's
	// backoff (nil without one): what Replay builds the fresh pool with.
	Limits  Limits
	Backoff *ward.Backoff
	// Steps are the steps held, oldest first; Steps[0].Index is how many
	// steps the recorder's ring dropped before them.
	Steps []Step
	// Total is how many steps the recorder had recorded when it was
	// written out; Steps ends with the last of them.
	Total uint64

	cps []checkpoint // cps[0] precedes Steps[0]
	end []byte       // the end record
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
	Extra time.Duration // Made: the life's jitter

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
	if s.Op == OpCeiling {
		fmt.Fprintf(&b, " n=%d", s.N)
	}
	if s.Op != OpClose && s.Op != OpCeiling {
		fmt.Fprintf(&b, " at=%v", s.At)
	}
	switch s.Op {
	case OpTake, OpReserve:
		fmt.Fprintf(&b, " roll=%v cpu=%d", s.Roll, s.CPU)
	case OpUnmade:
		fmt.Fprintf(&b, " roll=%v", s.Roll)
	case OpMade:
		fmt.Fprintf(&b, " extra=%v", s.Extra)
	}
	if a := s.Answer(); a != "" {
		b.WriteString(" → " + a)
	}
	return b.String()
}

// Divergence is Replay's report of the first step whose replayed answer is
// not the recorded one.
type Divergence struct {
	Index uint64 // the step's number (as Step.Index)
	Op    Op     // its operation; a Checkpoint or End compares the state
	Want  string // the recorded step
	Got   string // the replayed one
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("wardpool: replay differs at step %d (%v): recorded %s, replayed %s", d.Index, d.Op, d.Want, d.Got)
}

// Replay reads data as a recording and replays it (see Recording.Replay).
func Replay(data []byte) error {
	rc, err := ReadRecording(data)
	if err != nil {
		return err
	}
	return rc.Replay()
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
		return bad("version %d, this build reads version %d", v, recordVersion)
	}
	rc := &Recording{}
	r.u() // the recorder's limit: for the reader's information
	rc.Limits = Limits{Size: r.n(), Idle: r.n(), Keep: time.Duration(r.i()), Life: time.Duration(r.i())}
	switch flags := r.u(); flags {
	case 0:
	case 1:
		b := &ward.Backoff{Base: time.Duration(r.i()), Factor: r.f(), Cap: time.Duration(r.i()), Attempts: int(r.i())}
		code, spread := r.u(), r.f()
		switch code {
		case 0:
			b.Jitter = ward.Rigid
		case 1:
			b.Jitter = ward.Full
		case 2:
			b.Jitter = ward.Equal
		case 3:
			b.Jitter = ward.Decorrelated
		case 4:
			b.Jitter = ward.Spread(spread)
		default:
			r.fail("unknown jitter %d", code)
		}
		rc.Backoff = b
	default:
		r.fail("unknown ward flags %#x", flags)
	}
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
			if len(rc.cps) > 0 && idx != uint64(len(rc.Steps))+rc.Steps[0].Index {
				if len(rc.Steps) == 0 {
					r.fail("two checkpoints with no step between")
				} else {
					r.fail("checkpoint at step %d follows step %d: steps are missing", idx, rc.Steps[len(rc.Steps)-1].Index)
				}
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
	case OpEvict, OpClose, OpReset, OpTrim:
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
	case OpEvict, OpClose, OpReset, OpTrim:
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
}

func (c *cpState) read(r *reader) {
	c.hasOrigin = r.flag()
	c.prev = r.i()
	c.closed, c.started = r.flag(), r.flag()
	c.gen = uint32(r.u32())
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
		s.state = state(st)
		s.up, s.down, s.hi = none, none, none
		if s.state == free {
			continue
		}
		s.born, s.since, s.gen = r.i(), r.i(), uint32(r.u32())
		s.up, s.down, s.hi = r.seat(), r.seat(), r.seat()
	}
	c.free = r.seats(n)
	c.top, c.bottom = r.seat(), r.seat()
	c.heap = r.seats(n)
}

// check reports how the checkpoint's seats fail to be a pool's (limits l),
// or nil: every index in range, the idle list a chain from top to bottom
// through every idle seat once, the heap every idle seat once (with Life),
// the free list every free seat once.
func (c *cpState) check(l Limits) error {
	n := int32(len(c.seats))
	in := func(i int32) bool { return i == none || (i >= 0 && i < n) }
	var idles, frees int
	for i := range c.seats {
		s := &c.seats[i]
		switch s.state {
		case free:
			frees++
		case idle:
			idles++
		case lent:
			if s.up != none || s.down != none || s.hi != none {
				return fmt.Errorf("lent seat %d is linked as idle", i)
			}
		}
		if !in(s.up) || !in(s.down) || !in(s.hi) {
			return fmt.Errorf("seat %d links out of range", i)
		}
	}
	if !in(c.hint) || !in(c.top) || !in(c.bottom) {
		return errors.New("hint, top or bottom out of range")
	}
	seen := make([]bool, n)
	count, prev := 0, none
	for i := c.top; i != none; i = c.seats[i].down {
		if seen[i] || c.seats[i].state != idle || c.seats[i].up != prev {
			return fmt.Errorf("the idle list is broken at seat %d", i)
		}
		seen[i] = true
		count++
		prev = i
	}
	if count != idles || prev != c.bottom {
		return fmt.Errorf("the idle list holds %d of %d idle seats", count, idles)
	}
	clear(seen)
	for _, i := range c.free {
		if !in(i) || i == none || seen[i] || c.seats[i].state != free {
			return fmt.Errorf("the free list names seat %d", i)
		}
		seen[i] = true
	}
	if len(c.free) != frees {
		return fmt.Errorf("the free list holds %d of %d free seats", len(c.free), frees)
	}
	if l.Life == 0 {
		if len(c.heap) != 0 {
			return errors.New("a birth heap without a Life limit")
		}
		return nil
	}
	clear(seen)
	for at, i := range c.heap {
		if !in(i) || i == none || seen[i] || c.seats[i].state != idle || c.seats[i].hi != int32(at) {
			return fmt.Errorf("the birth heap names seat %d at %d", i, at)
		}
		seen[i] = true
	}
	if len(c.heap) != idles {
		return fmt.Errorf("the birth heap holds %d of %d idle seats", len(c.heap), idles)
	}
	return nil
}

// replayBase is the origin a replay's instants are counted from.
var replayBase = time.Unix(0, 0).UTC()

// restore builds a pool of stand-in resources (numbered from 1) in the
// state of checkpoint raw, and the next number free.
func (rc *Recording) restore(raw []byte) (*Pool[uint64], uint64, *Recorder, error) {
	var w ward.Ward
	if rc.Backoff != nil {
		b := *rc.Backoff
		w.Backoff = &b
	}
	p, err := New[uint64](rc.Limits, w)
	if err != nil {
		return nil, 0, nil, err
	}
	r := &reader{b: raw, off: 1}
	step := r.u()
	var c cpState
	c.read(r)
	if r.err != nil {
		return nil, 0, nil, r.err
	}
	if err := c.check(rc.Limits); err != nil {
		return nil, 0, nil, err
	}
	at := func(d int64) time.Time { return replayBase.Add(time.Duration(d)) }
	p.closed, p.started, p.gen, p.hint, p.making = c.closed, c.started, c.gen, c.hint, c.making
	p.epoch, p.last, p.lastAt = at(c.epoch), c.last, at(c.lastAt)
	p.failures, p.holdUntil, p.lastDelay = c.failures, c.holdUntil, c.lastDelay
	p.ceiling = max(c.ceiling, -1)
	p.books = c.books
	next := uint64(1)
	p.z.s = c.seats
	for i := range p.z.s {
		s := &p.z.s[i]
		switch s.state {
		case idle:
			p.z.idle++
		case lent:
			p.z.lent++
		default:
			continue
		}
		s.item = next
		p.z.index[next] = int32(i)
		next++
	}
	p.z.free, p.z.heap, p.z.top, p.z.bottom = c.free, c.heap, c.top, c.bottom
	rec := &Recorder{half: math.MaxInt, steps: step, attached: true,
		origin: replayBase, hasOrigin: c.hasOrigin, prev: c.prev}
	return p, next, rec, nil
}

// Replay rebuilds the recorded pool from the recording's first checkpoint
// and replays every step into it, in order. It returns nil when every
// replayed step, every later checkpoint and the books at the end are the
// same, byte for byte, as recorded; a *Divergence naming the first that is
// not; or an error wrapping ErrRecording for a recording that no pool could
// have made (a checkpoint whose seats do not form a pool, say). It never
// panics, and it does not change rc.
func (rc *Recording) Replay() (err error) {
	p, next, rec, err := rc.restore(rc.cps[0].raw)
	if err != nil {
		return fmt.Errorf("%w: the first checkpoint: %w", ErrRecording, err)
	}
	i := 0
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: replaying step %d panicked: %v", ErrRecording, rc.Total-uint64(len(rc.Steps)-i), v)
		}
	}()
	var loans []Lent[uint64]
	var scratch []byte
	cp := 1
	for i = 0; i <= len(rc.Steps); i++ {
		index := rc.Total - uint64(len(rc.Steps)-i)
		if cp < len(rc.cps) && rc.cps[cp].step == i {
			scratch = p.appendCheckpoint(scratch[:0], index, rec.hasOrigin, rec.origin, rec.prev)
			if string(scratch) != string(rc.cps[cp].raw) {
				return &Divergence{Index: index, Op: opCheckpoint,
					Want: "the state recorded", Got: "a state that " + diffAt(rc.cps[cp].raw, scratch)}
			}
			cp++
		}
		if i == len(rc.Steps) {
			break
		}
		s := rc.Steps[i]
		now := replayBase.Add(s.At)
		item := func() (uint64, bool) {
			if s.Ref == 0 {
				next++
				return next - 1, true
			}
			seat := int64(s.Ref) - 1
			if seat >= int64(len(p.z.s)) || p.z.s[seat].state == free {
				return 0, false
			}
			return p.z.s[seat].item, true
		}
		p.rec = rec
		rec.cur = rec.cur[:0]
		var v uint64
		ok := true
		switch s.Op {
		case OpTake:
			p.Take(now, s.Roll, s.CPU)
		case OpMade:
			if v, ok = item(); ok {
				p.MadeJitter(v, now, s.Extra)
			}
		case OpUnmade:
			p.Unmade(now, s.Roll)
		case OpGive:
			if v, ok = item(); ok {
				p.Give(v, now)
			}
		case OpGiveSeat:
			if v, ok = item(); ok {
				p.GiveSeat(s.Seat, v, now)
			}
		case OpDrop:
			if v, ok = item(); ok {
				p.Drop(v, now)
			}
		case OpEvict:
			p.Evict(now)
		case OpClose:
			p.Close()
		case OpCeiling:
			p.SetCeiling(s.N)
		case OpTrim:
			p.Trim(now)
		case OpReset:
			p.Reset(now)
		case OpRelent:
			if v, ok = item(); ok {
				p.Relent(s.Seat, v, s.N, now)
			}
		case OpReserve:
			p.Reserve(now, s.Roll, s.CPU)
		case OpRefusal:
			p.Refusal(now)
		case OpLoans:
			loans = p.AppendLoans(loans[:0], now)
		}
		p.rec = nil
		if !ok {
			return &Divergence{Index: s.Index, Op: s.Op, Want: s.String(),
				Got: fmt.Sprintf("no resource in seat %d to call it with", int64(s.Ref)-1)}
		}
		got := rec.cur
		if string(got) != string(s.raw) {
			g := readStep(&reader{b: got})
			g.Index = s.Index
			g.At = s.At - s.delta + g.delta
			return &Divergence{Index: s.Index, Op: s.Op, Want: s.String(), Got: g.String()}
		}
	}
	scratch = p.appendEnd(scratch[:0], rc.Total)
	if string(scratch) != string(rc.end) {
		return &Divergence{Index: rc.Total, Op: opEnd,
			Want: "books " + describeEnd(rc.end), Got: "books " + describeEnd(scratch)}
	}
	return nil
}

// describeEnd renders an end record's books.
func describeEnd(b []byte) string {
	r := &reader{b: b, off: 1}
	r.u()
	names := []string{"Made", "Failed", "Loans", "Reused", "Retired", "IdleRetired",
		"LifeRetired", "Dropped", "Waited", "Deferred", "Shed", "Live", "Idle", "Busy"}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatUint(r.u(), 10)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// diffAt says where two encodings first differ.
func diffAt(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("differs from byte %d of %d", i, len(want))
}

// reader reads the format's fields; the first error sticks and every read
// after it gives zero.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format+" (at byte %d)", append(args, r.off)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u() uint64 {
	var x uint64
	for shift := uint(0); ; shift += 7 {
		if r.err != nil {
			return 0
		}
		if shift >= 64 {
			r.fail("a varint runs past 64 bits")
			return 0
		}
		c := r.byte()
		if shift == 63 && c > 1 {
			r.fail("a varint runs past 64 bits")
			return 0
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

func (r *reader) i() int64 {
	u := r.u()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) f() float64 { return math.Float64frombits(bits.ReverseBytes64(r.u())) }

func (r *reader) flag() bool {
	v := r.u()
	if v > 1 {
		r.fail("a flag of %d", v)
	}
	return v == 1
}

// n reads a count or size that must fit an int.
func (r *reader) n() int {
	v := r.u()
	if v > math.MaxInt32 {
		r.fail("a count of %d", v)
		return 0
	}
	return int(v)
}

func (r *reader) u32() uint64 {
	v := r.u()
	if v > math.MaxUint32 {
		r.fail("%d does not fit 32 bits", v)
		return 0
	}
	return v
}

// seat reads a seat index (or none).
func (r *reader) seat() int32 {
	v := r.i()
	if v < int64(none) || v > math.MaxInt32 {
		r.fail("seat %d", v)
		return none
	}
	return int32(v)
}

// count reads how many items of at least size bytes follow, refusing more
// than the bytes left could hold.
func (r *reader) count(size int) int {
	v := r.u()
	if r.err == nil && v > uint64(len(r.b)-r.off)/uint64(size) {
		r.fail("%d items, more than the bytes left hold", v)
		return 0
	}
	return int(v)
}

// seats reads a list of at most n seat numbers.
func (r *reader) seats(n int) []int32 {
	k := r.count(1)
	if k > n {
		r.fail("a list of %d seats, of %d", k, n)
		return nil
	}
	out := make([]int32, k)
	for i := range out {
		v := r.u()
		if v >= uint64(n) {
			r.fail("seat %d of %d", v, n)
			return nil
		}
		out[i] = int32(v)
	}
	return out
}
