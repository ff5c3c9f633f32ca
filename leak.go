package wardpool

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
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

// leakRec is what the leak watch keeps of a resource, guarded by
// Keeper.mu: the current loan's Acquire stack and start, whether the watch
// reported it, and where the reports of its loans stand. It is allocated
// with the resource's entry, and only when the watch is on.
type leakRec[T comparable] struct {
	stack    stack
	at       time.Time    // when the current loan began
	reported bool         // the watch reported the current loan
	told     uint8        // toldNone, toldClaimed or toldMade
	ret      *leakNote[T] // a return's report waiting for its leak's (toldClaimed)
}

// leakNote is a leak report not yet made: the stack is still raw.
type leakNote[T comparable] struct {
	Leak[T]
	pcs []uintptr
	e   *entry[T] // whose loan it is
}

// The order of a loan's two reports. The watch claims a report under the
// lock and makes it after letting go; the loan's holder may end it in
// between, and its return must not be reported first. A record's told
// says where its reports stand:
const (
	toldNone    = iota // no report of the record's in flight
	toldClaimed        // the watch claimed a report, not yet made: a return's report waits in ret
	toldMade           // made; the loan's return may be reported at once
)

// lent starts the watch of a loan begun at now by the caller whose stack is
// st (nil: none recorded).
func (r *leakRec[T]) lent(st *stack, now time.Time) {
	r.stack.n = 0
	if st != nil {
		r.stack.n = copy(r.stack.pcs[:], st.pcs[:st.n])
	}
	r.at, r.reported = now, false
}

// endWatchLocked ends the watch of e's loan, which has just ended at now,
// and returns a note of its return to report after unlocking, when the
// watch had reported the loan and that report is made; when the report is
// still being made, the note waits for it (see report).
func (k *Keeper[T]) endWatchLocked(e *entry[T], item T, now time.Time) (leakNote[T], bool) {
	r := e.lw
	if r == nil || !r.reported {
		return leakNote[T]{}, false
	}
	r.reported = false
	n := k.leakNote(e, item, now, true)
	if r.told == toldClaimed {
		r.ret = &n
		return leakNote[T]{}, false
	}
	r.told = toldNone
	return n, true
}

// leakNote builds a report of the current loan of item in e at now. The
// stack is copied (the record is reused by the next loan) and formatted by
// report, outside the lock.
func (k *Keeper[T]) leakNote(e *entry[T], item T, now time.Time, returned bool) leakNote[T] {
	n := leakNote[T]{Leak: Leak[T]{Item: item, Held: now.Sub(e.lw.at), Returned: returned}, e: e}
	if e.lw.stack.n > 0 {
		n.pcs = append([]uintptr(nil), e.lw.stack.pcs[:e.lw.stack.n]...)
	}
	return n
}

// leakedLocked counts the loans out now for LeakAfter or longer.
func (k *Keeper[T]) leakedLocked(now time.Time) int {
	n := 0
	for _, l := range k.p.Loans(now) {
		if l.Held >= k.leakAfter {
			n++
		}
	}
	return n
}

// watchLocked reports every loan held past LeakAfter and not yet reported,
// and sets the timer for the next loan that will be. How long each loan has
// been out is the Pool's answer (Pool.Loans).
func (k *Keeper[T]) watchLocked(now time.Time, fx *effects[T]) {
	next, found := time.Time{}, false
	due := func(at time.Time) {
		if !found || at.Before(next) {
			next, found = at, true
		}
	}
	for _, l := range k.p.Loans(now) {
		e := k.ents[k.p.SeatOf(l.Item)]
		r := e.lw
		switch {
		case r.reported:
		case l.Held < k.leakAfter:
			due(now.Add(k.leakAfter - l.Held))
		case r.told != toldNone:
			// The reports of the resource's last loan are still being
			// made: look again a little later.
			due(now.Add(min(k.leakAfter, time.Second)))
		default:
			r.reported, r.told = true, toldClaimed
			k.stats.leaks++
			fx.leaks = append(fx.leaks, k.leakNote(e, l.Item, now, false))
		}
	}
	if found {
		k.armLocked(now, next)
	}
}

// report makes the report n, a loan's leak or its return, keeping the order
// of the two (see toldClaimed). Never under the lock.
func (k *Keeper[T]) report(n leakNote[T]) {
	if n.Returned {
		k.tell(n)
		return
	}
	k.tell(n)
	r := n.e.lw
	k.mu.Lock()
	ret := r.ret
	r.ret = nil
	if ret != nil {
		r.told = toldNone // the loan came back while this was made
	} else {
		r.told = toldMade
	}
	k.mu.Unlock()
	if ret != nil {
		k.tell(*ret)
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
