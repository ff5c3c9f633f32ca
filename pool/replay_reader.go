package pool

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// This file holds reader, the cursor ReadRecording (replay_read.go) decodes
// a recording's bytes with: varints, flags, seats and counts.

// reader reads the format's fields; the first error sticks and every read
// after it gives zero.
type reader struct {
	b     []byte
	off   int
	err   error
	flags uint64 // the recording's ward flags, for its checkpoints
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
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail("truncated")
		return 0 // no half-read value goes on
	case n < 0:
		r.fail("a varint runs past 64 bits")
		return 0
	}
	r.off += n
	return x
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
	if r.err != nil {
		return 0
	}
	if v > uint64(len(r.b)-r.off)/uint64(size) {
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
