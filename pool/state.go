package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/wardpool/wardpool/pool/internal/wire"
	"github.com/wardpool/wardpool/ward"
)

// This file writes a pool's whole state as bytes and reads it back, for a
// recorder's checkpoints (package record): every seat with its instants,
// the idle list, the birth heap, the free list, the clock, the books, and
// the state of each of the ward's guards (ward's AppendState). Resources
// are not written (a T may be anything): ReadState numbers them by seat.

// The ward flags, one bit per guard; the state's ward section holds the
// guards in this order.
const (
	wardBackoff = 1 << iota
	wardBreaker
	wardBucket
	wardShedder
	wardLimiter
	wardAll = wardBackoff | wardBreaker | wardBucket | wardShedder | wardLimiter
)

// guardState is what every guard of a Ward has (package ward, state.go).
type guardState interface {
	AppendState(dst []byte, origin time.Time) []byte
	ReadState(src []byte, origin time.Time) (int, error)
}

// guards lists w's guards in flag order, with their names; nil for an
// absent one.
func guards(w *ward.Ward) (gs [5]guardState, names [5]string) {
	names = [5]string{"Backoff", "Breaker", "Bucket", "Shedder", "Limiter"}
	if w.Backoff != nil {
		gs[0] = w.Backoff
	}
	if w.Breaker != nil {
		gs[1] = w.Breaker
	}
	if w.Bucket != nil {
		gs[2] = w.Bucket
	}
	if w.Shedder != nil {
		gs[3] = w.Shedder
	}
	if w.Limiter != nil {
		gs[4] = w.Limiter
	}
	return gs, names
}

// AppendState appends the pool's whole state to dst, its instants (and
// its guards') counted from origin, and returns the extended slice. The
// state begins with the limits (Size and Idle as unsigned varints, Keep
// and Life as signed ones, in nanoseconds) and then a word of flags naming
// the ward's guards; the rest is for ReadState alone. It is what a
// recorder's checkpoint holds (package record). It fails, with an error
// wrapping ErrUnstateable, when a guard of the ward cannot be rebuilt from
// its state (one not built by its constructor, such as a zero
// ward.Breaker); dst is then returned unchanged.
func (p *Pool[T]) AppendState(dst []byte, origin time.Time) ([]byte, error) {
	gs, names := guards(&p.ward)
	var flags uint64
	for i, g := range gs {
		if g != nil {
			flags |= 1 << i
		}
	}
	since := func(t time.Time) int64 {
		if !p.started {
			return 0
		}
		return int64(t.Sub(origin))
	}
	b := dst
	l := p.limits
	b = wire.AppendU(b, uint64(l.Size))
	b = wire.AppendU(b, uint64(l.Idle))
	b = wire.AppendI(b, int64(l.Keep))
	b = wire.AppendI(b, int64(l.Life))
	b = wire.AppendU(b, flags)
	b = wire.AppendB(b, p.closed)
	b = wire.AppendB(b, p.started)
	b = wire.AppendU(b, uint64(p.gen))
	b = wire.AppendI(b, int64(p.hint))
	b = wire.AppendU(b, uint64(p.making))
	b = wire.AppendI(b, since(p.epoch))
	b = wire.AppendI(b, p.last)
	b = wire.AppendI(b, since(p.lastAt))
	b = wire.AppendU(b, uint64(p.failures))
	b = wire.AppendI(b, p.holdUntil)
	b = wire.AppendI(b, int64(p.lastDelay))
	b = wire.AppendI(b, int64(p.ceiling))
	b = wire.AppendI(b, int64(p.room))
	b = wire.AppendI(b, p.roomUntil)
	b = wire.AppendI(b, p.hold.until)
	b = wire.AppendI(b, p.hold.every)
	b = wire.AppendI(b, p.hold.next)
	b = wire.AppendI(b, p.held)
	b = wire.AppendU(b, uint64(p.holds))
	b = wire.AppendB(b, p.rot.on)
	if p.rot.on {
		b = wire.AppendU(b, uint64(p.rot.gen))
		b = wire.AppendI(b, p.rot.from)
		b = wire.AppendI(b, p.rot.until)
		b = wire.AppendI(b, p.rot.per)
		b = wire.AppendU(b, uint64(p.rot.done))
	}
	for _, v := range p.books.counters() {
		b = wire.AppendU(b, *v)
	}
	b = wire.AppendU(b, uint64(len(p.z.s)))
	for i := range p.z.s {
		s := &p.z.s[i]
		b = wire.AppendU(b, uint64(s.st()))
		if s.st() == free {
			continue
		}
		b = wire.AppendI(b, s.born)
		b = wire.AppendI(b, s.since)
		b = wire.AppendU(b, uint64(s.gen()))
		b = wire.AppendI(b, int64(s.up))
		b = wire.AppendI(b, int64(s.down))
		b = wire.AppendI(b, int64(s.hi))
	}
	b = wire.AppendU(b, uint64(len(p.z.free)))
	for _, i := range p.z.free {
		b = wire.AppendU(b, uint64(i))
	}
	b = wire.AppendI(b, int64(p.z.top))
	b = wire.AppendI(b, int64(p.z.bottom))
	b = wire.AppendU(b, uint64(len(p.z.heap)))
	for _, i := range p.z.heap {
		b = wire.AppendU(b, uint64(i))
	}
	for i, g := range gs {
		if g == nil {
			continue
		}
		// A guard whose state does not read back as itself could not be
		// rebuilt: it is read back where it was written.
		start := len(b)
		b = g.AppendState(b, origin)
		r := &wire.Reader{B: b[start:]}
		readWard(r, 1<<i, origin)
		if r.Err != nil || r.Off != len(b)-start {
			return dst, fmt.Errorf("%w: the ward's %s does not read back from its state (was it built by its constructor?)", ErrUnstateable, names[i])
		}
	}
	return p.appendClasses(b), nil // class_state.go
}

