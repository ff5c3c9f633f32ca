package pool

import (
	"encoding/binary"
	"math"
	"math/bits"
	"time"
)

// This file holds the recorder's hooks, one per recorded method of Pool
// (recTake, recMade, …), each writing its step in the format described at
// the top of record.go, and the encoding they write with.

// The hooks. Each recorded method of Pool starts with one line, "if p.rec
// != nil { return p.recX(…) }". recX takes the recorder off the pool for
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
// difference from the previous step's. When the pool's clock took now as
// its latest reading (the common case), now is the pool's instant plus its
// epoch's offset from the origin: two loads instead of a subtraction of
// times, and exactly the instant the pool used.
func (p *Pool[T]) recAt(r *Recorder, b []byte, now time.Time) []byte {
	var d int64
	if now == p.lastAt && p.started && r.hasOrigin {
		if p.epoch != r.epoch {
			r.epoch, r.epochOff = p.epoch, int64(p.epoch.Sub(r.origin))
		}
		d = p.last + r.epochOff
	} else {
		if !r.hasOrigin {
			r.origin, r.hasOrigin = now, true
		}
		d = int64(now.Sub(r.origin))
	}
	b = appendI(b, d-r.prev)
	r.prev = d
	return b
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

func (p *Pool[T]) recTake(now time.Time, roll float64, cpu int) Taken[T] {
	r := p.recBegin()
	top := p.z.top
	a := p.Take(now, roll, cpu)
	b := append(r.cur, byte(OpTake))
	b = p.recAt(r, b, now)
	b = appendF(b, roll)
	b = appendI(b, int64(cpu))
	b = append(b, byte(a.Kind), byte(a.Guard))
	switch a.Kind {
	case Ready:
		b = appendU(b, uint64(p.hint)+1)
		b = appendI(b, int64(a.Idle))
	case Stale:
		b = appendU(b, uint64(top)+1)
	case Later:
		b = appendI(b, int64(a.Delay))
	}
	p.recEnd(r, b)
	return a
}

func (p *Pool[T]) recMade(item T, now time.Time, extra time.Duration) bool {
	r := p.recBegin()
	ref := p.ref(item, none)
	ok := p.MadeJitter(item, now, extra)
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

func (p *Pool[T]) recGive(item T, now time.Time) bool {
	r := p.recBegin()
	ref := p.ref(item, p.hint)
	ok := p.Give(item, now)
	b := append(r.cur, byte(OpGive))
	b = appendU(b, ref)
	b = p.recAt(r, b, now)
	b = append(b, byte(b2u(ok)))
	p.recEnd(r, b)
	return ok
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

func (p *Pool[T]) recRelent(seat int32, item T, n int, now time.Time) bool {
	r := p.recBegin()
	ref := p.ref(item, seat)
	ok := p.Relent(seat, item, n, now)
	b := append(r.cur, byte(OpRelent))
	b = appendI(b, int64(seat))
	b = appendU(b, ref)
	b = appendI(b, int64(n))
	b = p.recAt(r, b, now)
	b = append(b, byte(b2u(ok)))
	p.recEnd(r, b)
	return ok
}

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
