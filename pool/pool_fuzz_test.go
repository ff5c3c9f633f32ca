package pool_test

import "testing"

// byteSource reads the driver's choices from the fuzzer's bytes: one byte
// for a choice among at most 256, two (big-endian) for more. When the bytes
// run out every choice is 0 and done reports true, which ends the run.
type byteSource struct {
	b   []byte
	pos int
}

func (s *byteSource) next() int {
	if s.pos >= len(s.b) {
		s.pos++ // reading past the end still ends the run
		return 0
	}
	s.pos++
	return int(s.b[s.pos-1])
}

func (s *byteSource) intn(n int, _ string) int {
	if n <= 1 {
		return 0
	}
	v := s.next()
	if n > 256 {
		v = v<<8 | s.next()
	}
	return v % n
}

func (s *byteSource) done() bool { return s.pos >= len(s.b) }

// FuzzPool drives a Pool and the reference model of pool_model_test.go with
// the calls the bytes spell: the first byte picks the ward (none, the empty
// ward spelled out, every guard set never to refuse, or every guard set
// tight enough to refuse often), the next ones the
// limits, and the rest one call each (Take, Made, MadeJitter, Unmade, Give,
// Drop, Evict, Loans, Refusal, a clock step, Close) with the clock moving
// forward, standing still or stepping back between them. After every call
// the answers and the books must match the model's and every invariant must
// hold; a panic is a failure too. The seeds in testdata/fuzz/FuzzPool run as
// ordinary tests.
func FuzzPool(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 2, 2, 1, 10, 1, 40, 0, 0, 0, 10, 0, 10, 0, 60, 0, 70, 0, 10, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return // long enough to say anything a shorter one can
		}
		s := &byteSource{b: data}
		wk := wardKind(s.intn(4, "ward"))
		run(t, s, len(data), wk)
	})
}
