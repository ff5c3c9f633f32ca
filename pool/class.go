package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// This file is classes of callers: room reserved for some callers, and a
// ceiling on others, within one pool (see Class).

// Class is a class of callers of a pool, such as "interactive" or "batch":
// room reserved for it, and a ceiling on what it may hold. A class holds
// what is lent to its callers and what is being made for them.
//
// The rule. A class's unused reserve (Reserve less what it holds) is kept
// for it while the class is present: it holds something, or it asked
// (TakeAs, or a waiter of it at the front of its queue, see Serve) within
// the last Lend. Another class is answered Wait (ward.GuardClass) when
// taking one more, idle or made, would leave less room under Size than the
// unused reserves of the present classes other than its own. A class
// absent for Lend lends its reserve to the others: they may use the whole
// pool. When it asks again, its reserve is kept for it from then on, and
// Serve hands it the next resource that frees ahead of older waiters of
// other classes: the reserve comes back to its own class first.
//
// A class at its Ceiling is answered Wait (ward.GuardClass) whatever is
// free.
type Class struct {
	// Name names the class in books, errors and metrics: unique in a
	// pool, not empty.
	Name string
	// Reserve is how many resources are kept for the class while it is
	// present; zero for none. The reserves of a pool add up to Size at
	// most. Without a Size (no limit) a reserve holds nothing back.
	Reserve int
	// Ceiling is the most resources the class may hold at once; zero
	// means Size (no ceiling of its own).
	Ceiling int
	// Lend is how long after its last ask the class's unused reserve is
	// kept for it, when it holds nothing: zero means one second; negative,
	// the reserve is never lent.
	Lend time.Duration
}

// DefaultLend is the Lend of a Class whose Lend is zero.
const DefaultLend = time.Second

// ErrClasses is wrapped by the error SetClasses returns for classes it
// refuses.
var ErrClasses = errors.New("wardpool: invalid classes")

// ValidateClasses checks cs for a pool of size (0: no limit): names unique
// and not empty, Reserve and Ceiling not negative, Reserve not above a
// Ceiling that is set, nor above size, and the reserves adding up to size
// at most. The error wraps ErrClasses and names the class.
func ValidateClasses(cs []Class, size int) error {
	seen := make(map[string]bool, len(cs))
	sum := 0
	for i, c := range cs {
		switch {
		case c.Name == "":
			return fmt.Errorf("%w: class %d has no name", ErrClasses, i)
		case seen[c.Name]:
			return fmt.Errorf("%w: class %q is named twice", ErrClasses, c.Name)
		case c.Reserve < 0:
			return fmt.Errorf("%w: class %q: Reserve is %d, want 0 or more", ErrClasses, c.Name, c.Reserve)
		case c.Ceiling < 0:
			return fmt.Errorf("%w: class %q: Ceiling is %d, want 0 (Size) or more", ErrClasses, c.Name, c.Ceiling)
		case c.Ceiling > 0 && c.Reserve > c.Ceiling:
			return fmt.Errorf("%w: class %q: Reserve %d is above its Ceiling %d", ErrClasses, c.Name, c.Reserve, c.Ceiling)
		case size > 0 && c.Reserve > size:
			return fmt.Errorf("%w: class %q: Reserve %d is above Size %d", ErrClasses, c.Name, c.Reserve, size)
		}
		seen[c.Name] = true
		sum += c.Reserve
		if size > 0 && sum > size {
			return fmt.Errorf("%w: class %q: the reserves add up to %d, above Size %d", ErrClasses, c.Name, sum, size)
		}
	}
	return nil
}

// classes is a pool's classes and what each holds. Index n (the number of
// classes configured) is the default class: callers without a class (Take,
// Made, Unmade, Reserve), with no reserve and no ceiling.
type classes struct {
	cs     []Class // configured, then the default class
	lent   []int   // by class: resources lent to its callers
	making []int   // by class: makes in flight for its callers
	asked  []int64 // by class: the pool's instant of its last ask
	seen   []bool  // by class: it asked at least once
	books  []ClassBooks
	of     []int16 // by seat: the class of the seat's loan
}

// ClassBooks is one class's part of the books.
type ClassBooks struct {
	Name string // "" for the default class
	// Gauges: Held = Lent + Making.
	Held, Lent, Making int
	// Present reports whether the class's unused reserve is kept for it
	// now (see Class), at the pool's latest instant.
	Present bool
	// Counters: Taken counts the answers Ready and Make; Waited the Wait
	// answers, of them Held those of the class rule (ward.GuardClass).
	Taken, Waited, HeldBack uint64
}

