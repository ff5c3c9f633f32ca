package trace

import (
	"fmt"
	"slices"
)

// This file holds a small model of SQLAlchemy's QueuePool as the references'
// runner configures it (README.md, "How each pool is driven"), so that the
// part of a lifetime trace after deliberate difference 3 is still checked
// against something: not wardpool, whose books part from SQLAlchemy's there
// on purpose, but SQLAlchemy's own rule, written down. The model is held to
// every SQLAlchemy recording, compared or not, so a rule that drifted from
// what QueuePool does fails the tests rather than passing quietly.
//
// The rule, from SQLAlchemy 1.4's sqlalchemy/pool/impl.py (QueuePool) and
// sqlalchemy/pool/base.py (_ConnectionRecord):
//
//   - The pool holds records; each holds one connection or, after
//     invalidate(), none. Checked-in records form a stack (use_lifo).
//   - A checkout pops the top record. A record with no connection opens a
//     new one. A record whose connection is past pool_recycle (now minus the
//     connection's birth strictly over the age) closes it and opens a new one
//     in the same record. With nothing checked in, a new record and
//     connection are made while fewer than pool_size records exist;
//     otherwise the checkout is refused (max_overflow 0, timeout 0).
//   - A check-in (close() on the checked-out connection) pushes its record
//     on the stack and closes nothing (reset_on_return None).
//   - invalidate() closes the connection and checks its record in, empty.
//   - Live counts open connections; idle counts live minus checked out.

// sqlRecord is one _ConnectionRecord: its connection (a creation index, 0
// for none) and that connection's birth.
type sqlRecord struct {
	conn int
	born int64
}

// SQLAlchemyRule returns what the model of QueuePool above answers to t, as
// a recording (with no ran line), or an error for a step QueuePool cannot
// express (an evict, an idle age) or a seat in the wrong state.
func SQLAlchemyRule(t Trace) (Recording, error) {
	if t.Policy.Age == IdleAge {
		return Recording{}, fmt.Errorf("trace %s: QueuePool has no idle age", t.Name)
	}
	rec := Recording{Name: t.Name, Policy: t.Policy}
	var idle []sqlRecord // the checked-in stack, top last
	seats := map[int]*sqlRecord{}
	records, made, open := 0, 0, 0
	connect := func(r *sqlRecord, at int64) {
		made++
		open++
		r.conn, r.born = made, at
	}
	for _, s := range t.Steps {
		e := Entry{Step: s}
		switch s.Verb {
		case Take:
			if seats[s.Seat] != nil {
				return Recording{}, fmt.Errorf("trace %s: %s: the seat holds one already", t.Name, s)
			}
			var r sqlRecord
			switch {
			case len(idle) > 0:
				r = idle[len(idle)-1]
				idle = idle[:len(idle)-1]
				switch {
				case r.conn == 0:
					connect(&r, s.At)
				case t.Policy.Age == LifeAge && s.At-r.born > t.Policy.AgeMS:
					e.Closed = append(e.Closed, r.conn)
					open--
					connect(&r, s.At)
				}
			case records < t.Policy.Size:
				records++
				connect(&r, s.At)
			default:
				e.Refused = true
			}
			if !e.Refused {
				e.Got = r.conn
				seats[s.Seat] = &r
			}
		case Give, Drop:
			r := seats[s.Seat]
			if r == nil {
				return Recording{}, fmt.Errorf("trace %s: %s: the seat holds nothing", t.Name, s)
			}
			delete(seats, s.Seat)
			if s.Verb == Drop {
				e.Closed = append(e.Closed, r.conn)
				open--
				r.conn = 0
			}
			idle = append(idle, *r)
		default:
			return Recording{}, fmt.Errorf("trace %s: %s: QueuePool has no evictor", t.Name, s)
		}
		slices.Sort(e.Closed)
		e.Live = open
		e.Idle = open - len(seats)
		rec.Entries = append(rec.Entries, e)
	}
	return rec, nil
}

