package pool

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file replays a recording read by ReadRecording (replay_read.go; the
// format is at the top of record.go): a fresh Pool, rebuilt from the
// recording's first checkpoint, is given the same calls, and every step it
// records must come out the same as the recorded one, byte for byte; so
// must every later checkpoint (the whole state) and the books at the end.

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

// replayBase is the origin a replay's instants are counted from.
var replayBase = time.Unix(0, 0).UTC()

// restore builds a pool of stand-in resources (numbered from 1) in the
// state of checkpoint raw, and the next number free.
func (rc *Recording) restore(raw []byte) (*Pool[uint64], uint64, *Recorder, error) {
	r := &reader{b: raw, off: 1, flags: rc.flags}
	step := r.u()
	var c cpState
	c.read(r)
	if r.err != nil {
		return nil, 0, nil, r.err
	}
	if err := c.check(rc.Limits); err != nil {
		return nil, 0, nil, err
	}
	p, err := New[uint64](rc.Limits, c.ward)
	if err != nil {
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
		switch s.st() {
		case idle:
			p.z.idle++
		case lent:
			p.z.lent++
		default:
			continue
		}
		s.item = next
		p.z.insert(int32(i))
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
			if seat >= int64(len(p.z.s)) || p.z.s[seat].st() == free {
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
				p.Made(v, now, s.Extra)
			}
		case OpUnmade:
			p.Unmade(now, s.Roll)
		case OpUnreserve:
			p.Unreserve(now, s.Guard)
		case OpGive:
			if v, ok = item(); ok {
				p.Give(v, now)
			}
		case OpGiveSeat:
			if v, ok = item(); ok {
				p.giveSeat(s.Seat, v, now)
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
			p.setCeiling(s.N)
		case OpTrim:
			p.trim(now)
		case OpCeilingAt:
			p.SetCeiling(s.N, now)
		case OpLimits:
			if _, err := p.SetLimits(s.Limits, now); err != nil {
				return fmt.Errorf("%w: step %d: %w", ErrRecording, s.Index, err)
			}
		case OpReset:
			p.Reset(now)
		case OpRelent:
			if v, ok = item(); ok {
				p.relent(s.Seat, v, s.N, now)
			}
		case OpReserve:
			p.Reserve(now, s.Roll, s.CPU)
		case OpRefusal:
			p.Refusal(now)
		case OpLoans:
			p.Loans(now)
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
