package pool

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file holds the recorder's hooks, one per recorded method of Pool
// (recTake, recMade, …), each writing its step in the format described at
// the top of record.go, and the encoding they write with.

// The hooks. Each recorded method of Pool starts with one line, "if p.rec
// != nil { return p.recX(…) }" (Take and Give write their commonest step
// in line, and call their hook for the others: see recTook). recX takes the recorder off the pool for
// the length of the call (so that a method calling another, Made calling
// MadeJitter, is recorded once), rolls the ring if the current half is full
// (the checkpoint is the state before the step), makes the call, writes the
// step and puts the recorder back.

// recBegin detaches the recorder for one call and rolls the ring if due.
func (p *Pool[T]) recBegin() *Recorder {
	r := p.rec
	p.rec = nil
	if len(r.cur)-r.mark >= r.half {
		p.recRoll(r)
	}
	return r
}

// recRoll drops the older half and begins a new one with a checkpoint.
func (p *Pool[T]) recRoll(r *Recorder) {
	r.old, r.cur = r.cur, r.old[:0]
	r.limOld, r.limCur = r.limCur, p.limits
	r.cur = p.appendCheckpoint(r.cur, r.steps, r.hasOrigin, r.origin, r.prev)
	r.mark = len(r.cur)
}

// recEnd stores step b and attaches the recorder again.
func (p *Pool[T]) recEnd(r *Recorder, b []byte) {
	r.cur = b
	r.steps++
	p.rec = r
}

// recAt appends instant now, given to the call just made, as the
// difference from the previous step's (see recSince for r.at).
func (p *Pool[T]) recAt(r *Recorder, b []byte, now time.Time) []byte {
	d := r.prev
	if !r.atOK || now != r.at {
		d = p.recSince(r, now)
	}
	b = appendI(b, d-r.prev)
	r.prev = d
	return b
}

// recSince returns instant now, given to the call just made, in
// nanoseconds since the recording's origin. When the pool's clock took now
// as its latest reading (the common case), that is the pool's instant plus
// its epoch's offset from the origin: a load and an addition instead of a
// subtraction of times, and exactly the instant the pool used. Then now is
// also kept as r.at: until a step at another instant, the pool's clock
// stays where it is (a call at the same reading does not move it, and a
// step with no instant does not read it), so a hook given r.at again
// writes r.prev, the same instant, with no call (a runtime's cached clock
// gives the same reading to the many calls of a millisecond).
func (p *Pool[T]) recSince(r *Recorder, now time.Time) int64 {
	if now == p.lastAt && p.started && r.hasOrigin {
		if p.epoch != r.epoch {
			r.epoch, r.epochOff = p.epoch, int64(p.epoch.Sub(r.origin))
		}
		r.at, r.atOK = now, true
		return p.last + r.epochOff
	}
	r.atOK = false
	if !r.hasOrigin {
		r.origin, r.hasOrigin = now, true
	}
	return int64(now.Sub(r.origin))
}

// room makes room in r.cur for n more bytes, growing it if need be, and
// returns it at its capacity with its length: a hook writes its step into
// b[i:] and ends with r.cur = r.cur[:end], which stores the length alone.
func (r *Recorder) room(n int) (b []byte, i int) {
	i = len(r.cur)
	if cap(r.cur)-i < n {
		r.cur = slices.Grow(r.cur, n)
	}
	return r.cur[:cap(r.cur)], i
}

// ref names item as the format does: its seat plus one, or 0 when p does
// not hold it. hint is a seat to try before the index.
func (p *Pool[T]) ref(item T, hint int32) uint64 {
	if hint >= 0 && int(hint) < len(p.z.s) && p.z.s[hint].st() != free && p.z.s[hint].item == item {
		return uint64(hint) + 1
	}
	if i, ok := p.z.find(item); ok {
		return uint64(i) + 1
	}
	return 0
}

// appendRetired appends the seats of the last n resources retired: the
// last n seats freed, in order.
func (p *Pool[T]) appendRetired(b []byte, n int) []byte {
	b = appendU(b, uint64(n))
	for _, i := range p.z.free[len(p.z.free)-n:] {
		b = appendU(b, uint64(i)+1)
	}
	return b
}

// recTake and recGive are the hooks of the steps every loan makes, and
// they are written for speed (and the commonest of those steps, a reuse
// and its return, is written by Take and Give in line: see recTook): in a generic type's code a call to another of
// its methods is not inlined, so they open the recorder (recBegin) and take
// the instant (recAt's common case) in line, reserve room for their longest
// step once and write into it with no capacity test per field.