// ErrUnstateable is wrapped by the error AppendState returns for a pool
// whose ward cannot be written down.
var ErrUnstateable = errors.New("wardpool: pool state cannot be written")

// counters lists the books' counters in the order the state holds them.
func (k *Books) counters() [11]*uint64 {
	return [...]*uint64{&k.Made, &k.Failed, &k.Loans, &k.Reused, &k.Retired,
		&k.IdleRetired, &k.LifeRetired, &k.Dropped, &k.Waited, &k.Deferred, &k.Shed}
}

// readWard reads the guards flags names at r into fresh ones.
func readWard(r *wire.Reader, flags uint64, origin time.Time) ward.Ward {
	var w ward.Ward
	if flags&wardBackoff != 0 {
		w.Backoff = new(ward.Backoff)
	}
	if flags&wardBreaker != 0 {
		w.Breaker = new(ward.Breaker)
	}
	if flags&wardBucket != 0 {
		w.Bucket = new(ward.Bucket)
	}
	if flags&wardShedder != 0 {
		w.Shedder = new(ward.Shedder)
	}
	if flags&wardLimiter != 0 {
		w.Limiter = new(ward.Limiter)
	}
	gs, names := guards(&w)
	for i, g := range gs {
		if g == nil || r.Err != nil {
			continue
		}
		n, err := g.ReadState(r.B[r.Off:], origin)
		if err != nil {
			r.Fail("the ward's %s: %v", names[i], err)
			return ward.Ward{}
		}
		r.Off += n
	}
	return w
}

// ReadState reads a state written by AppendState at the start of src,
// instants counted from origin, into a new pool of stand-in resources: the
// resource in seat i is the number i+1. It returns the pool, its ward (the
// guards the pool holds, fresh), and how many bytes it read. It fails, with
// an error wrapping ErrState, for bytes that are not a state any pool can
// be in; it never panics.
func ReadState(src []byte, origin time.Time) (*Pool[uint64], ward.Ward, int, error) {
	r := &wire.Reader{B: src}
	var c snapshot
	c.read(r, origin)
	if r.Err != nil {
		return nil, ward.Ward{}, 0, fmt.Errorf("%w: %w", ErrState, r.Err)
	}
	if err := c.check(); err != nil {
		return nil, ward.Ward{}, 0, fmt.Errorf("%w: %w", ErrState, err)
	}
	p, err := New[uint64](c.limits, c.ward)
	if err != nil {
		return nil, ward.Ward{}, 0, fmt.Errorf("%w: %w", ErrState, err)
	}
	at := func(d int64) time.Time { return origin.Add(time.Duration(d)) }
	p.closed, p.started, p.gen, p.hint, p.making = c.closed, c.started, c.gen, c.hint, c.making
	if c.started {
		p.epoch, p.last, p.lastAt = at(c.epoch), c.last, at(c.lastAt)
	}
	p.failures, p.holdUntil, p.lastDelay = c.failures, c.holdUntil, c.lastDelay
	p.ceiling = max(c.ceiling, -1)
	p.room, p.roomUntil = max(c.room, -1), c.roomUntil
	p.hold = c.hold
	p.held, p.holds, p.rot = c.held, c.holds, c.rot
	p.books = c.books
	p.z.s = c.seats
	for i := range p.z.s {
		s := &p.z.s[i]
		switch s.st() {
		case idle:
			p.z.idle++
		case lent:
			p.z.lent++
		default:
			continue
		}
		s.item = uint64(i) + 1
		p.z.insert(int32(i))
	}
	p.z.free, p.z.heap, p.z.top, p.z.bottom = c.free, c.heap, c.top, c.bottom
	if err := c.classes.restore(p); err != nil {
		return nil, ward.Ward{}, 0, fmt.Errorf("%w: %w", ErrState, err)
	}
	return p, c.ward, r.Off, nil
}

