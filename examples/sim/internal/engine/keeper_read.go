package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// kcaller is a caller being rebuilt: when it asked, and the row it will be.
type kcaller struct {
	asked  int64
	how    string // how it was (or is being) read
	dialAt int64  // when its dial began
	wake   int64  // told Later: when it asks again
	bg     bool   // a background dial (Reserve): no caller
	last   bool   // first seen right after a return at its instant
	served bool   // dialing, served by a return: its dial lands for nobody
}

// keeperReader rebuilds the callers of one recording.
type keeperReader struct {
	rows     []Row
	counts   KeeperCounts
	open     map[int32]int // seat → row of the loan out in it
	unseated []int         // rows of loans made whose seat is not yet known
	queue    []*kcaller    // callers queued by a recorded Wait, oldest first
	dialing  []*kcaller    // dials in flight, oldest first (served or not)
	sleepers []*kcaller    // callers told Later
	dials    []time.Duration
	seats    seatModel
}

// takeAnswer reads a Take's answer, as Step.Answer renders it ("Ready
// guard=… seat=3 idle=1ms"): the kind and, for Ready and Stale, the seat.
func takeAnswer(s string) (pool.Kind, int32, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, 0, false
	}
	var k pool.Kind
	for c := pool.Ready; c <= pool.Closed; c++ {
		if c.String() == f[0] {
			k = c
		}
	}
	if k == 0 {
		return 0, 0, false
	}
	if k != pool.Ready && k != pool.Stale {
		return k, 0, true
	}
	for _, x := range f[1:] {
		if v, ok := strings.CutPrefix(x, "seat="); ok {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return 0, 0, false
			}
			return k, int32(n), true
		}
	}
	return 0, 0, false
}

