package pool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file is the recorder: every call that changes a Pool, or moves its
// clock, written down with its arguments and its answer, so that a replay
// (replay.go) can feed the same calls to a fresh Pool and check that every
// answer comes out the same, byte for byte. It is what a user attaches to a
// bug report.
//
// # What is recorded
//
// One step per call of Take, Made/MadeJitter, Unmade, Give, GiveSeat, Drop,
// Evict, Close, Reset, Relent, Reserve, Refusal and Loans/AppendLoans: the
// operation, now, the draw (roll), the CPU reading, the other arguments and
// the answer. Reads that change nothing (Books, Next, Live, SeatOf, Born,
// HeldUntil, …) are not recorded. A runtime's own lock-free lending (the
// Keeper's lane) reaches the pool later, through Relent: a recording holds
// those loans as the Relent calls that reported them, at the moment the
// runtime reported them, not as Give/Take pairs.
//
// Resources are not recorded (a T may be anything); a resource is named by
// its seat (see Seats) plus one, or 0 for one the pool does not hold. The
// pool's answers depend only on which seat a resource holds, or that it
// holds none, so a replay with stand-in resources gives the same answers.
//
// # Bounded size: a ring of two halves
//
// A Recorder keeps about its limit of steps in memory, as two halves. When
// the current half holds half the limit, the older half is dropped and a
// new one begins with a checkpoint: the pool's whole state in seat terms
// (about 10 bytes a seat in use, and the books), which comes on top of the
// limit. A recording written out (Pool.Recording) is the older half and the
// current one, so it always starts at a checkpoint and holds between half
// the limit and the whole of it in steps: the latest ones, which are the
// ones a bug report needs, replayable on their own. Rolling costs one
// checkpoint per half the limit of steps, allocation-free once both halves
// have grown. A rolling file was the other choice; it would have to hold
// the same checkpoints to be replayed from any file but the first, and it
// would do I/O under the caller's lock, which the runtime never does.
//
// # Cost
//
// Off (no Recorder), each recorded method pays one nil test. On, a step
// costs about 20 ns of CPU (the call goes through a wrapper that encodes
// it). The Keeper's lane lends without the pool, so an uncontended
// Acquire+Release through it records nothing until the lane is folded (one
// Relent for many loans): recording costs it next to nothing. Through the
// lock (with LeakAfter, or while callers queue) each Acquire+Release is two
// steps. Figures: BenchmarkRecordUncontended.
//
// # Format, version 1
//
// Integers are varints (unsigned LEB128; signed ones zigzag-encoded first);
// a float64 is the varint of its IEEE bits with the bytes reversed, so that
// round numbers such as 0 and 0.5 take a byte or three. A duration is signed
// nanoseconds. Instants ("at") are nanoseconds since the recording's
// origin, the first instant it saw (or the pool's epoch when it was attached
// to a pool already running), written as the difference from the previous
// step's.
//
//	file       = header chunk... end checksum
//	header     = "wprc" version:u limit:u size:u idle:u keep:i life:i ward
//	ward       = flags:u [backoff]            flags bit 0: a Backoff
//	backoff    = base:i factor:f cap:i attempts:i jitter:u spread:f
//	             jitter: 0 rigid, 1 full, 2 equal, 3 decorrelated, 4 spread
//	chunk      = checkpoint step...
//	checkpoint = 0x40 index:u origin:u prev:i closed:u started:u gen:u
//	             hint:i making:u epoch:i last:i lastAt:i failures:u hold:i
//	             delay:i ceiling:i books seats free:list top:i bottom:i
//	             heap:list
//	books      = 11 × u: Made Failed Loans Reused Retired IdleRetired
//	             LifeRetired Dropped Waited Deferred Shed
//	seats      = n:u, n × (state:u [born:i since:i gen:u up:i down:i hi:i])
//	             (the bracket for a seat that is not free)
//	step       = op:u fields (the table below), answer after the arguments
//	list       = n:u, n × seat:u
//	end        = 0x41 steps:u books live:u idle:u busy:u
//	checksum   = 8 bytes, FNV-1a 64 of everything before, big-endian
//
// The steps, with their fields in order (ref = seat+1 or 0):
//
//	1  Take      at roll:f cpu:i → kind:u guard:u, then for Ready seat:ref
//	             idle:i, for Stale seat:ref, for Later delay:i
//	2  Made      item:ref at extra:i → kept:u  (Made is MadeJitter, extra 0)
//	3  Unmade    at roll:f
//	4  Give      item:ref at → kept:u
//	5  GiveSeat  seat:i item:ref at → kept:u
//	6  Drop      item:ref at → held:u
//	7  Evict     at → n:u n × ref
//	8  Close     → n:u n × ref
//	9  Reset     at → n:u n × ref
//	10 Relent    seat:i item:ref n:i at → ok:u
//	11 Reserve   at roll:f cpu:i → ok:u
//	12 Refusal   at → ratio:f
//	13 Loans     at → n:u n × (ref held:i)
//	14 Ceiling   n:i
//	15 Trim      at → n:u n × ref
//	16 CeilingAt n:i at → n:u n × ref
//	17 Limits    size:u idle:u keep:i life:i at → n:u n × ref
//
// Ceiling and Trim are what recordings made before SetCeiling retired at
// once hold; a replay still reads them. The header's limits are the pool's
// at the recording's first checkpoint; a Limits step changes them.
//
// The seats a list of retired resources names (Evict, Close, Reset, a Stale
// answer) are the ones they held before they left.

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

	opCheckpoint Op = 0x40
	opEnd        Op = 0x41
)

