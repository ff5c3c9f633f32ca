package pool

// The index finds the seat of a resource from the resource itself: Give,
// Drop and Made recognise what they are handed by it. It is a Go map. A
// value not equal to itself (a NaN) is never entered: a map could neither
// find nor delete it, so it would stay for ever; such a resource is never
// recognised, as the Pool documents.

// initIndex sizes the index for capacity resources.
func (z *seats[T]) initIndex(capacity int) {
	z.index = make(map[T]int32, capacity)
}

// find returns the seat holding item, idle or lent.
func (z *seats[T]) find(item T) (int32, bool) {
	i, ok := z.index[item]
	return i, ok
}

// insert enters seat i, just filled, in the index.
func (z *seats[T]) insert(i int32) {
	if item := z.s[i].item; item == item {
		z.index[item] = i
	}
}

// unindex takes seat i, about to be freed, out of the index.
func (z *seats[T]) unindex(i int32) {
	if item := z.s[i].item; item == item {
		delete(z.index, item)
	}
}
