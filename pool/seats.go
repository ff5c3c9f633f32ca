package pool

// This file holds the pool's storage: an arena of seats, an intrusive
// doubly-linked list of the idle ones in the order they were given back, and
// a min-heap of the idle ones by birth (kept only when Life is set).
//
// The list gives LIFO reuse at its top and the oldest-returned at its bottom,
// so expiry by Keep pops from the bottom and stops at the first seat still
// fresh: O(expired). The heap gives the oldest-born idle seat in O(1) and
// removes any seat in O(log n), so expiry by Life is O(expired × log n).
// Seats are recycled through a free list and never shrink, so a pool in
// steady state allocates nothing.

const none int32 = -1

type state uint8

const (
	free state = iota
	idle
	lent
)

// seat is one resource the pool holds, or a free place in the arena.
type seat[T comparable] struct {
	item  T
	born  int64  // ns on the pool's clock when it was made
	since int64  // idle: when it was given back; lent: when it was lent
	gs    uint32 // the pool's generation when it was made (see Pool.Reset), and the state above genBits
	up    int32  // idle list: the seat given back after this one (toward the top)
	down  int32  // idle list: the seat given back before this one
	hi    int32  // index in the birth heap, or none
}

// A pool counts its generations (Resets) modulo 2^genBits, and a seat keeps
// its state in the bits above: a seat of 40 bytes rather than 48 with a
// pointer-sized item.
const (
	genBits = 30
	genMask = 1<<genBits - 1
)

func (s *seat[T]) st() state       { return state(s.gs >> genBits) }
func (s *seat[T]) setSt(x state)   { s.gs = s.gs&genMask | uint32(x)<<genBits }
func (s *seat[T]) gen() uint32     { return s.gs & genMask }
func (s *seat[T]) setGen(g uint32) { s.gs = s.gs&^genMask | g&genMask }

// seats is the storage behind a Pool. Not safe for concurrent use.
type seats[T comparable] struct {
	s    []seat[T]
	free []int32

	index map[T]int32 // the seat of every resource on the books (index.go)

	top, bottom int32 // idle list ends; none when empty
	idle        int
	lent        int

	heap  []int32 // idle seats by birth; used only when byBirth
	birth bool
}

func (z *seats[T]) init(capacity int, byBirth bool) {
	z.s = make([]seat[T], 0, capacity)
	z.free = make([]int32, 0, capacity)
	z.initIndex(capacity)
	z.top, z.bottom = none, none
	z.birth = byBirth
	if byBirth {
		z.heap = make([]int32, 0, capacity)
	}
}

// add registers item as lent, born and lent at t, of generation gen, and
// returns its seat.
func (z *seats[T]) add(item T, t int64, gen uint32) int32 {
	var i int32
	if n := len(z.free); n > 0 {
		i = z.free[n-1]
		z.free = z.free[:n-1]
	} else {
		z.s = append(z.s, seat[T]{})
		i = int32(len(z.s) - 1)
	}
	z.s[i] = seat[T]{item: item, born: t, since: t, gs: gen&genMask | uint32(lent)<<genBits, up: none, down: none, hi: none}
	z.insert(i)
	z.lent++
	return i
}

// remove forgets seat i, which must be lent (idle seats are unlinked first).
func (z *seats[T]) remove(i int32) {
	s := &z.s[i]
	z.unindex(i)
	var zero T
	s.item = zero // let the garbage collector have it
	s.setSt(free)
	z.lent--
	z.free = append(z.free, i)
}

// pushAt puts lent seat i in the idle list as given back at t: on top,
// unless seats above were given back later than t (a late Give, see
// Pool.Give), so that the list stays in the order of the instants its
// seats came back, the latest on top.
func (z *seats[T]) pushAt(i int32, t int64) {
	s := &z.s[i]
	s.setSt(idle)
	s.since = t
	above, below := none, z.top // i goes between them
	for below != none && z.s[below].since > t {
		above, below = below, z.s[below].down
	}
	s.up, s.down = above, below
	if below != none {
		z.s[below].up = i
	} else {
		z.bottom = i
	}
	if above != none {
		z.s[above].down = i
	} else {
		z.top = i
	}
	z.idle++
	z.lent--
	if z.birth {
		z.heapPush(i)
	}
}

// pull takes idle seat i out of the idle list and marks it lent at t.
func (z *seats[T]) pull(i int32, t int64) {
	s := &z.s[i]
	if s.up != none {
		z.s[s.up].down = s.down
	} else {
		z.top = s.down
	}
	if s.down != none {
		z.s[s.down].up = s.up
	} else {
		z.bottom = s.up
	}
	s.up, s.down = none, none
	s.setSt(lent)
	s.since = t
	z.idle--
	z.lent++
	if z.birth {
		z.heapRemove(i)
	}
}

// The birth heap: a binary min-heap of seat indices keyed by born, each seat
// knowing its place (hi) so that any one can leave in O(log n).

func (z *seats[T]) less(a, b int) bool { return z.s[z.heap[a]].born < z.s[z.heap[b]].born }

func (z *seats[T]) swap(a, b int) {
	z.heap[a], z.heap[b] = z.heap[b], z.heap[a]
	z.s[z.heap[a]].hi = int32(a)
	z.s[z.heap[b]].hi = int32(b)
}

func (z *seats[T]) heapPush(i int32) {
	z.heap = append(z.heap, i)
	n := len(z.heap) - 1
	z.s[i].hi = int32(n)
	z.siftUp(n)
}

func (z *seats[T]) heapRemove(i int32) {
	at := int(z.s[i].hi)
	last := len(z.heap) - 1
	if at != last {
		z.swap(at, last)
	}
	z.heap = z.heap[:last]
	z.s[i].hi = none
	if at != last {
		z.siftDown(at)
		z.siftUp(at)
	}
}

func (z *seats[T]) siftUp(j int) {
	for j > 0 {
		parent := (j - 1) / 2
		if !z.less(j, parent) {
			return
		}
		z.swap(j, parent)
		j = parent
	}
}

func (z *seats[T]) siftDown(j int) {
	n := len(z.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && z.less(r, l) {
			m = r
		}
		if !z.less(m, j) {
			return
		}
		z.swap(j, m)
		j = m
	}
}

// oldest is the idle seat born first, or none (only when byBirth).
func (z *seats[T]) oldest() int32 {
	if len(z.heap) == 0 {
		return none
	}
	return z.heap[0]
}
