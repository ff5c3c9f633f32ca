package pool

import (
	"testing"
	"unsafe"
)

// TestSeatIsFortyBytes holds the pool's record of a resource to 40 bytes
// with a pointer-sized resource: the state lives in the generation's top
// bits.
func TestSeatIsFortyBytes(t *testing.T) {
	if n := unsafe.Sizeof(seat[*conn]{}); n > 40 {
		t.Fatalf("seat is %d bytes, want at most 40", n)
	}
}

// The state and the generation share a word without touching each other.
func TestSeatStateAndGenerationShareAWord(t *testing.T) {
	for _, g := range []uint32{0, 1, 12345, genMask} {
		for _, st := range []state{free, idle, lent} {
			var s seat[*conn]
			s.setGen(g)
			s.setSt(st)
			if s.gen() != g || s.st() != st {
				t.Fatalf("set %d and %d, read %d and %d", g, st, s.gen(), s.st())
			}
			s.setGen(genMask &^ g)
			if s.st() != st || s.gen() != genMask&^g {
				t.Fatalf("a new generation changed the state: %d, %d", s.gen(), s.st())
			}
		}
	}
	// Generations count modulo 2^genBits.
	p := mustNew(t, Limits{})
	p.gen = genMask
	p.Reset(t0, 0)
	if p.gen != 0 {
		t.Fatalf("generation after %d is %d, want 0", genMask, p.gen)
	}
}
