package engine

import (
	"slices"
	"strconv"
	"strings"
)

// seatModel follows the pool's seats as the recording frees them, to know
// which seat a resource just made takes (a Made names none): the last seat
// freed, or a new one. It starts from an empty pool and gives up (ok false)
// at the first step that shows the pool was not empty: a recording whose
// ring dropped its start, or a Recorder attached to a pool in use.
type seatModel struct {
	ok   bool
	n    int32   // seats in the arena
	free []int32 // freed seats, the last on top
}

// alloc returns the seat a resource made now takes, or -1 when not known.
func (m *seatModel) alloc() int32 {
	if !m.ok {
		return -1
	}
	if k := len(m.free); k > 0 {
		i := m.free[k-1]
		m.free = m.free[:k-1]
		return i
	}
	m.n++
	return m.n - 1
}

// release frees seat i.
func (m *seatModel) release(i int32) {
	if !m.ok {
		return
	}
	if i < 0 || i >= m.n || slices.Contains(m.free, i) {
		m.ok = false
		return
	}
	m.free = append(m.free, i)
}

// used checks that seat i holds a resource.
func (m *seatModel) used(i int32) {
	if m.ok && (i < 0 || i >= m.n || slices.Contains(m.free, i)) {
		m.ok = false
	}
}

// retired reads the seats of an answer "seats [1 4]", in order.
func retired(ans string) []int32 {
	inner, ok := strings.CutPrefix(ans, "seats [")
	if !ok {
		return nil
	}
	var out []int32
	for _, f := range strings.Fields(strings.TrimSuffix(inner, "]")) {
		if n, err := strconv.ParseInt(f, 10, 32); err == nil {
			out = append(out, int32(n))
		}
	}
	return out
}
