// Package record writes down every call made into a pool.Pool, with its
// arguments and its answer, and replays such a recording into a fresh Pool
// to check that every answer comes out the same, byte for byte. It wraps
// the Pool from outside: the state machine knows nothing of it, and a pool
// that is not recorded pays nothing for it.
//
// Wrap a pool with a Recorder and make every call through the wrapper;
// Recording writes the file out; ReadRecording and Replay read it back. The
// format, and why it is what it is, are in DESIGN.md at the module's root
// ("The recording").
package record

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/internal/wire"
	"github.com/wardpool/wardpool/ward"
)

// op is the operation of a recorded step, as numbered in the format.
type op uint8

const (
	opTake op = iota + 1
	opMade
	opUnmade
	opReserve
	opGive
	opDrop
	opEvict
	opClose
	opReset
	opCeiling
	opLimits
	opRefusal
	opLoans
	opAdmit
	opResetFor
	opTakeAs
	opMadeAs
	opUnmadeAs
	opServe

	opCheckpoint op = 0x40
	opEnd        op = 0x41
)

var opNames = [...]string{"Op(0)", "Take", "Made", "Unmade", "Reserve", "Give",
	"Drop", "Evict", "Close", "Reset", "Ceiling", "Limits", "Refusal", "Loans", "Admit", "ResetFor",
	"TakeAs", "MadeAs", "UnmadeAs", "Serve"}

func (o op) String() string {
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

// version is the format's version; a reader refuses any other.
const version = 5

const magic = "wprc"

// MediaType is the media type of a recording, for a server that hands one
// over: the Content-Type of Keeper.RecordingHandler's answers.
const MediaType = "application/vnd.wardpool.recording"

// Ext is the file name extension of a recording.
const Ext = ".wprc"

// Recorder sizes.
const (
	// DefaultLimit is the memory a Recorder made with a limit of zero
	// keeps: 1 MiB, some tens of thousands of steps.
	DefaultLimit = 1 << 20
	// MinLimit is the least a Recorder keeps; a smaller limit is raised
	// to it.
	MinLimit = 4 << 10
)

// ErrUnrecordable is wrapped by the error Wrap returns for a pool it
// cannot record.
var ErrUnrecordable = errors.New("wardpool: pool cannot be recorded")

// Recorder keeps the steps of one wrapped pool, about its limit in bytes:
// the latest steps, from a checkpoint of the pool's whole state on. It
// keeps them as two halves; when the current one is full the older is
// dropped and a new one begins with a checkpoint, so what it holds always
// replays on its own.
//
// A Recorder is not safe for concurrent use: it belongs to its pool, under
// the same lock.
type Recorder struct {
	half     int    // a half is full at this many bytes of steps
	old, cur []byte // the two halves; each begins with a checkpoint
	mark     int    // the length of cur's checkpoint
	steps    uint64 // steps recorded so far: the index of the next
	attached bool

	origin time.Time // instants are written as nanoseconds since origin
	prev   int64     // the instant of the last step written, since origin
}

// New returns a Recorder that keeps about limit bytes of steps, and two
// checkpoints, in memory; zero means DefaultLimit, and anything under
// MinLimit (a negative limit included) is raised to it.
func New(limit int) *Recorder {
	if limit == 0 {
		limit = DefaultLimit
	}
	limit = max(limit, MinLimit)
	half := limit / 2
	return &Recorder{half: half, cur: make([]byte, 0, half+64), old: make([]byte, 0, half+64)}
}

// Steps returns how many steps the Recorder has recorded since it was
// attached, the ones its ring has dropped included.
func (r *Recorder) Steps() uint64 { return r.steps }

// Pool is a pool.Pool whose every call that changes it, or moves its
// clock, is recorded: the same methods, answering the same. Reads that
// change nothing (Books, Next, HeldUntil, SeatOf) are not recorded.
type Pool[T comparable] struct {
	p *pool.Pool[T]
	r *Recorder
	// seats is the seat of each resource the wrapper has seen made or
	// lent, so that the resources a call retires (Evict, Close, Reset, a
	// ceiling, new limits) are written by seat: they have left the pool by
	// the time the wrapper sees them. A resource idle since before Wrap is
	// not in it until it is lent, and is written as 0 should it be retired
	// first; a replay, which starts as blind, writes the same.
	seats map[T]int32
}

// Wrap attaches r to p, starting with a checkpoint of p as it stands, its
// ward's guards included, instants counted from now (or from the earliest
// instant a guard holds, if that is earlier). Every call made through the
// returned Pool is recorded; a call made on p directly is not, and the
// recording will not replay. Wrap fails, with an error wrapping
// ErrUnrecordable, when r records another pool already, or when a guard of
// p's ward cannot be rebuilt from its state (see pool.Pool.AppendState).
func Wrap[T comparable](p *pool.Pool[T], r *Recorder, now time.Time) (*Pool[T], error) {
	if r == nil || p == nil {
		return nil, fmt.Errorf("%w: a nil pool or Recorder", ErrUnrecordable)
	}
	if r.attached {
		return nil, fmt.Errorf("%w: the Recorder records another pool already", ErrUnrecordable)
	}
	origin := now
	if at, ok := anchor(p, now); ok && at.Before(origin) {
		origin = at
	}
	r.origin, r.prev = origin, int64(now.Sub(origin))
	cur, err := appendCheckpoint(r.cur[:0], p, r, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnrecordable, err)
	}
	r.attached = true
	r.cur, r.mark, r.old = cur, len(cur), r.old[:0]
	return &Pool[T]{p: p, r: r, seats: map[T]int32{}}, nil
}

