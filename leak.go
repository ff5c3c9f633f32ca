package wardpool

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// Leak is a report of the leak watch (Config.LeakAfter): a loan held longer
// than the threshold, or, with Returned, such a loan that has now come back.
type Leak[T comparable] struct {
	// Item is the resource lent.
	Item T
	// Held is how long the loan had been out when the report was made.
	Held time.Duration
	// Stack is the call stack of the Acquire that took the loan, formatted
	// one frame per two lines as runtime/debug.Stack does (function, then
	// file:line).
	Stack []byte
	// Returned reports that the loan has ended: this is the second report
	// of a loan already reported as held too long.
	Returned bool
}

// stack is a recorded call stack: program counters only, symbolised when a
// leak is reported. It is a value: an acquire records it on its own
// goroutine's stack, and the loan's entry (or the waiter) keeps a copy, so
// recording allocates nothing. What it costs is runtime.Callers' walk.
type stack struct {
	pcs [32]uintptr
	n   int
}

// capture records the calling goroutine's stack, skipping skip frames above
// capture's caller. The frames of wardpool itself left at the top are
// dropped when the stack is formatted (format).
//
//go:noinline
func (s *stack) capture(skip int) {
	s.n = runtime.Callers(skip+2, s.pcs[:])
}

// format writes pcs as text, one function and one file:line per frame. The
// frames of wardpool itself at the top (a driver's Acquire over the
// Keeper's) are left out, so the report starts at the code that took the
// loan; a stack that is all wardpool is kept whole.
func format(pcs []uintptr) []byte {
	var b bytes.Buffer
	frames := runtime.CallersFrames(pcs)
	var all []runtime.Frame
	for {
		f, more := frames.Next()
		if f.Function != "" || f.File != "" {
			all = append(all, f)
		}
		if !more {
			break
		}
	}
	from := 0
	for from < len(all) && ours(all[from]) {
		from++
	}
	if from == len(all) {
		from = 0
	}
	for _, f := range all[from:] {
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
	}
	return b.Bytes()
}

// ours reports whether f is a frame of wardpool's own code (not its tests
// or examples).
func ours(f runtime.Frame) bool {
	return strings.HasPrefix(f.Function, "github.com/wardpool/wardpool/") &&
		!strings.HasPrefix(f.Function, "github.com/wardpool/wardpool/examples/") &&
		!strings.HasSuffix(f.File, "_test.go")
}

// leakRec is what the leak watch keeps of a resource: the current loan's
// Acquire stack, and its watch word, which says whether a loan is out,
// since when, and whether it was reported. The lender writes the stack
// before it stores the word; the watch reads the stack only after claiming
// the report on the word. It is allocated with the resource's entry, and
// only when the watch is on.
type leakRec[T comparable] struct {
	stack stack
	watch atomic.Int64
	told  atomic.Uint32               // where the reports of its loans stand (toldNone…)
	ret   atomic.Pointer[leakNote[T]] // a return's report waiting for its leak's (toldReturned)
}

// leakNote is a leak report not yet made: the stack is still raw.
type leakNote[T comparable] struct {
	Leak[T]
	pcs []uintptr
	e   *entry[T] // whose loan it is
}

// The order of a loan's two reports. The watch claims a report under the
// lock and makes it after letting go; the loan's holder may end it outside
// the lock in between, and its return must not be reported first. An
// entry's told says where its reports stand:
const (
	toldNone     = iota // no report of the entry's in flight
	toldClaimed         // the watch claimed a report, not yet made
	toldMade            // made; the loan's return may be reported at once
	toldReturned        // the loan ended before the report was made: the return's note waits in entry.ret for the watch to make it next
)

// The watch word of an entry (leakRec.watch), with the leak watch on:
// zero, or watchOut with the low 16 bits of the loan's generation, the
// loan's start in microseconds since the Keeper's base (modulo 2^45), and
// watchReported once the watch has reported the loan. DESIGN.md ("The leak
// watch") says how a report and a loan's end never cross.
const (
	watchOut      = 1 << 62
	watchReported = 1 << 61
	watchGenShift = 45
	watchGenMask  = 1<<16 - 1
	watchUsMask   = 1<<watchGenShift - 1
)

// lentWatch starts the watch of a loan of e, of generation gen, that began
// at t (ns); the loan's stack is in the record already.
func (e *entry[T]) lentWatch(t int64, gen uint32) {
	e.lw.watch.Store(watchOut | int64(gen&watchGenMask)<<watchGenShift | max(t, 0)/1000&watchUsMask)
}

// watching reports whether w is the word of e's current loan.
func (e *entry[T]) watching(w int64) bool {
	return w&watchOut != 0 && uint32(w>>watchGenShift)&watchGenMask == e.loan.Load()&watchGenMask
}

// watchHeld is how long the loan of word w has been out at t (ns), to the
// microsecond.
func watchHeld(w, t int64) time.Duration {
	return time.Duration((max(t, 0)/1000-w)&watchUsMask) * time.Microsecond
}