// maxTakeStep and maxGiveStep are the longest Take and Give steps: the op,
// one varint (up to binary.MaxVarintLen64 bytes) per number, a byte per
// kind, guard and report.
const (
	maxTakeStep = 1 + 5*binary.MaxVarintLen64 + 2
	maxGiveStep = 1 + 2*binary.MaxVarintLen64 + 1
)

func (p *Pool[T]) recTake(now time.Time, roll float64, cpu int) Taken[T] {
	r := p.rec
	p.rec = nil
	if len(r.cur)-r.mark >= r.half {
		p.recRoll(r)
	}
	top := p.z.top
	a := p.Take(now, roll, cpu)
	var seat int32
	n := int64(a.Delay)
	switch a.Kind {
	case Ready:
		seat, n = p.hint, int64(a.Idle)
	case Stale:
		seat = top
	}
	p.recTook(r, now, roll, cpu, a.Kind, a.Guard, seat, n)
	p.rec = r
	return a
}

// recTook writes the Take step of an answer of kind k (and guard g) given
// at now: for Ready, seat is the seat lent and n how long it sat idle; for
// Stale, seat is the one retired; for Later, n is the delay. recTake calls
// it after the call, and Take itself, in line, for the answers of its fast
// path (see Take).
func (p *Pool[T]) recTook(r *Recorder, now time.Time, roll float64, cpu int, k Kind, g ward.Guard, seat int32, n int64) {
	d := r.prev
	if !r.atOK || now != r.at {
		d = p.recSince(r, now)
	}
	b, i := r.room(maxTakeStep)
	b[i] = byte(OpTake)
	i++
	i = putI(b, i, d-r.prev)
	r.prev = d
	i = putU(b, i, bits.ReverseBytes64(math.Float64bits(roll)))
	i = putI(b, i, int64(cpu))
	b[i] = byte(k)
	b[i+1] = byte(g)
	i += 2
	switch k {
	case Ready:
		i = putU(b, i, uint64(seat)+1)
		i = putI(b, i, n)
	case Stale:
		i = putU(b, i, uint64(seat)+1)
	case Later:
		i = putI(b, i, n)
	}
	r.cur = r.cur[:i]
	r.steps++
}

func (p *Pool[T]) recMade(item T, now time.Time, extra time.Duration) bool {
	r := p.recBegin()
	ref := p.ref(item, none)
	ok := p.Made(item, now, extra)
	b := append(r.cur, byte(OpMade))
	b = appendU(b, ref)
	b = p.recAt(r, b, now)
	b = appendI(b, int64(extra))
	b = append(b, byte(b2u(ok)))
	p.recEnd(r, b)
	return ok
}

func (p *Pool[T]) recUnmade(now time.Time, roll float64) {
	r := p.recBegin()
	p.Unmade(now, roll)
	b := append(r.cur, byte(OpUnmade))
	b = p.recAt(r, b, now)
	b = appendF(b, roll)
	p.recEnd(r, b)
}

func (p *Pool[T]) recUnreserve(now time.Time, by ward.Guard) {
	r := p.recBegin()
	p.Unreserve(now, by)
	b := append(r.cur, byte(OpUnreserve))
	b = p.recAt(r, b, now)
	b = append(b, byte(by))
	p.recEnd(r, b)
}

func (p *Pool[T]) recGive(item T, now time.Time) bool {
	r := p.rec
	p.rec = nil
	if len(r.cur)-r.mark >= r.half {
		p.recRoll(r)
	}
	var ref uint64
	if h := p.hint; h >= 0 && int(h) < len(p.z.s) && p.z.s[h].st() != free && p.z.s[h].item == item {
		ref = uint64(h) + 1
	} else {
		ref = p.ref(item, none)
	}
	ok := p.Give(item, now)
	p.recGave(r, now, ref, ok)
	p.rec = r
	return ok
}

// recGave writes the Give step of the resource named ref (see ref), given
// back at now, whose Give answered ok. recGive calls it after the call, and
// Give itself, in line, on its fast path (see Give).
func (p *Pool[T]) recGave(r *Recorder, now time.Time, ref uint64, ok bool) {
	d := r.prev
	if !r.atOK || now != r.at {
		d = p.recSince(r, now)
	}
	b, i := r.room(maxGiveStep)
	b[i] = byte(OpGive)
	i++
	i = putU(b, i, ref)
	i = putI(b, i, d-r.prev)
	r.prev = d
	b[i] = byte(b2u(ok))
	r.cur = r.cur[:i+1]
	r.steps++
}

func (p *Pool[T]) recDrop(item T, now time.Time) bool {
	r := p.recBegin()
	ref := p.ref(item, none)
	ok := p.Drop(item, now)
	b := append(r.cur, byte(OpDrop))
	b = appendU(b, ref)
	b = p.recAt(r, b, now)
	b = append(b, byte(b2u(ok)))
	p.recEnd(r, b)
	return ok
}