// anchor is the earliest instant p's guards hold, read from its state
// (written and read back around now).
func anchor[T comparable](p *pool.Pool[T], now time.Time) (time.Time, bool) {
	st, err := p.AppendState(nil, now)
	if err != nil {
		return time.Time{}, false
	}
	_, w, _, err := pool.ReadState(st, now)
	if err != nil {
		return time.Time{}, false
	}
	return w.Anchor()
}

// Unwrap returns the pool the recorder wraps.
func (w *Pool[T]) Unwrap() *pool.Pool[T] { return w.p }

// Recorder returns the wrapper's Recorder.
func (w *Pool[T]) Recorder() *Recorder { return w.r }

// appendCheckpoint appends a checkpoint: the index of the next step, the
// instant of the step before, the seats whose resources the wrapper knows
// (seats: a replay starting here knows the same ones), and p's state.
func appendCheckpoint[T comparable](b []byte, p *pool.Pool[T], r *Recorder, seats map[T]int32) ([]byte, error) {
	st, err := p.AppendState(nil, r.origin)
	if err != nil {
		return b, err
	}
	b = append(b, byte(opCheckpoint))
	b = wire.AppendU(b, r.steps)
	b = wire.AppendI(b, r.prev)
	known := make([]int32, 0, len(seats))
	for _, s := range seats {
		known = append(known, s)
	}
	slices.Sort(known)
	b = wire.AppendU(b, uint64(len(known)))
	for _, s := range known {
		b = wire.AppendU(b, uint64(s))
	}
	b = wire.AppendU(b, uint64(len(st)))
	return append(b, st...), nil
}

// roll begins a new half, with a checkpoint, when the current one is full.
// Every recorded method calls it before its call into the pool: the
// checkpoint is the state before the step.
func (w *Pool[T]) roll() {
	r := w.r
	if len(r.cur)-r.mark >= r.half {
		r.old, r.cur = r.cur, r.old[:0]
		r.cur, _ = appendCheckpoint(r.cur, w.p, r, w.seats) // its ward read back at Wrap
		r.mark = len(r.cur)
	}
}

// begin starts the step of o at now, after the call: the op and the
// instant, as the difference from the step before's.
func (w *Pool[T]) begin(o op, now time.Time) []byte {
	r := w.r
	b := append(r.cur, byte(o))
	d := int64(now.Sub(r.origin))
	b = wire.AppendI(b, d-r.prev)
	r.prev = d
	return b
}

// end stores step b.
func (w *Pool[T]) end(b []byte) {
	w.r.cur = b
	w.r.steps++
}

// ref names item as the format does: its seat plus one, or 0 when the
// pool does not hold it.
func (w *Pool[T]) ref(item T) uint64 { return uint64(w.p.SeatOf(item) + 1) }

// seen notes where item sits after a call that answered kept: its seat
// when the pool holds it, nothing when it left.
func (w *Pool[T]) seen(item T, kept bool) {
	if s := w.p.SeatOf(item); kept && s >= 0 {
		w.seats[item] = s
	} else {
		delete(w.seats, item)
	}
}