// endWatch ends the watch of e's loan, which the caller has just ended, and
// reports back a note of its return when the watch had reported it; with
// the watch off it does nothing.
func (k *Keeper[T]) endWatch(e *entry[T], item T) (leakNote[T], bool) {
	if e.lw == nil {
		return leakNote[T]{}, false
	}
	w := e.lw.watch.Swap(0)
	if w&watchReported == 0 {
		return leakNote[T]{}, false
	}
	return k.leakNote(e, item, w, k.clock.Now(), true), true
}

// leakNote builds a report of the loan of item in e whose watch word is w.
// The caller owns the stack record: it ended the loan, or claimed the
// report. The stack is copied (the record is reused by the next loan) and
// formatted by report, outside the lock.
func (k *Keeper[T]) leakNote(e *entry[T], item T, w int64, now time.Time, returned bool) leakNote[T] {
	n := leakNote[T]{Leak: Leak[T]{Item: item, Held: watchHeld(w, k.ns(now)), Returned: returned}, e: e}
	if e.lw.stack.n > 0 {
		n.pcs = append([]uintptr(nil), e.lw.stack.pcs[:e.lw.stack.n]...)
	}
	return n
}

// leakedLocked counts the loans out now for LeakAfter or longer.
func (k *Keeper[T]) leakedLocked(now time.Time) int {
	t, n := k.ns(now), 0
	for _, l := range k.p.Loans(now) {
		e := k.ents[k.p.SeatOf(l.Item)]
		if w := e.lw.watch.Load(); e.watching(w) && watchHeld(w, t) >= k.leakAfter {
			n++
		}
	}
	return n
}

// watchLocked reports every loan held past LeakAfter and not yet reported,
// and sets the timer for the next loan that will be.
func (k *Keeper[T]) watchLocked(now time.Time, fx *effects[T]) {
	limit := int64(k.leakAfter)
	t := k.ns(now)
	next, found := int64(0), false
	// The pool's loans include the lane's, which it has not heard of; the
	// resources that were parked or in the inbox lock gave it before this.
	for _, l := range k.p.Loans(now) {
		e := k.ents[k.p.SeatOf(l.Item)]
		w := e.lw.watch.Load()
		if !e.watching(w) {
			// Lent by the lane an instant ago, its word not yet stored, or
			// on its way back: look again when a loan begun now would be
			// due.
			if at := t + limit; !found || at < next {
				next, found = at, true
			}
			continue
		}
		if w&watchReported != 0 {
			continue
		}
		held := int64(watchHeld(w, t))
		if held >= limit {
			if !e.lw.told.CompareAndSwap(toldNone, toldClaimed) {
				// The reports of the resource's last loan are still
				// being made: look again a little later.
				if at := t + min(limit, int64(time.Second)); !found || at < next {
					next, found = at, true
				}
				continue
			}
			if !e.lw.watch.CompareAndSwap(w, w|watchReported) {
				e.lw.told.Store(toldNone)
				continue // the loan ended this instant, outside the lock
			}
			k.stats.leaks++
			fx.leaks = append(fx.leaks, k.leakNote(e, l.Item, w, now, false))
			continue
		}
		if at := t + limit - held; !found || at < next {
			next, found = at, true
		}
	}
	if found {
		k.armLocked(now, k.base.Add(time.Duration(next)))
	}
}

// report makes the report n, a loan's leak or its return, keeping the order
// of the two (see toldClaimed). Never under the lock.
func (k *Keeper[T]) report(n leakNote[T]) {
	e := n.e
	if !n.Returned {
		k.tell(n)
		if !e.lw.told.CompareAndSwap(toldClaimed, toldMade) {
			// toldReturned: the loan came back while this was made.
			r := e.lw.ret.Swap(nil)
			k.tell(*r)
			e.lw.told.Store(toldNone)
		}
		return
	}
	for {
		switch e.lw.told.Load() {
		case toldMade:
			k.tell(n)
			e.lw.told.Store(toldNone)
			return
		case toldClaimed:
			e.lw.ret.Store(&n)
			if e.lw.told.CompareAndSwap(toldClaimed, toldReturned) {
				return // the watch makes it, after the leak's
			}
			e.lw.ret.Store(nil) // made meanwhile: make it here
		default:
			panic("wardpool: a return reported with no leak report in flight: a bug in the leak watch")
		}
	}
}

// tell formats n's stack and hands it to OnLeak, or logs it.
func (k *Keeper[T]) tell(n leakNote[T]) {
	l := n.Leak
	if n.pcs != nil {
		l.Stack = format(n.pcs)
	}
	if k.onLeak != nil {
		k.onLeak(l)
		return
	}
	if l.Returned {
		k.log.Warn("wardpool: a loan reported as held too long came back",
			"held", l.Held, "stack", string(l.Stack))
		return
	}
	k.log.Warn("wardpool: a loan is held longer than LeakAfter",
		"held", l.Held, "leak_after", k.leakAfter, "stack", string(l.Stack))
}
