package wardpool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// This file is the runtime's part of classes of callers (Config.Classes,
// pool.Class): a caller's class in its context, one queue per class, and
// serving the queues in the order the Pool says (pool.Pool.Serve).

// classKey is the context key of a caller's class.
type classKey struct{}

// WithClass returns a copy of ctx that carries the class name: a Keeper
// with Config.Classes serves an Acquire or TryAcquire with that context as
// a caller of that class, so every driver method that takes a context
// carries it. Without the key (or with name ""), the caller belongs to the
// default class, with no reserve and no ceiling of its own. A Keeper
// without classes ignores it.
func WithClass(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, classKey{}, name)
}

// ClassOf returns the class name ctx carries (see WithClass), and "" when
// none.
func ClassOf(ctx context.Context) string {
	name, _ := ctx.Value(classKey{}).(string)
	return name
}

// ErrUnknownClass is wrapped by the *ClassError of an acquire whose context
// names a class the Keeper was not given.
var ErrUnknownClass = errors.New("wardpool: unknown class")

// ClassError is the error of an acquire whose context names a class that
// is not one of Config.Classes. It is returned at once; nothing is
// counted but the call.
type ClassError struct {
	// Pool is the name of the pool (Config.Name).
	Pool string
	// Class is the name the context carried.
	Class string
	// Known are the names of the classes the pool has.
	Known []string
}

// Error names the class and the classes known.
func (e *ClassError) Error() string {
	return fmt.Sprintf("%swardpool: unknown class %q (the pool's classes are %q)", prefix(e.Pool), e.Class, e.Known)
}

// Unwrap returns ErrUnknownClass.
func (e *ClassError) Unwrap() error { return ErrUnknownClass }

// PoolName returns the name of the pool that refused.
func (e *ClassError) PoolName() string { return e.Pool }

// classOf is the index of ctx's class: Config.Classes's index, len of it
// for the default class, or a *ClassError.
func (k *Keeper[T]) classOf(ctx context.Context) (int, error) {
	name, _ := ctx.Value(classKey{}).(string)
	if name == "" {
		return k.defClass, nil
	}
	if c, ok := k.classIx[name]; ok {
		return c, nil
	}
	return 0, &ClassError{Pool: k.name, Class: name, Known: k.classNames[:k.defClass]}
}

// className is the name of class c, "" for the default class.
func (k *Keeper[T]) className(c int) string {
	if c < 0 || c >= len(k.classNames) {
		return ""
	}
	return k.classNames[c]
}

// classErr names class c in err, an acquire's error, when it says what
// the pool was doing.
func (k *Keeper[T]) classErr(err error, c int) error {
	var ae *AcquireError
	var le *LateError
	switch {
	case errors.As(err, &ae):
		ae.Class = k.className(c)
	case errors.As(err, &le):
		le.Class = k.className(c)
	}
	return err
}

// pushClass queues w in its class's queue, at the back or at the front.
func (q *waiters[T]) pushClass(w *waiter[T], front bool) {
	if front {
		q.by[w.class].pushFront(w)
	} else {
		q.by[w.class].push(w)
	}
	q.live++
}

// oldest returns the waiter that has waited longest of the classes'
// fronts, or nil.
func (q *waiters[T]) oldest() *waiter[T] {
	var best *waiter[T]
	for c := range q.by {
		if w := q.by[c].peek(); w != nil && (best == nil || w.start.Before(best.start)) {
			best = w
		}
	}
	return best
}

// popClass takes w, the front of its class's queue, off; nil for nil.
func (q *waiters[T]) popClass(w *waiter[T]) *waiter[T] {
	if w == nil {
		return nil
	}
	q.by[w.class].pop()
	q.live--
	return w
}

// unqueue takes w, the front of its queue (its class's, with classes),
// off it.
func (q *waiters[T]) unqueue(w *waiter[T]) {
	if q.by != nil {
		q.popClass(w)
		return
	}
	q.pop()
}

// ahead is how many callers of class c are queued: all of them without
// classes.
func (q *waiters[T]) ahead(c int) int {
	if q.by == nil {
		return q.live
	}
	return q.by[c].live
}

