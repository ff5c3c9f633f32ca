package pool

import "hash/maphash"

// The index finds the seat of a resource from the resource itself: Give,
// Drop and Made recognise what they are handed by it. It is a table of
// seat numbers, open addressing with linear probing from the resource's
// hash, at most three quarters full. A slot is 4 bytes (the seat plus one;
// 0 is empty), so the index costs 5 to 11 bytes a resource, where a
// map[T]int32 keeps each key beside its value and cost about 25 at 100,000
// resources. The items are the seats' own: a probe compares the resource
// with the item of the seat a slot names.
//
// Removal shifts the entries after the hole back into it rather than
// leaving a marker, so the table never fills with the dead. It finds the
// slot by the seat's number, not the item: an item equal to nothing, not
// even itself (a NaN), is never found by a lookup, as in a map, but still
// leaves the index when its seat does.

// indexSeed is the hash seed of every pool of the process: two pools given
// the same resources in the same order lay out their index alike.
var indexSeed = maphash.MakeSeed()

// indexMin is the fewest slots an index has.
const indexMin = 8

func hashOf[T comparable](item T) uint64 { return maphash.Comparable(indexSeed, item) }

// initIndex sizes the index for capacity resources.
func (z *seats[T]) initIndex(capacity int) {
	n := indexMin
	for n*3/4 < capacity {
		n *= 2
	}
	z.slots = make([]int32, n)
	z.indexed = 0
}

// find returns the seat holding item, idle or lent.
func (z *seats[T]) find(item T) (int32, bool) {
	mask := uint64(len(z.slots) - 1)
	for j := hashOf(item) & mask; ; j = (j + 1) & mask {
		v := z.slots[j]
		if v == 0 {
			return none, false
		}
		if z.s[v-1].item == item {
			return v - 1, true
		}
	}
}

// insert indexes seat i, whose item is on no other seat.
func (z *seats[T]) insert(i int32) {
	if (z.indexed+1)*4 > len(z.slots)*3 {
		z.regrow(len(z.slots) * 2)
	}
	z.place(i)
	z.indexed++
}

// place puts seat i in the first empty slot from its item's hash.
func (z *seats[T]) place(i int32) {
	mask := uint64(len(z.slots) - 1)
	j := hashOf(z.s[i].item) & mask
	for z.slots[j] != 0 {
		j = (j + 1) & mask
	}
	z.slots[j] = i + 1
}

// regrow moves the index to n slots.
func (z *seats[T]) regrow(n int) {
	old := z.slots
	z.slots = make([]int32, n)
	for _, v := range old {
		if v != 0 {
			z.place(v - 1)
		}
	}
}

// unindex takes seat i out of the index; its item must still be in the
// seat. The entries after the hole that would have been placed at or
// before it move back into it, until an empty slot.
func (z *seats[T]) unindex(i int32) {
	mask := uint64(len(z.slots) - 1)
	hole, found := uint64(0), false
	for j := hashOf(z.s[i].item) & mask; z.slots[j] != 0; j = (j + 1) & mask {
		if z.slots[j] == i+1 {
			hole, found = j, true
			break
		}
	}
	if !found {
		// Hashed elsewhere than where it was placed: only an item that is
		// not equal to itself, whose hash is drawn afresh each time.
		for j, v := range z.slots {
			if v == i+1 {
				hole, found = uint64(j), true
				break
			}
		}
		if !found {
			return
		}
	}
	z.indexed--
	for {
		z.slots[hole] = 0
		j := hole
		for {
			j = (j + 1) & mask
			v := z.slots[j]
			if v == 0 {
				return
			}
			home := hashOf(z.s[v-1].item) & mask
			// The entry at j may fill the hole if its home is not in
			// (hole, j], cyclically: its probe passed the hole.
			if (j-home)&mask >= (j-hole)&mask {
				z.slots[hole] = v
				hole = j
				break
			}
		}
	}
}
