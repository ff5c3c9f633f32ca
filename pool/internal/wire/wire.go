// Package wire is the encoding a recording is written in, shared by the
// pool's state (pool.Pool.AppendState, pool.ReadState) and the recorder
// (package record): encoding/binary's varints, floats as byte-reversed
// bits, and a Reader whose first error sticks.
package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// AppendU and AppendI are encoding/binary's varints: unsigned LEB128, and
// zigzag for signed values.
func AppendU(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

// AppendI appends x as a zigzag varint.
func AppendI(b []byte, x int64) []byte { return binary.AppendVarint(b, x) }

// AppendF appends f's bits, byte-reversed so that short fractions (0.5,
// 0.25) take few bytes, as a varint.
func AppendF(b []byte, f float64) []byte {
	return AppendU(b, bits.ReverseBytes64(math.Float64bits(f)))
}

// AppendB appends v as 0 or 1.
func AppendB(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// FNV64 is FNV-1a, 64 bits, of b.
func FNV64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Reader reads the format's fields from B at Off; the first error sticks
// (Err) and every read after it gives zero.
type Reader struct {
	B   []byte
	Off int
	Err error
}

// Fail records the first error, with the offset it was found at.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf(format+" (at byte %d)", append(args, r.Off)...)
	}
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if r.Off >= len(r.B) {
		r.Fail("truncated")
		return 0
	}
	r.Off++
	return r.B[r.Off-1]
}

// U reads an unsigned varint.
func (r *Reader) U() uint64 {
	if r.Err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.B[r.Off:])
	switch {
	case n == 0:
		r.Fail("truncated")
		return 0 // no half-read value goes on
	case n < 0:
		r.Fail("a varint runs past 64 bits")
		return 0
	}
	r.Off += n
	return x
}

// I reads a zigzag varint.
func (r *Reader) I() int64 {
	u := r.U()
	return int64(u>>1) ^ -int64(u&1)
}

// F reads a float written by AppendF.
func (r *Reader) F() float64 { return math.Float64frombits(bits.ReverseBytes64(r.U())) }

// Flag reads a 0 or 1.
func (r *Reader) Flag() bool {
	v := r.U()
	if v > 1 {
		r.Fail("a flag of %d", v)
	}
	return v == 1
}

// N reads a count or size that must fit an int32.
func (r *Reader) N() int {
	v := r.U()
	if v > math.MaxInt32 {
		r.Fail("a count of %d", v)
		return 0
	}
	return int(v)
}

// U32 reads an unsigned varint that must fit 32 bits.
func (r *Reader) U32() uint32 {
	v := r.U()
	if v > math.MaxUint32 {
		r.Fail("%d does not fit 32 bits", v)
		return 0
	}
	return uint32(v)
}

// Seat reads a seat index, or -1 for none.
func (r *Reader) Seat() int32 {
	v := r.I()
	if v < -1 || v > math.MaxInt32 {
		r.Fail("seat %d", v)
		return -1
	}
	return int32(v)
}

// Count reads how many items of at least size bytes follow, refusing more
// than the bytes left could hold.
func (r *Reader) Count(size int) int {
	v := r.U()
	if r.Err != nil {
		return 0
	}
	if v > uint64(len(r.B)-r.Off)/uint64(size) {
		r.Fail("%d items, more than the bytes left hold", v)
		return 0
	}
	return int(v)
}

// Seats reads a list of at most n seat numbers, each below n.
func (r *Reader) Seats(n int) []int32 {
	k := r.Count(1)
	if k > n {
		r.Fail("a list of %d seats, of %d", k, n)
		return nil
	}
	out := make([]int32, k)
	for i := range out {
		v := r.U()
		if v >= uint64(n) {
			r.Fail("seat %d of %d", v, n)
			return nil
		}
		out[i] = int32(v)
	}
	return out
}