// serveClassesLocked is serveLocked with classes: the Pool says which
// class's front waiter is asked for next (pool.Pool.Serve), and the
// Keeper carries it out until the pool has nothing more for any of them.
func (k *Keeper[T]) serveClassesLocked(now time.Time, fx *effects[T]) {
	for k.q.live > 0 {
		fronts := k.fronts[:0]
		gone := false
		for c := range k.q.by {
			w := k.q.by[c].peek()
			if w == nil {
				continue
			}
			if err := w.ctx.Err(); err != nil {
				k.q.popClass(w)
				k.stats.canceled++
				k.grantLocked(w, grant[T]{err: err})
				gone = true
				continue
			}
			fronts = append(fronts, pool.Front{Class: c, Since: w.start})
		}
		k.fronts = fronts
		if gone {
			continue // the fronts again, past the ones that left
		}
		if len(fronts) == 0 {
			return // every queue is empty: live counts none (never so)
		}
		i, delay := k.p.Serve(now, fronts)
		if i < 0 {
			if delay > 0 {
				k.alarm.retry = true
				k.armLocked(now, now.Add(delay))
			}
			return
		}
		if !k.serveFrontLocked(now, k.q.by[fronts[i].Class].peek(), fx) {
			return
		}
	}
}

// ClassStats is one class's part of Stats.
type ClassStats struct {
	pool.ClassBooks
	// Reserve and Ceiling are the class's, as configured.
	Reserve, Ceiling int
	// Waiting is how many of its callers are queued now.
	Waiting int
	// Acquires counts its callers' successful Acquire and TryAcquire
	// calls, and AcquireWait is the total time the acquires waited (as
	// Stats.Acquires and Stats.AcquireWait, for the class; AcquireAllIdle
	// counts in neither).
	Acquires    uint64
	AcquireWait time.Duration
}

// classStatsLocked is each class's part of the books, the default class
// last; nil without classes.
func (k *Keeper[T]) classStatsLocked() []ClassStats {
	if k.q.by == nil {
		return nil
	}
	books := k.p.ClassBooks()
	out := make([]ClassStats, len(books))
	for c, b := range books {
		out[c].ClassBooks = b
		if c < len(k.classes) {
			out[c].Reserve, out[c].Ceiling = k.classes[c].Reserve, k.classes[c].Ceiling
		}
		if c < len(k.q.by) {
			out[c].Waiting = k.q.by[c].live
		}
		if c < len(k.classTallies) {
			out[c].Acquires = k.classTallies[c].acquired.Load()
			out[c].AcquireWait = time.Duration(k.classTallies[c].waitNs.Load())
		}
	}
	return out
}

// acquireClassed is Acquire with classes: the caller's class is read from
// ctx, and an error that says what the pool was doing names it.
func (k *Keeper[T]) acquireClassed(ctx context.Context) (Loan[T], error) {
	c, err := k.classOf(ctx)
	if err != nil {
		return Loan[T]{}, err
	}
	start := k.now()
	var l Loan[T]
	if k.leakAfter > 0 || k.stallSites {
		l, err = k.acquireWatched(ctx, c)
	} else {
		l, err = k.acquire(ctx, nil, c)
	}
	if err != nil {
		return l, k.classErr(err, c)
	}
	k.classCounted(c, time.Duration(l.at-int64(start.Sub(k.epoch))))
	return l, nil
}

// classTally is what a class's callers count without the lock once an
// acquire is final, as tally is for all of them.
type classTally struct {
	acquired atomic.Uint64
	waitNs   atomic.Int64
}

// classCounted counts a successful acquire of class c that waited wait.
func (k *Keeper[T]) classCounted(c int, wait time.Duration) {
	t := &k.classTallies[c]
	t.acquired.Add(1)
	if wait > 0 {
		t.waitNs.Add(int64(wait))
	}
}

// setClasses readies the Keeper's part of classes cs on pool p, and its
// queues: one per class and one for the default class.
func (k *Keeper[T]) setClasses(cs []pool.Class) {
	if len(cs) == 0 {
		return
	}
	k.classes = append([]pool.Class(nil), cs...)
	k.classIx = make(map[string]int, len(cs))
	for i, c := range cs {
		k.classIx[c.Name] = i
		k.classNames = append(k.classNames, c.Name)
	}
	k.classNames = append(k.classNames, "")
	k.defClass = len(cs)
	k.q.by = make([]waiters[T], len(cs)+1)
	k.classTallies = make([]classTally, len(cs)+1)
}