func (p *Pool[T]) recEvict(now time.Time) []T { return p.recRetiring(OpEvict, now, p.Evict) }

// recRetiring records a call of op at now that answers with the resources
// it retired (Evict, Trim, Reset), made by call.
func (p *Pool[T]) recRetiring(op Op, now time.Time, call func(time.Time) []T) []T {
	r := p.recBegin()
	out := call(now)
	b := append(r.cur, byte(op))
	b = p.recAt(r, b, now)
	b = p.appendRetired(b, len(out))
	p.recEnd(r, b)
	return out
}

func (p *Pool[T]) recCeiling(n int) {
	r := p.recBegin()
	p.setCeiling(n)
	b := append(r.cur, byte(OpCeiling))
	b = appendI(b, int64(n))
	p.recEnd(r, b)
}

func (p *Pool[T]) recTrim(now time.Time) []T { return p.recRetiring(OpTrim, now, p.trim) }

func (p *Pool[T]) recCeilingAt(n int, now time.Time) []T {
	r := p.recBegin()
	out := p.SetCeiling(n, now)
	b := append(r.cur, byte(OpCeilingAt))
	b = appendI(b, int64(n))
	b = p.recAt(r, b, now)
	b = p.appendRetired(b, len(out))
	p.recEnd(r, b)
	return out
}

func (p *Pool[T]) recLimits(l Limits, now time.Time) ([]T, error) {
	r := p.recBegin()
	out, err := p.SetLimits(l, now)
	if err != nil {
		p.rec = r // nothing changed: nothing to record
		return out, err
	}
	b := append(r.cur, byte(OpLimits))
	b = appendU(b, uint64(l.Size))
	b = appendU(b, uint64(l.Idle))
	b = appendI(b, int64(l.Keep))
	b = appendI(b, int64(l.Life))
	b = p.recAt(r, b, now)
	b = p.appendRetired(b, len(out))
	p.recEnd(r, b)
	return out, nil
}

func (p *Pool[T]) recClose() []T {
	r := p.recBegin()
	out := p.Close()
	b := append(r.cur, byte(OpClose))
	b = p.appendRetired(b, len(out))
	p.recEnd(r, b)
	return out
}

func (p *Pool[T]) recReset(now time.Time) []T { return p.recRetiring(OpReset, now, p.Reset) }

func (p *Pool[T]) recReserve(now time.Time, roll float64, cpu int) bool {
	r := p.recBegin()
	ok := p.Reserve(now, roll, cpu)
	b := append(r.cur, byte(OpReserve))
	b = p.recAt(r, b, now)
	b = appendF(b, roll)
	b = appendI(b, int64(cpu))
	b = append(b, byte(b2u(ok)))
	p.recEnd(r, b)
	return ok
}

func (p *Pool[T]) recRefusal(now time.Time) float64 {
	r := p.recBegin()
	f := p.Refusal(now)
	b := append(r.cur, byte(OpRefusal))
	b = p.recAt(r, b, now)
	b = appendF(b, f)
	p.recEnd(r, b)
	return f
}

func (p *Pool[T]) recLoans(dst []Lent[T], now time.Time) []Lent[T] {
	r := p.recBegin()
	start := len(dst)
	dst = p.appendLoans(dst, now)
	b := append(r.cur, byte(OpLoans))
	b = p.recAt(r, b, now)
	b = appendU(b, uint64(len(dst)-start))
	for _, l := range dst[start:] {
		b = appendU(b, p.ref(l.Item, none))
		b = appendI(b, int64(l.Held))
	}
	p.recEnd(r, b)
	return dst
}

// The encoding.

// appendU and appendI are encoding/binary's varints: unsigned LEB128, and
// zigzag for signed values.
func appendU(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

func appendI(b []byte, x int64) []byte { return binary.AppendVarint(b, x) }

func appendF(b []byte, f float64) []byte {
	return appendU(b, bits.ReverseBytes64(math.Float64bits(f)))
}

// putU and putI write x at b[i:], which has room for it, as appendU and
// appendI would append it, and return the index past it. They are
// encoding/binary's PutUvarint and PutVarint with the index passed in:
// without the b[i:] of each call they cost the hot hooks half as many
// instructions.
func putU(b []byte, i int, x uint64) int {
	for x >= 0x80 {
		b[i] = byte(x) | 0x80
		x >>= 7
		i++
	}
	b[i] = byte(x)
	return i + 1
}

func putI(b []byte, i int, x int64) int {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return putU(b, i, ux)
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// fnv64 is FNV-1a, 64 bits, of b.
func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