// appendRetired appends the resources a call retired, by the seats they
// held (see Pool.seats), and forgets them.
func (w *Pool[T]) appendRetired(b []byte, out []T) []byte {
	b = wire.AppendU(b, uint64(len(out)))
	for _, v := range out {
		s, ok := w.seats[v]
		if !ok {
			s = -1
		}
		delete(w.seats, v)
		b = wire.AppendU(b, uint64(s+1))
	}
	return b
}

// Take is pool.Pool.Take, recorded.
func (w *Pool[T]) Take(now time.Time, roll float64, cpu int) pool.Taken[T] {
	w.roll()
	a := w.p.Take(now, roll, cpu)
	switch a.Kind {
	case pool.Ready:
		w.seats[a.Item] = a.Seat
	case pool.Stale:
		delete(w.seats, a.Item)
	}
	b := w.begin(opTake, now)
	b = wire.AppendF(b, roll)
	b = wire.AppendI(b, int64(cpu))
	w.end(appendTaken(b, a))
	return a
}

// TakeAs is pool.Pool.TakeAs, recorded with the class. On a pool without
// classes it is Take, and recorded as Take.
func (w *Pool[T]) TakeAs(now time.Time, roll float64, cpu int, class int) pool.Taken[T] {
	if w.p.Classes() == nil {
		return w.Take(now, roll, cpu)
	}
	w.roll()
	a := w.p.TakeAs(now, roll, cpu, class)
	switch a.Kind {
	case pool.Ready:
		w.seats[a.Item] = a.Seat
	case pool.Stale:
		delete(w.seats, a.Item)
	}
	b := w.begin(opTakeAs, now)
	b = wire.AppendF(b, roll)
	b = wire.AppendI(b, int64(cpu))
	b = wire.AppendI(b, int64(class))
	w.end(appendTaken(b, a))
	return a
}

// MadeAs is pool.Pool.MadeAs, recorded with the class; on a pool without
// classes it is Made, and recorded as Made.
func (w *Pool[T]) MadeAs(item T, gen uint32, class int, now time.Time, extra time.Duration) bool {
	if w.p.Classes() == nil {
		return w.Made(item, gen, now, extra)
	}
	w.roll()
	ref := w.ref(item)
	ok := w.p.MadeAs(item, gen, class, now, extra)
	w.seen(item, ok)
	b := w.begin(opMadeAs, now)
	b = wire.AppendU(b, ref)
	b = wire.AppendU(b, uint64(gen))
	b = wire.AppendI(b, int64(class))
	b = wire.AppendI(b, int64(extra))
	w.end(wire.AppendB(b, ok))
	return ok
}

// UnmadeAs is pool.Pool.UnmadeAs, recorded with the class; on a pool
// without classes it is Unmade, and recorded as Unmade.
func (w *Pool[T]) UnmadeAs(now time.Time, roll float64, by ward.Guard, class int) bool {
	if w.p.Classes() == nil {
		return w.Unmade(now, roll, by)
	}
	w.roll()
	wait := w.p.UnmadeAs(now, roll, by, class)
	b := wire.AppendF(w.begin(opUnmadeAs, now), roll)
	b = wire.AppendI(append(b, byte(by)), int64(class))
	w.end(wire.AppendB(b, wait))
	return wait
}

// Serve is pool.Pool.Serve, recorded with the fronts (each its class and
// when it began to wait). On a pool without classes it changes nothing and
// is not recorded.
func (w *Pool[T]) Serve(now time.Time, fronts []pool.Front) (int, time.Duration) {
	if w.p.Classes() == nil {
		return w.p.Serve(now, fronts)
	}
	w.roll()
	i, delay := w.p.Serve(now, fronts)
	b := wire.AppendU(w.begin(opServe, now), uint64(len(fronts)))
	for _, f := range fronts {
		b = wire.AppendI(b, int64(f.Class))
		b = wire.AppendI(b, int64(f.Since.Sub(w.r.origin)))
	}
	b = wire.AppendI(b, int64(i))
	w.end(wire.AppendI(b, int64(delay)))
	return i, delay
}

// ClassBooks is pool.Pool.ClassBooks: nil on a pool without classes.
func (w *Pool[T]) ClassBooks() []pool.ClassBooks { return w.p.ClassBooks() }