// SetClasses gives the pool classes of callers (see Class); nil or empty
// removes them. Callers without a class (Take and the other calls without
// a class) belong to the default class, index len(cs), named "", with no
// reserve and no ceiling of its own. It fails, with an error wrapping
// ErrClasses, for classes ValidateClasses refuses against Limits.Size, and
// while anything is lent or being made (set classes on a fresh pool).
func (p *Pool[T]) SetClasses(cs []Class) error {
	if err := ValidateClasses(cs, p.limits.Size); err != nil {
		return err
	}
	if p.busy() > 0 {
		return fmt.Errorf("%w: %d resources are lent or being made: set classes on a pool with none", ErrClasses, p.busy())
	}
	if len(cs) == 0 {
		p.cls = nil
		return nil
	}
	if len(cs) >= 1<<15-1 {
		return fmt.Errorf("%w: %d classes, want fewer than %d", ErrClasses, len(cs), 1<<15-1)
	}
	p.cls = newClasses(cs)
	return nil
}

// newClasses is the classes cs, with nothing held.
func newClasses(cs []Class) *classes {
	n := len(cs) + 1
	k := &classes{
		cs:     append(append(make([]Class, 0, n), cs...), Class{}),
		lent:   make([]int, n),
		making: make([]int, n),
		asked:  make([]int64, n),
		seen:   make([]bool, n),
		books:  make([]ClassBooks, n),
	}
	for i := range k.cs {
		k.books[i].Name = k.cs[i].Name
	}
	return k
}

// Classes returns the pool's classes as set (without the default class);
// nil when none are.
func (p *Pool[T]) Classes() []Class {
	if p.cls == nil {
		return nil
	}
	return append([]Class(nil), p.cls.cs[:len(p.cls.cs)-1]...)
}

// class is c as an index: the default class for an index outside the
// classes configured (a negative one included).
func (k *classes) class(c int) int {
	if c < 0 || c >= len(k.cs)-1 {
		return len(k.cs) - 1
	}
	return c
}

func (k *classes) held(c int) int { return k.lent[c] + k.making[c] }

// present reports whether class c's unused reserve is kept for it at t.
func (k *classes) present(c int, t int64) bool {
	if k.held(c) > 0 {
		return true
	}
	lend := k.cs[c].Lend
	switch {
	case lend < 0:
		return true
	case lend == 0:
		lend = DefaultLend
	}
	return k.seen[c] && t-k.asked[c] < int64(lend)
}

// ask notes that class c asked at t.
func (k *classes) ask(c int, t int64) {
	k.asked[c], k.seen[c] = t, true
}

// gate reports whether class c may take one more resource at t from a pool
// with limits l and busy lent or being made: not at its ceiling, and the
// room left after it at least the unused reserves of the other present
// classes. When it may not and a reserve held only by a recent ask stands
// in the way, delay is how long until the first such reserve is lent.
func (k *classes) gate(c int, t int64, size, busy int) (ok bool, delay time.Duration) {
	held := k.held(c)
	ceil := k.cs[c].Ceiling
	if ceil > 0 && held >= ceil {
		return false, 0
	}
	if size <= 0 || busy >= size {
		return true, 0 // no size, or full: the pool answers for itself
	}
	need := 0
	soonest := int64(-1)
	for j := range k.cs {
		if j == c {
			continue
		}
		unused := k.cs[j].Reserve - k.held(j)
		if unused <= 0 || !k.present(j, t) {
			continue
		}
		need += unused
		if k.held(j) == 0 && k.cs[j].Lend >= 0 {
			lend := k.cs[j].Lend
			if lend == 0 {
				lend = DefaultLend
			}
			if until := k.asked[j] + int64(lend) - t; soonest < 0 || until < soonest {
				soonest = until
			}
		}
	}
	if size-busy-1 >= need {
		return true, 0
	}
	return false, time.Duration(max(soonest, 0))
}

// TakeAs is Take for a caller of class c (an index into the classes set
// with SetClasses; one outside them is the default class). Before the pool
// answers as Take would, the class rule may answer Wait with
// ward.GuardClass: c is at its ceiling, or one more for c would eat into
// another present class's reserve (see Class); Delay is then, when it is
// positive, how long until a reserve kept by a recent ask alone is lent
// (the runtime asks again then). A pool without classes answers as Take.
func (p *Pool[T]) TakeAs(now time.Time, roll float64, cpu int, c int) Taken[T] {
	if p.cls == nil {
		return p.Take(now, roll, cpu)
	}
	return p.takeAs(now, roll, cpu, c)
}

func (p *Pool[T]) takeAs(now time.Time, roll float64, cpu int, c int) Taken[T] {
	k := p.cls
	if p.closed {
		return Taken[T]{Kind: Closed}
	}
	c = k.class(c)
	t := p.clock(now)
	k.ask(c, t)
	if ok, delay := k.gate(c, t, p.limits.Size, p.busy()); !ok {
		p.books.Waited++
		k.books[c].Waited++
		k.books[c].HeldBack++
		return Taken[T]{Kind: Wait, Guard: ward.GuardClass, Delay: delay}
	}
	tk := p.take(now, roll, cpu)
	switch tk.Kind {
	case Ready:
		k.lendSeat(tk.Seat, c)
		k.books[c].Taken++
	case Make:
		k.making[c]++
		k.books[c].Taken++
	case Wait:
		k.books[c].Waited++
	}
	return tk
}