func (kr *keeperReader) read(steps []record.Step) error {
	var (
		room   bool  // the step before was a return: a Take now serves the queue
		roomAt int64 // at this instant
		stale  *kcaller
		staleQ bool  // the stale caller is the queue's head
		staleD bool  // the stale caller is dialing, asked for at a return
		retry  int64 = -1
		// timer is when the Keeper's timer serves its queue after a Wait
		// with a Delay (a hold after a failover, a full backend), as
		// waitLocked arms it (the earliest asked for); -1 when none is
		// armed. held says the queue waits for time to pass, not for a
		// return: its head was told Wait with a Delay. Then a Take the
		// pool answers otherwise than Wait is for the head (the Keeper
		// asks for the head whenever a caller arrives behind it), not a
		// sign that the callers queued gave up.
		timer int64 = -1
		held  bool
		// queued says a caller may be queued that the recording has not
		// shown: since a Wait, until a return that no Take follows at
		// once (the Keeper serves its queue at every return).
		queued bool
	)
	for i := 0; i < len(steps); i++ {
		s := steps[i]
		t := int64(s.At)
		line := int(min(s.Index, 1<<40)) + 1
		ret := false // a return, after which the Keeper serves its queue
		switch s.Op {
		case "Take":
			kind, seat, ok := takeAnswer(s.Answer())
			if !ok {
				return fmt.Errorf("%w: step %d: a Take answer %q that does not read", ErrKeeperLoad, s.Index, s.Answer())
			}
			var c *kcaller
			head := false    // c is the head of the queue
			dialing := false // c is dialing, asked for at a return
			serve := false
			if timer >= 0 && t > timer {
				timer = -1 // it went off with no Take: nobody was queued
			}
			fires := timer == t && len(kr.queue) > 0
			behind := held && len(kr.queue) > 0 && kind != pool.Wait && !fires && !(room && roomAt == t)
			serves := room && roomAt == t || retry >= 0 && t >= retry && len(kr.queue) > 0 || fires || behind
			if serves && len(kr.queue) == 0 && !queued {
				serves = false // nobody can be queued: a caller arriving at the instant of a return
			}
			// With nobody queued, the Keeper asks at a return for the
			// callers dialing, oldest first, while something is idle:
			// never a Make or a Wait then.
			idleAnswer := kind != pool.Make && kind != pool.Wait
			switch {
			case stale != nil && (!staleD || idleAnswer):
				c, head, serve, dialing = stale, staleQ, room, staleD
			case room && roomAt == t && len(kr.queue) == 0 && idleAnswer && kr.dialer() != nil:
				c, serve, dialing = kr.dialer(), true, true
			case serves:
				serve = true
				if behind {
					// A caller arrived (or woke from Later) behind the
					// queue, joined its back, and the Keeper asked for
					// the head.
					n := kr.wake(t)
					if n == nil {
						n = &kcaller{asked: t}
					}
					n.how = "queued"
					kr.queue = append(kr.queue, n)
				}
				if len(kr.queue) > 0 {
					c, head = kr.queue[0], true
				} else {
					c = &kcaller{asked: t, how: "atreturn", last: true}
				}
			default:
				// A new caller, or one waking from Later. A caller that
				// arrives behind others joins the queue, and the Keeper
				// asks for the head on its behalf: a Wait then is the
				// newcomer queued behind them. Any other answer says the
				// callers still queued here gave up (the one asked for
				// would have been the head).
				if kind != pool.Wait || len(kr.queue) == 0 {
					for _, q := range kr.queue {
						q.how = "gaveup"
						kr.fail(q, line)
					}
					kr.queue = kr.queue[:0]
				}
				c = kr.wake(t)
				if c == nil {
					c = &kcaller{asked: t, how: "lock", last: room && roomAt == t}
				}
			}
			stale, staleQ, staleD = nil, false, false
			retry = -1
			if fires {
				timer = -1
			}
			if d := waitDelay(kind, s.Answer()); d > 0 {
				held = true
				if timer < 0 || t+int64(d) < timer {
					timer = t + int64(d) // the Keeper's one timer, at the earliest
				}
			} else if serve || len(kr.queue) == 0 {
				held = false // the head is told otherwise: it waits for a return
			}
			if dialing {
				switch kind {
				case pool.Ready:
					c.served = true
					kr.seats.used(seat)
					kr.lend(c, seat, t, line)
				case pool.Stale:
					kr.seats.release(seat)
					stale, staleD = c, true
				}
				// A refusal leaves it dialing, and the Keeper asks no more.
				room = kind == pool.Ready || stale != nil && room
				roomAt = t
				continue
			}
			pop := func() {
				if head {
					kr.queue = kr.queue[1:]
				}
			}
			switch kind {
			case pool.Ready:
				pop()
				kr.seats.used(seat)
				kr.lend(c, seat, t, line)
			case pool.Stale:
				kr.seats.release(seat)
				stale, staleQ = c, head
			case pool.Make:
				pop()
				if c.how != "atreturn" {
					c.how = "dialed"
				}
				c.dialAt = t
				kr.dialing = append(kr.dialing, c)
			case pool.Wait, pool.Later:
				switch {
				case !serve:
					if kind == pool.Wait {
						c.how = "queued"
						kr.queue = append(kr.queue, c)
						queued = true
						break
					}
					c.wake = t + int64(laterDelay(s.Answer()))
					kr.sleepers = append(kr.sleepers, c)
				case !head:
					// The Keeper asked for a caller the recording has not
					// shown: one queued behind others, there by now at the
					// latest. It heads the queue from here.
					kr.queue = append(kr.queue, c)
				}
				if serve && kind == pool.Later {
					retry = t // the Keeper's timer serves the queue again
				}
			case pool.Shed, pool.Closed:
				pop()
				c.how = "failed"
				kr.fail(c, line)
			}
			// The Keeper goes on serving its queue while each Take lends.
			room = serve && (kind == pool.Ready || kind == pool.Make || kind == pool.Shed || kind == pool.Closed) || stale != nil && room
			roomAt = t
			continue
		case "Made":
			seat := int32(-1)
			if s.Answer() == "true" {
				seat = kr.seats.alloc()
			}
			handed := s.Answer() == "true" && i+1 < len(steps) && handedOn(steps[i+1], t, seat, kr.open)
			c := kr.landed(s.Answer() == "true" && !handed)
			if c != nil && !c.bg {
				kr.dials = append(kr.dials, time.Duration(t-c.dialAt))
			}
			waited := c != nil && !c.bg && !c.served // its caller still waited for it
			switch {
			case s.Answer() != "true": // closed while dialing
				if waited {
					c.how = "failed"
					kr.fail(c, line)
				}
			case handed:
				// The Keeper gave the new resource back at once: nobody
				// waited for it (a background dial, a caller served by a
				// return meanwhile, or one that gave up).
				if waited {
					c.how = "gaveup"
					kr.fail(c, line)
				}
				if steps[i+1].Answer() != "true" {
					kr.seats.release(seat)
				}
				i++
				ret = true
			default:
				if !waited {
					c = &kcaller{asked: t, how: "atreturn"}
				}
				kr.lend(c, seat, t, line)
			}
		case "Unmade":
			ret = true
			if len(kr.dialing) > 0 {
				c := kr.dialing[0]
				kr.dialing = kr.dialing[1:]
				switch {
				case c.bg || c.served:
				case s.OK():
					// The pool has the caller wait (a hold after a
					// failover, a full backend): the Keeper puts it back
					// at the front of its queue.
					c.how = "queued"
					kr.queue = slices.Insert(kr.queue, 0, c)
					queued = true
				default:
					c.how = "failed"
					kr.fail(c, line)
				}
			}
		case "Reserve":
			if s.Answer() == "true" {
				kr.dialing = append(kr.dialing, &kcaller{bg: true})
			}
		case "Give", "Drop":
			seat := int32(int64(s.Ref) - 1)
			kr.end(seat, t)
			ret = true
			if s.Answer() == "true" && s.Op == "Drop" || s.Answer() == "false" && s.Op != "Drop" && s.Ref != 0 {
				kr.seats.release(seat) // dropped, or retired on its way back
			}
		case "Evict", "Close", "Reset", "ResetFor", "Ceiling", "Limits":
			// (A SetLimits or a ceiling retires idle resources too.)
			for _, i := range retired(s.Answer()) {
				kr.seats.release(i)
			}
		}
		room, roomAt = ret, t
		stale = nil
		if ret && (i+1 == len(steps) || steps[i+1].Op != "Take" || int64(steps[i+1].At) != t) {
			// Nobody was served at this return: nobody was queued, and
			// the callers still queued here gave up.
			queued = false
			for _, q := range kr.queue {
				q.how = "gaveup"
				kr.fail(q, line)
			}
			kr.queue = kr.queue[:0]
		}
	}
	for _, c := range kr.queue {
		c.how = "waiting"
		kr.fail(c, 0)
	}
	for _, c := range kr.dialing {
		if !c.bg && !c.served {
			c.how = "waiting"
			kr.fail(c, 0)
		}
	}
	for _, c := range kr.sleepers {
		c.how = "gaveup"
		kr.fail(c, 0)
	}
	kr.counts.Open = len(kr.open) + len(kr.unseated)
	return nil
}

// waitDelay reads the delay of a Wait answer ("Wait guard=hold
// delay=80ms"): zero for any other answer, or a Wait without one.
func waitDelay(kind pool.Kind, answer string) time.Duration {
	if kind != pool.Wait {
		return 0
	}
	return laterDelay(answer)
}

// laterDelay reads the delay of a Later answer ("Later delay=5ms").
func laterDelay(s string) time.Duration {
	for _, x := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(x, "delay="); ok {
			d, err := time.ParseDuration(v)
			if err == nil && d >= 0 {
				return d
			}
		}
	}
	return 0
}

// handedOn reports whether s gives back, at t, the resource a dial just
// made, in seat made (-1: not known; then any seat no known loan holds):
// the Keeper handing it on.
func handedOn(s record.Step, t int64, made int32, open map[int32]int) bool {
	if int64(s.At) != t {
		return false
	}
	var seat int32
	if s.Op != "Give" {
		return false
	}
	seat = int32(int64(s.Ref) - 1)
	if made >= 0 {
		return seat == made
	}
	_, known := open[seat]
	return !known
}