// appendTaken appends a Take or Reserve answer.
func appendTaken[T comparable](b []byte, a pool.Taken[T]) []byte {
	b = append(b, byte(a.Kind), byte(a.Guard))
	switch a.Kind {
	case pool.Ready:
		b = wire.AppendU(b, uint64(a.Seat)+1)
		b = wire.AppendI(b, int64(a.Idle))
	case pool.Stale:
		b = wire.AppendU(b, uint64(a.Seat)+1)
	case pool.Later, pool.Wait:
		b = wire.AppendI(b, int64(a.Delay))
	case pool.Make:
		b = wire.AppendU(b, uint64(a.Gen))
	}
	return b
}

// Made is pool.Pool.Made, recorded.
func (w *Pool[T]) Made(item T, gen uint32, now time.Time, extra time.Duration) bool {
	w.roll()
	ref := w.ref(item)
	ok := w.p.Made(item, gen, now, extra)
	w.seen(item, ok)
	b := w.begin(opMade, now)
	b = wire.AppendU(b, ref)
	b = wire.AppendU(b, uint64(gen))
	b = wire.AppendI(b, int64(extra))
	w.end(wire.AppendB(b, ok))
	return ok
}

// Unmade is pool.Pool.Unmade, recorded.
func (w *Pool[T]) Unmade(now time.Time, roll float64, by ward.Guard) bool {
	w.roll()
	wait := w.p.Unmade(now, roll, by)
	w.end(wire.AppendB(append(wire.AppendF(w.begin(opUnmade, now), roll), byte(by)), wait))
	return wait
}

// Reserve is pool.Pool.Reserve, recorded.
func (w *Pool[T]) Reserve(now time.Time, roll float64, cpu int) pool.Taken[T] {
	w.roll()
	a := w.p.Reserve(now, roll, cpu)
	b := w.begin(opReserve, now)
	b = wire.AppendF(b, roll)
	b = wire.AppendI(b, int64(cpu))
	w.end(appendTaken(b, a))
	return a
}

// Give is pool.Pool.Give, recorded.
func (w *Pool[T]) Give(item T, now time.Time) bool {
	w.roll()
	ref := w.ref(item)
	ok := w.p.Give(item, now)
	w.seen(item, ok)
	w.end(wire.AppendB(wire.AppendU(w.begin(opGive, now), ref), ok))
	return ok
}

// Drop is pool.Pool.Drop, recorded.
func (w *Pool[T]) Drop(item T, now time.Time) bool {
	w.roll()
	ref := w.ref(item)
	ok := w.p.Drop(item, now)
	delete(w.seats, item)
	w.end(wire.AppendB(wire.AppendU(w.begin(opDrop, now), ref), ok))
	return ok
}

// Evict is pool.Pool.Evict, recorded.
func (w *Pool[T]) Evict(now time.Time) []T {
	w.roll()
	out := w.p.Evict(now)
	w.end(w.appendRetired(w.begin(opEvict, now), out))
	return out
}

// Close is pool.Pool.Close, recorded (at the instant of the step before:
// Close takes none).
func (w *Pool[T]) Close() []T {
	w.roll()
	out := w.p.Close()
	w.end(w.appendRetired(w.begin(opClose, w.r.origin.Add(time.Duration(w.r.prev))), out))
	return out
}

// Reset is pool.Pool.Reset, recorded.
func (w *Pool[T]) Reset(now time.Time, over time.Duration) []T {
	w.roll()
	out := w.p.Reset(now, over)
	w.end(w.appendRetired(wire.AppendI(w.begin(opReset, now), int64(over)), out))
	return out
}

// ResetFor is pool.Pool.ResetFor, recorded when it resets; one that resets
// nothing changes nothing and is not recorded.
func (w *Pool[T]) ResetFor(item T, now time.Time, h pool.Hold) ([]T, bool) {
	w.roll()
	ref := w.ref(item)
	out, ok := w.p.ResetFor(item, now, h)
	if ok {
		b := wire.AppendU(w.begin(opResetFor, now), ref)
		b = wire.AppendI(b, int64(h.For))
		b = wire.AppendI(b, int64(h.Every))
		w.end(w.appendRetired(b, out))
	}
	return out, ok
}

// SetCeiling is pool.Pool.SetCeiling, recorded.
func (w *Pool[T]) SetCeiling(n int, now time.Time) []T {
	w.roll()
	out := w.p.SetCeiling(n, now)
	b := w.begin(opCeiling, now)
	b = wire.AppendI(b, int64(n))
	w.end(w.appendRetired(b, out))
	return out
}