// ErrState is wrapped by the errors ReadState returns.
var ErrState = errors.New("wardpool: bad pool state")

// snapshot is a pool's state, read.
type snapshot struct {
	limits                    Limits
	closed, started           bool
	epoch, last, lastAt       int64
	gen                       uint32
	hint                      int32
	making, failures, ceiling int
	room                      int
	roomUntil                 int64
	hold                      holding
	holdUntil, held           int64
	holds                     int
	rot                       rotation
	lastDelay                 time.Duration
	books                     Books
	seats                     []seat[uint64]
	free, heap                []int32
	top, bottom               int32
	ward                      ward.Ward
	classes                   classState // class_state.go
}

func (c *snapshot) read(r *wire.Reader, origin time.Time) {
	c.limits = Limits{Size: r.N(), Idle: r.N(), Keep: time.Duration(r.I()), Life: time.Duration(r.I())}
	flags := r.U()
	if flags&^wardAll != 0 {
		r.Fail("unknown ward flags %#x", flags)
		return
	}
	c.closed, c.started = r.Flag(), r.Flag()
	if c.gen = r.U32(); c.gen > genMask {
		r.Fail("generation %d, past the %d a pool counts to", c.gen, genMask)
		return
	}
	c.hint = r.Seat()
	c.making = r.N()
	c.epoch, c.last, c.lastAt = r.I(), r.I(), r.I()
	c.failures = r.N()
	c.holdUntil, c.lastDelay = r.I(), time.Duration(r.I())
	c.ceiling = int(r.I())
	c.room, c.roomUntil = int(r.I()), r.I()
	c.hold = holding{until: r.I(), every: r.I(), next: r.I()}
	if c.hold.until != 0 && c.hold.every <= 0 {
		r.Fail("a hold until %d spaced by %d", c.hold.until, c.hold.every)
		return
	}
	c.held, c.holds = r.I(), r.N()
	if c.held < 0 || c.holds > holdsMax {
		r.Fail("a mean hold of %d over %d loans", c.held, c.holds)
		return
	}
	if c.rot.on = r.Flag(); c.rot.on {
		c.rot.gen, c.rot.from, c.rot.until, c.rot.per, c.rot.done = r.U32(), r.I(), r.I(), r.I(), r.N()
		if c.rot.gen > genMask || c.rot.per <= 0 || c.rot.until < c.rot.from {
			r.Fail("a rotation of generation %d from %d to %d every %d", c.rot.gen, c.rot.from, c.rot.until, c.rot.per)
			return
		}
	}
	for _, v := range c.books.counters() {
		*v = r.U()
	}
	n := r.Count(1)
	c.seats = make([]seat[uint64], n)
	for i := range c.seats {
		s := &c.seats[i]
		st := r.U()
		if st > uint64(lent) {
			r.Fail("seat %d in state %d", i, st)
			return
		}
		s.setSt(state(st))
		s.up, s.down, s.hi = none, none, none
		if s.st() == free {
			continue
		}
		s.born, s.since = r.I(), r.I()
		g := r.U32()
		if g > genMask {
			r.Fail("seat %d of generation %d, past the %d a pool counts to", i, g, genMask)
			return
		}
		s.setGen(g)
		s.up, s.down, s.hi = r.Seat(), r.Seat(), r.Seat()
	}
	c.free = r.Seats(n)
	c.top, c.bottom = r.Seat(), r.Seat()
	c.heap = r.Seats(n)
	c.ward = readWard(r, flags, origin)
	if r.Err == nil {
		c.classes.read(r, c.seats)
	}
}

// check reports how the state's seats fail to be a pool's,
// or nil: every index in range, the idle list a chain from top to bottom
// through every idle seat once, the heap every idle seat once (with Life),
// the free list every free seat once.
func (c *snapshot) check() error {
	l := c.limits
	n := int32(len(c.seats))
	in := func(i int32) bool { return i == none || (i >= 0 && i < n) }
	var idles, frees int
	for i := range c.seats {
		s := &c.seats[i]
		switch s.st() {
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
		if seen[i] || c.seats[i].st() != idle || c.seats[i].up != prev {
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
		if !in(i) || i == none || seen[i] || c.seats[i].st() != free {
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
		if !in(i) || i == none || seen[i] || c.seats[i].st() != idle || c.seats[i].hi != int32(at) {
			return fmt.Errorf("the birth heap names seat %d at %d", i, at)
		}
		seen[i] = true
	}
	if len(c.heap) != idles {
		return fmt.Errorf("the birth heap holds %d of %d idle seats", len(c.heap), idles)
	}
	return nil
}
