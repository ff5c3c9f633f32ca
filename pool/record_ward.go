package pool

import (
	"fmt"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file writes the ward into a recording and reads it back: the
// header's ward flags say which guards the pool has, and every checkpoint
// ends with the state of each of them (ward's AppendState), instants
// counted from the recording's origin. So a replay rebuilds the guards as
// they stood at the first checkpoint, and every later checkpoint checks
// them, byte for byte, as it checks the seats.

// The ward flags, one bit per guard; the checkpoint's ward section holds
// the guards in this order.
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

// wardEntry is one guard of a Ward, named as the format and errors name
// it; g is nil for an absent guard.
type wardEntry struct {
	g    guardState
	name string
	flag uint64
}

// wardGuards lists w's guards in flag order.
func wardGuards(w *ward.Ward) [5]wardEntry {
	out := [5]wardEntry{{nil, "Backoff", wardBackoff}, {nil, "Breaker", wardBreaker},
		{nil, "Bucket", wardBucket}, {nil, "Shedder", wardShedder}, {nil, "Limiter", wardLimiter}}
	if w.Backoff != nil {
		out[0].g = w.Backoff
	}
	if w.Breaker != nil {
		out[1].g = w.Breaker
	}
	if w.Bucket != nil {
		out[2].g = w.Bucket
	}
	if w.Shedder != nil {
		out[3].g = w.Shedder
	}
	if w.Limiter != nil {
		out[4].g = w.Limiter
	}
	return out
}

// wardFlags returns the format's flags for w.
func wardFlags(w *ward.Ward) uint64 {
	var f uint64
	for _, e := range wardGuards(w) {
		if e.g != nil {
			f |= e.flag
		}
	}
	return f
}

// appendWard appends the state of each of w's guards, in flag order.
func appendWard(b []byte, w *ward.Ward, origin time.Time) []byte {
	if w.Backoff != nil {
		b = w.Backoff.AppendState(b, origin)
	}
	if w.Breaker != nil {
		b = w.Breaker.AppendState(b, origin)
	}
	if w.Bucket != nil {
		b = w.Bucket.AppendState(b, origin)
	}
	if w.Shedder != nil {
		b = w.Shedder.AppendState(b, origin)
	}
	if w.Limiter != nil {
		b = w.Limiter.AppendState(b, origin)
	}
	return b
}

// readWard reads the guards flags names at r into fresh ones.
func readWard(r *reader, flags uint64, origin time.Time) ward.Ward {
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
	for _, e := range wardGuards(&w) {
		if e.g == nil || r.err != nil {
			continue
		}
		n, err := e.g.ReadState(r.b[r.off:], origin)
		if err != nil {
			r.fail("the ward's %s: %v", e.name, err)
			return ward.Ward{}
		}
		r.off += n
	}
	return w
}

// recordable says why w cannot be recorded, or nil: a guard whose state
// does not read back as itself (one not built by its constructor, such as
// a zero ward.Breaker) could not be rebuilt by a replay.
func recordable(w ward.Ward) error {
	for _, e := range wardGuards(&w) {
		if e.g == nil {
			continue
		}
		state := e.g.AppendState(nil, time.Time{})
		r := &reader{b: state}
		readWard(r, e.flag, time.Time{})
		if r.err != nil || r.off != len(state) {
			return fmt.Errorf("%w: the ward's %s does not read back from its state (was it built by its constructor?)", ErrUnrecordable, e.name)
		}
	}
	return nil
}

// recordOrigin fixes r's origin, before p has seen an instant, at the
// earliest instant p's guards hold, so that the checkpoint can count
// theirs from it; it leaves r as it is when it has an origin already, or
// the guards hold no instant.
func recordOrigin(r *Recorder, w *ward.Ward) {
	if r.hasOrigin {
		return
	}
	if at, ok := w.Anchor(); ok {
		r.origin, r.hasOrigin = at, true
	}
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
	var c cpState
	r := &reader{b: rc.cps[0].raw, off: 1, flags: rc.flags}
	r.u()
	c.read(r)
	return c.ward
}