// SetLimits is pool.Pool.SetLimits, recorded; one that fails changes
// nothing and is not recorded.
func (w *Pool[T]) SetLimits(l pool.Limits, now time.Time) ([]T, error) {
	w.roll()
	out, err := w.p.SetLimits(l, now)
	if err != nil {
		return out, err
	}
	b := w.begin(opLimits, now)
	b = appendLimits(b, l)
	w.end(w.appendRetired(b, out))
	return out, nil
}

func appendLimits(b []byte, l pool.Limits) []byte {
	b = wire.AppendU(b, uint64(l.Size))
	b = wire.AppendU(b, uint64(l.Idle))
	b = wire.AppendI(b, int64(l.Keep))
	return wire.AppendI(b, int64(l.Life))
}

// Refusal is pool.Pool.Refusal, recorded.
func (w *Pool[T]) Refusal(now time.Time) float64 {
	w.roll()
	f := w.p.Refusal(now)
	w.end(wire.AppendF(w.begin(opRefusal, now), f))
	return f
}

// Loans is pool.Pool.Loans, recorded.
func (w *Pool[T]) Loans(now time.Time) []pool.Lent[T] {
	w.roll()
	out := w.p.Loans(now)
	b := wire.AppendU(w.begin(opLoans, now), uint64(len(out)))
	for _, l := range out {
		b = wire.AppendU(b, w.ref(l.Item))
		b = wire.AppendI(b, int64(l.Held))
	}
	w.end(b)
	return out
}

// Admit is pool.Pool.Admit, recorded.
func (w *Pool[T]) Admit(now time.Time, ahead int, within time.Duration) (time.Duration, bool) {
	w.roll()
	wait, ok := w.p.Admit(now, ahead, within)
	b := w.begin(opAdmit, now)
	b = wire.AppendI(b, int64(ahead))
	b = wire.AppendI(b, int64(within))
	b = wire.AppendI(b, int64(wait))
	w.end(wire.AppendB(b, ok))
	return wait, ok
}

// Books is pool.Pool.Books; it is not recorded.
func (w *Pool[T]) Books() pool.Books { return w.p.Books() }

// Next is pool.Pool.Next; it is not recorded.
func (w *Pool[T]) Next() (time.Time, bool) { return w.p.Next() }

// HeldUntil is pool.Pool.HeldUntil; it is not recorded.
func (w *Pool[T]) HeldUntil() (time.Time, bool) { return w.p.HeldUntil() }

// SeatOf is pool.Pool.SeatOf; it is not recorded.
func (w *Pool[T]) SeatOf(item T) int32 { return w.p.SeatOf(item) }

// Recording appends to dst the recording as a file: the older half and
// the current one, each from its checkpoint, and an end record with the
// books. It copies up to the Recorder's limit; the Recorder goes on.
func (w *Pool[T]) Recording(dst []byte) []byte {
	r := w.r
	start := len(dst)
	dst = append(dst, magic...)
	dst = wire.AppendU(dst, version)
	dst = wire.AppendU(dst, uint64(2*r.half))
	dst = append(dst, r.old...)
	dst = append(dst, r.cur...)
	dst = append(dst, byte(opEnd))
	dst = wire.AppendU(dst, r.steps)
	dst = appendBooks(dst, w.p.Books())
	sum := wire.FNV64(dst[start:])
	for i := 7; i >= 0; i-- {
		dst = append(dst, byte(sum>>(8*i)))
	}
	return dst
}

// appendBooks appends the books' counters and gauges, in the order the
// end record holds them (bookNames).
func appendBooks(b []byte, k pool.Books) []byte {
	for _, v := range [...]uint64{k.Made, k.Failed, k.Loans, k.Reused, k.Retired,
		k.IdleRetired, k.LifeRetired, k.Dropped, k.Waited, k.Deferred, k.Shed,
		uint64(k.Live), uint64(k.Idle), uint64(k.Busy)} {
		b = wire.AppendU(b, v)
	}
	return b
}

var bookNames = [...]string{"Made", "Failed", "Loans", "Reused", "Retired", "IdleRetired",
	"LifeRetired", "Dropped", "Waited", "Deferred", "Shed", "Live", "Idle", "Busy"}
