package pool

import "hash/maphash"

// The index finds the seat of a resource from the resource itself: Give,
// Drop and Made recognise what they are handed by it. It is a table of
// seat numbers, open addressing with linear probing from the resource's
// hash, with a byte of the hash beside each slot so that a probe looks at
// a seat's item only when that byte matches. A slot is 5 bytes (the seat
// plus one, 0 for empty, and the byte), and the table is never more than
// three quarters full, so the index costs 7 to 14 bytes a resource at the
// most resources the pool has held (the table grows, and never shrinks),
// where a map[T]int32 keeps each key beside its value and cost about 25
// at 100,000 resources.
//
// Removal leaves a marker (a slot of -1) that probes pass over and
// insertions reuse, found by the seat's number rather than its item, so an
// item equal to nothing, not even itself (a NaN), still leaves the index
// when its seat does, although a lookup never finds it, as in a map. When
// live slots and markers together reach three quarters of the table it is
// rebuilt without the markers: at twice the size when the live slots alone
// fill more than half of that, at the same size otherwise. Either way the
// live slots then fill at most three eighths of the table, and only an
// insertion into an empty slot brings the next rebuild nearer, so at least
// three eighths of the table's slots are filled between two rebuilds: a
// rebuild costs a bounded amount per insertion.

// indexSeed is the hash seed of every pool of the process: two pools given
// the same resources in the same order lay out their index alike.
var indexSeed = maphash.MakeSeed()

// indexMin is the fewest slots an index has.
const indexMin = 8

// gone marks a slot whose seat left the index.
const gone = -1

func hashOf[T comparable](item T) uint64 { return maphash.Comparable(indexSeed, item) }

// tagOf is the byte of h kept beside a slot: its top byte, which the
// slot's place (the low bits) does not already say.
func tagOf(h uint64) uint8 { return uint8(h >> 56) }

// initIndex sizes the index for capacity resources.
func (z *seats[T]) initIndex(capacity int) {
	n := indexMin
	for n*3/4 < capacity {
		n *= 2
	}
	z.slots, z.tags = make([]int32, n), make([]uint8, n)
	z.indexed, z.gone = 0, 0
}

// find returns the seat holding item, idle or lent.
func (z *seats[T]) find(item T) (int32, bool) {
	h := hashOf(item)
	tag, mask := tagOf(h), uint64(len(z.slots)-1)
	for j := h & mask; ; j = (j + 1) & mask {
		v := z.slots[j]
		if v == 0 {
			return none, false
		}
		if v > 0 && z.tags[j] == tag && z.s[v-1].item == item {
			return v - 1, true
		}
	}
}

// insert indexes seat i, whose item is on no other seat.
func (z *seats[T]) insert(i int32) {
	if (z.indexed+z.gone+1)*4 > len(z.slots)*3 {
		n := len(z.slots)
		if (z.indexed+1)*8 > n*3 {
			n *= 2
		}
		z.rebuild(n)
	}
	z.place(i, hashOf(z.s[i].item))
	z.indexed++
}

// place puts seat i, whose item hashes to h, in the first slot from h's
// place that is empty or marked gone.
func (z *seats[T]) place(i int32, h uint64) {
	mask := uint64(len(z.slots) - 1)
	j := h & mask
	for z.slots[j] > 0 {
		j = (j + 1) & mask
	}
	if z.slots[j] == gone {
		z.gone--
	}
	z.slots[j], z.tags[j] = i+1, tagOf(h)
}

// rebuild moves the index to n slots, leaving the markers behind.
func (z *seats[T]) rebuild(n int) {
	old := z.slots
	z.slots, z.tags, z.gone = make([]int32, n), make([]uint8, n), 0
	for _, v := range old {
		if v > 0 {
			z.place(v-1, hashOf(z.s[v-1].item))
		}
	}
}

// unindex takes seat i out of the index; its item must still be in the
// seat.
func (z *seats[T]) unindex(i int32) {
	mask := uint64(len(z.slots) - 1)
	j, found := hashOf(z.s[i].item)&mask, false
	for ; z.slots[j] != 0; j = (j + 1) & mask {
		if z.slots[j] == i+1 {
			found = true
			break
		}
	}
	if !found {
		// Hashed elsewhere than where it was placed: only an item that is
		// not equal to itself, whose hash is drawn afresh each time.
		for k, v := range z.slots {
			if v == i+1 {
				j, found = uint64(k), true
				break
			}
		}
		if !found {
			return
		}
	}
	z.indexed--
	if z.slots[(j+1)&mask] == 0 {
		// Nothing was placed past this slot on its run: empty it, and the
		// markers just before it, which no probe needs to pass any more.
		z.slots[j] = 0
		for j = (j - 1) & mask; z.slots[j] == gone; j = (j - 1) & mask {
			z.slots[j] = 0
			z.gone--
		}
		return
	}
	z.slots[j] = gone
	z.gone++
}