// FirstInPlaceRecycle returns the index of the first entry of rec, a
// SQLAlchemy recording of a lifetime trace, where a take closes a resource
// while two or more were idle after the step before: where deliberate
// difference 3 begins. It returns -1 when there is none.
func FirstInPlaceRecycle(rec Recording) int {
	if rec.Policy.Age != LifeAge {
		return -1
	}
	idle := 0
	for i, e := range rec.Entries {
		if e.Step.Verb == Take && len(e.Closed) > 0 && idle >= 2 {
			return i
		}
		idle = e.Idle
	}
	return -1
}

// CheckDifference3 says how entry k of theirs (SQLAlchemy's recording) and
// of ours (wardpool's) fail to be exactly deliberate difference 3, or ""
// when they are it. The entries before k must already agree. Then at k:
//
//   - SQLAlchemy closed one resource, and it is the one both pools had on
//     top of their idle stacks;
//   - SQLAlchemy handed out a new one (the next creation index), made in
//     the record it popped, so it counts one fewer idle and as many live as
//     before the step;
//   - wardpool closed that same resource (and perhaps more stale ones that
//     surfaced after it) and handed out something else: an idle one below,
//     or a new one.
//
// The top of the stack is read from the entries before k: the resource
// most recently given back and not taken since.
func CheckDifference3(theirs, ours Recording, k int) string {
	if k <= 0 || k >= len(theirs.Entries) || k >= len(ours.Entries) {
		return fmt.Sprintf("trace %s: no step %d to check", theirs.Name, k+1)
	}
	t, o, before := theirs.Entries[k], ours.Entries[k], theirs.Entries[k-1]
	top, made := topIdle(theirs.Entries[:k])
	where := fmt.Sprintf("trace %s step %d (%s)", theirs.Name, k+1, t.Step)
	switch {
	case t.Step.Verb != Take || t.Step != o.Step:
		return where + ": not the same take in both recordings"
	case top == 0:
		return where + ": nothing idle on top before the step"
	case len(t.Closed) != 1 || t.Closed[0] != top:
		return fmt.Sprintf("%s: SQLAlchemy closed %v, want exactly the top idle %d", where, t.Closed, top)
	case t.Got != made+1:
		return fmt.Sprintf("%s: SQLAlchemy handed out %d, want a new one (%d)", where, t.Got, made+1)
	case t.Idle != before.Idle-1 || t.Live != before.Live:
		return fmt.Sprintf("%s: SQLAlchemy counts idle %d live %d, want idle %d live %d (the record lent, the connection replaced)",
			where, t.Idle, t.Live, before.Idle-1, before.Live)
	case !slices.Contains(o.Closed, top):
		return fmt.Sprintf("%s: wardpool closed %v, want %d among them", where, o.Closed, top)
	case o.Got == 0 || o.Got == t.Got && o.String() == t.String():
		return where + ": wardpool answered as SQLAlchemy: no difference here"
	}
	return ""
}

// topIdle replays a recording's entries to find the resource on top of the
// idle stack after them (0 when none) and the highest creation index seen.
func topIdle(entries []Entry) (top, made int) {
	var stack []int
	seats := map[int]int{}
	for _, e := range entries {
		for _, c := range e.Closed {
			if i := slices.Index(stack, c); i >= 0 {
				stack = slices.Delete(stack, i, i+1)
			}
			made = max(made, c)
		}
		switch e.Step.Verb {
		case Take:
			if e.Got > 0 {
				if i := slices.Index(stack, e.Got); i >= 0 {
					stack = slices.Delete(stack, i, i+1)
				}
				seats[e.Step.Seat] = e.Got
				made = max(made, e.Got)
			}
		case Give:
			if r, ok := seats[e.Step.Seat]; ok && !slices.Contains(e.Closed, r) {
				stack = append(stack, r)
			}
			delete(seats, e.Step.Seat)
		case Drop:
			delete(seats, e.Step.Seat)
		}
	}
	if len(stack) == 0 {
		return 0, made
	}
	return stack[len(stack)-1], made
}
