package pool

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
// recording allocates nothing. What it costs is the walk (capture): a few
// nanoseconds on amd64, where it follows frame pointers; elsewhere
// runtime.Callers, in the order of a microsecond for a deep stack.
type stack struct {
	pcs [32]uintptr
	n   int
}

// capture records the calling goroutine's stack, from its caller
// outwards. Where the frame-pointer walk exists (amd64) it records every
// frame, wardpool's own included, and format leaves those out: skipping a
// count of physical frames would drop a caller's frame whenever the
// compiler inlined one of ours into it. Elsewhere runtime.Callers skips
// skip frames above capture's caller (it counts inlined frames too), at
// forty times the cost.
//
//go:noinline
func (s *stack) capture(skip int) {
	if walkFrames {
		s.n = framePCs(s.pcs[:])
		return
	}
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

// leakNote is a leak report not yet made: the stack is still raw.
type leakNote[T comparable] struct {
	Leak[T]
	pcs []uintptr
}

// leakLocked builds a report of the loan in e. The stack is copied under the
// lock (the record is reused by the next loan) and formatted by report,
// outside it.
func (k *Keeper[T]) leakLocked(e *entry[T], item T, now time.Time, returned bool) leakNote[T] {
	n := leakNote[T]{Leak: Leak[T]{Item: item, Held: now.Sub(k.base) - time.Duration(e.at.Load()), Returned: returned}}
	if e.stack != nil && e.stack.n > 0 {
		n.pcs = append([]uintptr(nil), e.stack.pcs[:e.stack.n]...)
	}
	return n
}

// watchLocked reports every loan held past LeakAfter and not yet reported,
// and sets the timer for the next loan that will be.
func (k *Keeper[T]) watchLocked(now time.Time, fx *effects[T]) {
	limit := int64(k.leakAfter)
	t := k.ns(now)
	next, found := int64(0), false
	// The lane is shut with the leak watch on: the pool knows every loan.
	for _, l := range k.p.Loans(now) {
		e := k.ents[k.p.SeatOf(l.Item)]
		if e.reported {
			continue
		}
		at := e.at.Load()
		if t-at >= limit {
			e.reported = true
			k.stats.leaks++
			fx.leaks = append(fx.leaks, k.leakLocked(e, l.Item, now, false))
			continue
		}
		if at := at + limit; !found || at < next {
			next, found = at, true
		}
	}
	if found {
		k.armLocked(now, k.base.Add(time.Duration(next)))
	}
}

// report formats l's stack and hands it to OnLeak, or logs it.
func (k *Keeper[T]) report(n leakNote[T]) {
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