// lendSeat records seat i as lent to class c.
func (k *classes) lendSeat(i int32, c int) {
	for int(i) >= len(k.of) {
		k.of = append(k.of, 0)
	}
	k.of[i] = int16(c)
	k.lent[c]++
}

// settle settles a make reservation of class c (or of any class making,
// when c is making none: the books stay whole whatever the caller says).
func (k *classes) settle(c int) {
	if k.making[c] > 0 {
		k.making[c]--
		return
	}
	for j := len(k.making) - 1; j >= 0; j-- {
		if k.making[j] > 0 {
			k.making[j]--
			return
		}
	}
}

// MadeAs is Made for a reservation Take or TakeAs opened for class c: the
// resource made is lent to that class. Made is MadeAs for the default
// class.
func (p *Pool[T]) MadeAs(item T, gen uint32, c int, now time.Time, extra time.Duration) bool {
	k := p.cls
	if k == nil {
		return p.Made(item, gen, now, extra)
	}
	c = k.class(c)
	reserved := p.making > 0
	_, had := p.z.find(item)
	ok := p.made(item, gen, now, extra)
	if reserved {
		k.settle(c)
	}
	if !had {
		if i, held := p.z.find(item); held && p.z.s[i].st() == lent {
			k.lendSeat(i, c)
		}
	}
	return ok
}

// UnmadeAs is Unmade for a reservation Take or TakeAs opened for class c.
// Unmade is UnmadeAs for the default class.
func (p *Pool[T]) UnmadeAs(now time.Time, roll float64, by ward.Guard, c int) bool {
	k := p.cls
	if k == nil {
		return p.Unmade(now, roll, by)
	}
	if p.making > 0 {
		k.settle(k.class(c))
	}
	return p.unmade(now, roll, by)
}

// classBack is the class part of Give and Drop of item: a loan that ends
// leaves its class's books; a Give of an unknown item that fills an open
// reservation settles it.
func (p *Pool[T]) classBack(item T, give bool) {
	k := p.cls
	i, held := p.z.find(item)
	switch {
	case held && p.z.s[i].st() == lent:
		k.lent[k.of[i]]--
	case !held && give && p.making > 0 && !p.closed:
		k.settle(len(k.cs) - 1)
	}
}

// Front is the waiter at the front of one class's queue, for Serve.
type Front struct {
	Class int       // its class's index
	Since time.Time // when it began to wait: the oldest is served first
}

// Serve says which of fronts, the waiters at the front of each class's
// queue, a runtime asks for next (with TakeAs) when something may have
// come free: the oldest of those whose class is below its reserve and may
// take, otherwise the oldest whose class may take (see Class; each front
// counts as an ask of its class now). It answers the index into fronts, or
// -1 when the class rule holds every front back, with, when positive, how
// long until a reserve kept by a recent ask alone is lent, when the
// runtime asks again. On a full pool the rule holds nobody back: the
// front chosen is answered Wait by TakeAs, and waits for the next return.
// Without classes it answers the oldest.
func (p *Pool[T]) Serve(now time.Time, fronts []Front) (int, time.Duration) {
	best := -1
	if p.cls == nil || p.closed {
		for i, f := range fronts {
			if best < 0 || f.Since.Before(fronts[best].Since) {
				best = i
			}
		}
		return best, 0
	}
	k := p.cls
	t := p.clock(now)
	for _, f := range fronts {
		k.ask(k.class(f.Class), t)
	}
	under := false
	var delay time.Duration
	for i, f := range fronts {
		c := k.class(f.Class)
		ok, d := k.gate(c, t, p.limits.Size, p.busy())
		if !ok {
			if d > 0 && (delay == 0 || d < delay) {
				delay = d
			}
			continue
		}
		u := k.held(c) < k.cs[c].Reserve
		if best < 0 || u && !under || u == under && f.Since.Before(fronts[best].Since) {
			best, under = i, u
		}
	}
	if best >= 0 {
		return best, 0
	}
	return -1, delay
}

// ClassBooks returns each class's books, the default class last; nil
// without classes. Their Held add up to Books().Busy.
func (p *Pool[T]) ClassBooks() []ClassBooks {
	k := p.cls
	if k == nil {
		return nil
	}
	out := append([]ClassBooks(nil), k.books...)
	for c := range out {
		out[c].Lent, out[c].Making = k.lent[c], k.making[c]
		out[c].Held = k.held(c)
		out[c].Present = k.present(c, p.last)
	}
	return out
}
