package pool

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// This file is the recorder: every call that changes a Pool, or moves its
// clock, written down with its arguments and its answer, so that a replay
// (replay.go) can feed the same calls to a fresh Pool and check that every
// answer comes out the same, byte for byte. What is recorded (the ward's
// state included, record_ward.go), the ring of two halves that bounds it,
// and the format's grammar are in DESIGN.md at the module's root ("The
// recording").

// Op is the operation of a recorded step.
type Op uint8

// The recorded operations, as numbered in the format.
const (
	OpTake Op = iota + 1
	OpMade
	OpUnmade
	OpGive
	OpGiveSeat
	OpDrop
	OpEvict
	OpClose
	OpReset
	OpRelent
	OpReserve
	OpRefusal
	OpLoans
	OpCeiling
	OpTrim
	OpCeilingAt
	OpLimits
	OpUnreserve

	opCheckpoint Op = 0x40
	opEnd        Op = 0x41
)

var opNames = [...]string{"Op(0)", "Take", "Made", "Unmade", "Give", "GiveSeat", "Drop",
	"Evict", "Close", "Reset", "Relent", "Reserve", "Refusal", "Loans", "Ceiling", "Trim", "CeilingAt", "Limits", "Unreserve"}

// String returns the operation's name, such as "Take".
func (o Op) String() string {
	switch {
	case int(o) < len(opNames):
		return opNames[o]
	case o == opCheckpoint:
		return "Checkpoint"
	case o == opEnd:
		return "End"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// recordVersion is the format's version; a reader refuses any other.
const recordVersion = 2

const recordMagic = "wprc"

// Recorder sizes.
const (
	// DefaultRecordLimit is the memory a Recorder made with a limit of zero
	// keeps: 1 MiB, some tens of thousands of steps.
	DefaultRecordLimit = 1 << 20
	// MinRecordLimit is the least a Recorder keeps; a smaller limit is
	// raised to it.
	MinRecordLimit = 4 << 10
)

// ErrUnrecordable is wrapped by the error Pool.Record returns for a pool it
// cannot record (see Record).
var ErrUnrecordable = errors.New("wardpool: pool cannot be recorded")

// Recorder writes down every call made into one Pool (see the top of
// record.go for what and how), keeping about its limit in bytes: the
// latest steps, from a checkpoint on. Attach it with Pool.Record or
// Config.Recorder; write it out with Pool.Recording or Keeper.Recording.
//
// A Recorder is not safe for concurrent use: it belongs to its pool, under
// the same lock. When none is attached, a pool pays one nil test per call.
type Recorder struct {
	half     int    // a half is full at this many bytes of steps
	old, cur []byte // the two halves; each begins with a checkpoint
	mark     int    // the length of cur's checkpoint
	steps    uint64 // steps recorded so far: the index of the next
	attached bool

	origin    time.Time // instants are written as nanoseconds since origin
	hasOrigin bool
	prev      int64 // the instant of the last step written, since origin

	// The pool's epoch, and it since origin: a now the pool's clock has
	// just taken is written from the pool's own instant, without a
	// subtraction of times (see Pool.recAt).
	epoch    time.Time
	epochOff int64

	// The now of the last step, when the pool's clock had taken it as its
	// latest reading: the instant prev (see Pool.recSince).
	at   time.Time
	atOK bool

	// The pool's limits when each half's checkpoint was written: a
	// recording's header carries those of its first checkpoint, and its
	// SetLimits steps the changes since.
	limOld, limCur Limits
}

// NewRecorder returns a Recorder that keeps about limit bytes of steps,
// and two checkpoints (see the top of record.go), in memory;
// zero means DefaultRecordLimit, and anything under MinRecordLimit (a
// negative limit included) is raised to it.
func NewRecorder(limit int) *Recorder {
	if limit == 0 {
		limit = DefaultRecordLimit
	}
	limit = max(limit, MinRecordLimit)
	half := limit / 2
	return &Recorder{half: half, cur: make([]byte, 0, half+64), old: make([]byte, 0, half+64)}
}

// Steps returns how many steps the Recorder has recorded since it was
// attached, the ones its ring has dropped included.
func (r *Recorder) Steps() uint64 { return r.steps }

// Record attaches r to p: from now on every call that changes p or moves
// its clock is recorded in r, starting with a checkpoint of p as it stands,
// its ward's guards included. A nil r stops recording. Record fails, with
// an error wrapping ErrUnrecordable and changing nothing, when r records
// another pool already, or when a guard of p's ward cannot be rebuilt from
// its state (one not built by its constructor, such as a zero
// ward.Breaker); the error names the guard.
func (p *Pool[T]) Record(r *Recorder) error {
	if r == p.rec {
		return nil
	}
	if r == nil {
		p.rec.attached = false
		p.rec = nil
		return nil
	}
	if r.attached {
		return fmt.Errorf("%w: the Recorder records another pool already", ErrUnrecordable)
	}
	if err := recordable(p.ward); err != nil {
		return err
	}
	if p.rec != nil {
		p.rec.attached = false
	}
	r.attached = true
	r.atOK = false
	if p.started {
		r.origin, r.hasOrigin = p.epoch, true
	}
	recordOrigin(r, &p.ward)
	r.cur = p.appendCheckpoint(r.cur[:0], r.steps, r.hasOrigin, r.origin, r.prev)
	r.mark = len(r.cur)
	r.old = r.old[:0]
	r.limCur = p.limits
	p.rec = r
	return nil
}

// Recording appends to dst the recording of p's Recorder as a file (see
// the format at the top of record.go), and returns dst unchanged when p has
// none. It copies up to the Recorder's limit; the Recorder goes on.
func (p *Pool[T]) Recording(dst []byte) []byte {
	r := p.rec
	if r == nil {
		return dst
	}
	start := len(dst)
	dst = append(dst, recordMagic...)
	dst = appendU(dst, recordVersion)
	dst = appendU(dst, uint64(2*r.half))
	l := r.limCur
	if len(r.old) > 0 {
		l = r.limOld
	}
	dst = appendU(dst, uint64(l.Size))
	dst = appendU(dst, uint64(l.Idle))
	dst = appendI(dst, int64(l.Keep))
	dst = appendI(dst, int64(l.Life))
	dst = appendU(dst, wardFlags(&p.ward))
	dst = append(dst, r.old...)
	dst = append(dst, r.cur...)
	dst = p.appendEnd(dst, r.steps)
	sum := fnv64(dst[start:])
	for i := 7; i >= 0; i-- {
		dst = append(dst, byte(sum>>(8*i)))
	}
	return dst
}

// appendEnd appends the end record: the step count and the books.
func (p *Pool[T]) appendEnd(b []byte, steps uint64) []byte {
	b = append(b, byte(opEnd))
	b = appendU(b, steps)
	b = appendBooks(b, p.books)
	b = appendU(b, uint64(p.Live()))
	b = appendU(b, uint64(p.Idle()))
	return appendU(b, uint64(p.Busy()))
}

func appendBooks(b []byte, k Books) []byte {
	for _, v := range [...]uint64{k.Made, k.Failed, k.Loans, k.Reused, k.Retired,
		k.IdleRetired, k.LifeRetired, k.Dropped, k.Waited, k.Deferred, k.Shed} {
		b = appendU(b, v)
	}
	return b
}

// appendCheckpoint appends p's whole state, in seat terms, with the
// recorder's position (the index of the next step, the origin, the previous
// instant) that the steps after it are read against.
func (p *Pool[T]) appendCheckpoint(b []byte, step uint64, hasOrigin bool, origin time.Time, prev int64) []byte {
	since := func(t time.Time) int64 {
		if !hasOrigin {
			return 0
		}
		return int64(t.Sub(origin))
	}
	b = append(b, byte(opCheckpoint))
	b = appendU(b, step)
	b = appendU(b, b2u(hasOrigin))
	b = appendI(b, prev)
	b = appendU(b, b2u(p.closed))
	b = appendU(b, b2u(p.started))
	b = appendU(b, uint64(p.gen))
	b = appendI(b, int64(p.hint))
	b = appendU(b, uint64(p.making))
	b = appendI(b, since(p.epoch))
	b = appendI(b, p.last)
	b = appendI(b, since(p.lastAt))
	b = appendU(b, uint64(p.failures))
	b = appendI(b, p.holdUntil)
	b = appendI(b, int64(p.lastDelay))
	b = appendI(b, int64(p.ceiling))
	b = appendBooks(b, p.books)
	b = appendU(b, uint64(len(p.z.s)))
	for i := range p.z.s {
		s := &p.z.s[i]
		b = appendU(b, uint64(s.st()))
		if s.st() == free {
			continue
		}
		b = appendI(b, s.born)
		b = appendI(b, s.since)
		b = appendU(b, uint64(s.gen()))
		b = appendI(b, int64(s.up))
		b = appendI(b, int64(s.down))
		b = appendI(b, int64(s.hi))
	}
	b = appendU(b, uint64(len(p.z.free)))
	for _, i := range p.z.free {
		b = appendU(b, uint64(i))
	}
	b = appendI(b, int64(p.z.top))
	b = appendI(b, int64(p.z.bottom))
	b = appendU(b, uint64(len(p.z.heap)))
	for _, i := range p.z.heap {
		b = appendU(b, uint64(i))
	}
	return appendWard(b, &p.ward, origin)
}