var opNames = [...]string{"Op(0)", "Take", "Made", "Unmade", "Give", "GiveSeat", "Drop",
	"Evict", "Close", "Reset", "Relent", "Reserve", "Refusal", "Loans", "Ceiling", "Trim", "CeilingAt", "Limits"}

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
const recordVersion = 1

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
// its clock is recorded in r, starting with a checkpoint of p as it stands.
// A nil r stops recording. Record fails, with an error wrapping
// ErrUnrecordable and changing nothing, when r records another pool
// already, or when p's ward holds a guard whose state a replay could not
// rebuild: a Breaker, Shedder, Bucket or Limiter keeps its state (windows
// opened at instants of its own, tokens, a fractional limit) where the pool
// cannot read it. A Backoff is a policy whose state the pool keeps, so it
// is recorded.
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
	if p.started {
		r.origin, r.hasOrigin = p.epoch, true
	}
	r.cur = p.appendCheckpoint(r.cur[:0], r.steps, r.hasOrigin, r.origin, r.prev)
	r.mark = len(r.cur)
	r.old = r.old[:0]
	r.limCur = p.limits
	p.rec = r
	return nil
}

// recordable says why w cannot be recorded, or nil.
func recordable(w ward.Ward) error {
	refuse := func(guard, why string) error {
		return fmt.Errorf("%w: the ward's %s keeps %s where the pool cannot read it, so a replay could not rebuild it", ErrUnrecordable, guard, why)
	}
	switch {
	case w.Breaker != nil:
		return refuse("Breaker", "its window (opened at an instant of its own)")
	case w.Shedder != nil:
		return refuse("Shedder", "its window and moving average")
	case w.Bucket != nil:
		return refuse("Bucket", "its tokens and the instant they were counted at")
	case w.Limiter != nil:
		return refuse("Limiter", "its fractional limit")
	case w.Backoff != nil:
		if _, _, ok := jitterCode(w.Backoff.Jitter); !ok {
			return fmt.Errorf("%w: the ward's Backoff has a jitter this format cannot name (%v)", ErrUnrecordable, w.Backoff.Jitter)
		}
	}
	return nil
}

// jitterCode names j as the format does: a code and, for a spread, its
// fraction.
func jitterCode(j ward.Jitter) (code uint64, spread float64, ok bool) {
	switch j {
	case ward.Rigid:
		return 0, 0, true
	case ward.Full:
		return 1, 0, true
	case ward.Equal:
		return 2, 0, true
	case ward.Decorrelated:
		return 3, 0, true
	}
	s := j.String()
	if inner, found := strings.CutPrefix(s, "spread("); found {
		f, err := strconv.ParseFloat(strings.TrimSuffix(inner, ")"), 64)
		if err == nil && ward.Spread(f) == j {
			return 4, f, true
		}
	}
	return 0, 0, false
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
	if b := p.ward.Backoff; b != nil {
		dst = appendU(dst, 1)
		code, spread, _ := jitterCode(b.Jitter)
		dst = appendI(dst, int64(b.Base))
		dst = appendF(dst, b.Factor)
		dst = appendI(dst, int64(b.Cap))
		dst = appendI(dst, int64(b.Attempts))
		dst = appendU(dst, code)
		dst = appendF(dst, spread)
	} else {
		dst = appendU(dst, 0)
	}
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
	return b
}
