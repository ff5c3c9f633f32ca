package pool

import (
	"fmt"
	"time"

	"github.com/wardpool/wardpool/pool/internal/wire"
)

// This file writes a pool's classes (class.go) into its state and reads
// them back (see AppendState): the classes as set, each class's books and
// last ask, and the class of each lent seat. A pool without classes writes
// one zero.

// appendClasses appends the classes part of the state.
func (p *Pool[T]) appendClasses(b []byte) []byte {
	k := p.cls
	if k == nil {
		return wire.AppendU(b, 0)
	}
	n := len(k.cs) - 1
	b = wire.AppendU(b, uint64(n))
	for _, c := range k.cs[:n] {
		b = wire.AppendU(b, uint64(len(c.Name)))
		b = append(b, c.Name...)
		b = wire.AppendU(b, uint64(c.Reserve))
		b = wire.AppendU(b, uint64(c.Ceiling))
		b = wire.AppendI(b, int64(c.Lend))
	}
	for c := range k.cs {
		bk := &k.books[c]
		b = wire.AppendU(b, uint64(k.lent[c]))
		b = wire.AppendU(b, uint64(k.making[c]))
		b = wire.AppendI(b, k.asked[c])
		b = wire.AppendB(b, k.seen[c])
		b = wire.AppendU(b, bk.Taken)
		b = wire.AppendU(b, bk.Waited)
		b = wire.AppendU(b, bk.HeldBack)
	}
	for i := range p.z.s {
		if p.z.s[i].st() == lent {
			b = wire.AppendU(b, uint64(k.of[i]))
		}
	}
	return b
}

// classState is the classes part of a state, read.
type classState struct {
	cs     []Class
	lent   []int
	making []int
	asked  []int64
	seen   []bool
	books  [][3]uint64
	of     []int16 // by seat, for the lent ones
}

// read reads the classes part of a state whose seats are seats.
func (c *classState) read(r *wire.Reader, seats []seat[uint64]) {
	n := r.Count(4)
	if r.Err != nil || n == 0 {
		return
	}
	c.cs = make([]Class, n)
	for i := range c.cs {
		m := r.Count(1)
		if r.Err != nil {
			return
		}
		c.cs[i].Name = string(r.B[r.Off : r.Off+m])
		r.Off += m
		c.cs[i].Reserve, c.cs[i].Ceiling, c.cs[i].Lend = r.N(), r.N(), time.Duration(r.I())
	}
	all := n + 1
	c.lent, c.making, c.asked = make([]int, all), make([]int, all), make([]int64, all)
	c.seen, c.books = make([]bool, all), make([][3]uint64, all)
	for i := range all {
		c.lent[i], c.making[i], c.asked[i], c.seen[i] = r.N(), r.N(), r.I(), r.Flag()
		c.books[i] = [3]uint64{r.U(), r.U(), r.U()}
	}
	c.of = make([]int16, len(seats))
	for i := range seats {
		if seats[i].st() == lent {
			v := r.N()
			if v >= all {
				r.Fail("seat %d lent to class %d, of %d", i, v, all)
				return
			}
			c.of[i] = int16(v)
		}
	}
}

// restore gives p, read from a state, the classes c read: it fails when
// they are not classes p could hold (ValidateClasses), or when their books
// do not add up to the pool's.
func (c *classState) restore(p *Pool[uint64]) error {
	if c.cs == nil {
		return nil
	}
	if err := ValidateClasses(c.cs, p.limits.Size); err != nil {
		return err
	}
	if len(c.cs) >= 1<<15-1 {
		return fmt.Errorf("%d classes", len(c.cs))
	}
	k := newClasses(c.cs)
	nlent, mk := 0, 0
	counts := make([]int, len(k.cs))
	for i := range p.z.s {
		if p.z.s[i].st() == lent {
			counts[c.of[i]]++
		}
	}
	for i := range k.cs {
		if counts[i] != c.lent[i] {
			return fmt.Errorf("class %d holds %d lent seats, its books say %d", i, counts[i], c.lent[i])
		}
		k.lent[i], k.making[i], k.asked[i], k.seen[i] = c.lent[i], c.making[i], c.asked[i], c.seen[i]
		k.books[i].Taken, k.books[i].Waited, k.books[i].HeldBack = c.books[i][0], c.books[i][1], c.books[i][2]
		nlent += c.lent[i]
		mk += c.making[i]
	}
	if mk != p.making || nlent != p.z.lent {
		return fmt.Errorf("the classes hold %d lent and %d making, the pool %d and %d", nlent, mk, p.z.lent, p.making)
	}
	k.of = c.of
	p.cls = k
	return nil
}
