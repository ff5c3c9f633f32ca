package engine

import (
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// caller states
const (
	stAsking = iota
	stQueued
	stSleeping
	stDialing
	stLent
	stDone
)

// caller is one caller of the load, from arrival to release.
type caller struct {
	id       uint64 // arrival index
	asked    int64
	hold     time.Duration
	recorded bool
	gen      uint32
	state    uint8
	timer    bool // a timeout event is pending
	// for the recording
	got     int64
	answers [maxAnswers]pool.Kind
	nans    uint8
	queued0 bool // joined the queue without asking
	// class is the caller's class as the pool knows it (Pool.TakeAs), and
	// its queue: 0 without classes. group is its class in the load (1 +
	// its index in Scenario.Classes, 0 for none), counted by; loop says
	// it is one of a population that asks again as its call ends.
	class int
	group int
	loop  bool
}

const maxAnswers = 6

func (r *run) newCaller() *caller {
	var c *caller
	if n := len(r.free); n > 0 {
		c = r.free[n-1]
		r.free = r.free[:n-1]
		gen := c.gen + 1
		*c = caller{gen: gen}
	} else {
		c = new(caller)
	}
	return c
}

// acquire is a caller asking, as Keeper.Acquire does: behind others, it
// joins the back of the queue and the pool is asked for those ahead first.
func (r *run) acquire(c *caller, t int64) {
	if r.qlive > 0 {
		if c.nans == 0 {
			c.queued0 = true
		}
		r.enqueue(c, t)
		r.serve(t)
		return
	}
	now := r.now(t)
	for {
		tk := r.take(now, t, c)
		r.answer(c, tk, t)
		switch tk.Kind {
		case pool.Ready:
			r.lend(c, tk.Item, t)
		case pool.Stale:
			r.cur.Retired++
			r.gone(tk.Item)
			continue
		case pool.Make:
			r.dial(c, t, tk.Gen)
		case pool.Wait:
			r.enqueue(c, t)
			r.waitFor(t, tk)
		case pool.Later:
			c.state = stSleeping
			r.deadline(c)
			r.schedule(t+int64(tk.Delay), evWake, c, 0)
		case pool.Shed:
			r.cur.Refused++
			r.classFailed(c, false)
			r.ended(c, t)
			r.done(c, t)
		}
		return
	}
}

// take asks the pool for c at now (t): Take without classes, TakeAs
// with c's class with them, as the Keeper's decideLocked does (TakeAs is
// Take on a pool without classes; the call is spared).
func (r *run) take(now time.Time, t int64, c *caller) pool.Taken[int32] {
	if r.classes == nil {
		return r.p.Take(now, r.prng.Float64(), r.cpu(t))
	}
	return r.p.TakeAs(now, r.prng.Float64(), r.cpu(t), c.class)
}

// answer counts one answer of the pool, given on c's behalf.
func (r *run) answer(c *caller, tk pool.Taken[int32], t int64) {
	r.cur.Answers[tk.Kind]++
	if tk.Guard != ward.GuardNone && int(tk.Guard) < len(r.cur.Guards) {
		r.cur.Guards[tk.Guard]++
	}
	if tk.Kind == pool.Wait && tk.Guard == ward.GuardHold {
		r.foHoldWait(t)
	}
	if tk.Kind == pool.Wait && tk.Guard == ward.GuardFull {
		r.res.Sum.Full.Waits++
	}
	if int(c.nans) < maxAnswers {
		c.answers[c.nans] = tk.Kind
	}
	if c.nans < 255 {
		c.nans++
	}
}

// serve asks the pool on behalf of the queue, oldest first, while it has
// something for them, then, the queue empty, for the callers dialing, as
// Keeper.serveLocked does.
func (r *run) serve(t int64) {
	defer r.serveDialers(t)
	if r.classes != nil {
		r.serveClasses(t)
		return
	}
	now := r.now(t)
	for r.qlive > 0 {
		c := r.peek()
		tk := r.p.Take(now, r.prng.Float64(), r.cpu(t))
		r.answer(c, tk, t)
		if tk.Kind == pool.Stale { // closed, and the pool asked again
			r.cur.Retired++
			r.gone(tk.Item)
			continue
		}
		if !r.carry(c, tk, t) {
			return
		}
	}
}

// serveClasses is serve with classes, as Keeper.serveClassesLocked: the
// pool says which class's front caller is asked for next (Pool.Serve),
// until it has nothing more for any of them.
func (r *run) serveClasses(t int64) {
	now := r.now(t)
	for r.qlive > 0 {
		fronts := r.fronts[:0]
		for i := range r.queues {
			if c := r.front(i); c != nil {
				fronts = append(fronts, pool.Front{Class: i, Since: r.now(c.asked)})
			}
		}
		r.fronts = fronts
		i, delay := r.p.Serve(now, fronts)
		if i < 0 {
			if delay > 0 {
				r.retry(t + int64(delay))
			}
			return
		}
		c := r.front(fronts[i].Class)
		tk := r.take(now, t, c)
		r.answer(c, tk, t)
		for tk.Kind == pool.Stale { // closed, and the pool asked again
			r.cur.Retired++
			r.gone(tk.Item)
			tk = r.take(now, t, c)
			r.answer(c, tk, t)
		}
		if !r.carry(c, tk, t) {
			return
		}
	}
}

// carry carries out the pool's answer tk (not Stale) for c, the front of
// its queue: lent, dialed for, or refused, c leaves the queue. It reports
// false when the pool has nothing for c now (Wait, or Later with the
// timer armed): serving stops there.
func (r *run) carry(c *caller, tk pool.Taken[int32], t int64) bool {
	switch tk.Kind {
	case pool.Ready:
		r.unqueue(c, t)
		r.lend(c, tk.Item, t)
	case pool.Make:
		r.unqueue(c, t)
		r.dial(c, t, tk.Gen)
	case pool.Wait:
		r.waitFor(t, tk)
		return false
	case pool.Later:
		r.retry(t + int64(tk.Delay))
		return false
	case pool.Shed:
		r.unqueue(c, t)
		r.cur.Refused++
		r.classFailed(c, false)
		r.ended(c, t)
		r.done(c, t)
	}
	return true
}

// retry arms the timer that serves the queue again at at, unless it is
// armed for earlier already: the Keeper's one timer (armLocked).
func (r *run) retry(at int64) {
	if !r.retryOn || at < r.retryAt {
		r.retryOn, r.retryAt = true, at
		r.schedule(r.retryAt, evRetry, nil, 0)
	}
}

// waitFor carries out a Wait answer, as Keeper.waitLocked does: one with a
// Delay (a hold after a failover, a full backend) has the timer ask for
// the waiters again then, whether or not a resource comes back first.
func (r *run) waitFor(t int64, tk pool.Taken[int32]) {
	if tk.Delay > 0 {
		r.retry(t + int64(tk.Delay))
	}
}

// dialer is a caller whose own dial is in flight, as it was when the dial
// began (gen).
type dialer struct {
	c   *caller
	gen uint32
}

// serveDialers hands an idle resource, while nobody is queued, to the
// callers whose own dial is in flight, oldest first, as
// Keeper.serveDialersLocked does: the pool is asked only while it has
// something idle (no reservation is opened for a caller dialing already),
// and the first answer other than Ready (a refusal) ends it, the caller
// dialing on. The dial of a caller served so lands for nobody (dialed).
func (r *run) serveDialers(t int64) {
	for r.qlive == 0 && r.dhead < len(r.dialers) {
		d := r.dialers[r.dhead]
		c := d.c
		if c.gen != d.gen || c.state != stDialing {
			r.dialers[r.dhead] = dialer{}
			r.dhead++ // served by its dial, or gone
			continue
		}
		if r.p.Books().Idle == 0 {
			break
		}
		tk := r.take(r.now(t), t, c)
		r.answer(c, tk, t)
		if tk.Kind == pool.Stale {
			r.cur.Retired++
			r.gone(tk.Item)
			continue
		}
		if tk.Kind != pool.Ready {
			break
		}
		r.dialers[r.dhead] = dialer{}
		r.dhead++
		r.lend(c, tk.Item, t)
	}
	if r.dhead == len(r.dialers) {
		r.dialers, r.dhead = r.dialers[:0], 0
	} else if r.dhead > 1024 && r.dhead > len(r.dialers)/2 {
		n := copy(r.dialers, r.dialers[r.dhead:])
		clear(r.dialers[n:])
		r.dialers, r.dhead = r.dialers[:n], 0
	}
}

func (r *run) lend(c *caller, item int32, t int64) {
	c.state, c.got = stLent, t
	r.cur.Served++
	if t > c.asked {
		r.cur.Waited++
		if r.inRotation(t) {
			r.res.Sum.Rotation.Waited++
		}
	}
	r.ended(c, t)
	if c.group > 0 {
		g := &r.groups[c.group-1]
		g.Served++
		g.lent++
		if t >= int64(time.Second) {
			g.Peak = max(g.Peak, g.lent)
		}
	}
	hold := c.hold
	r.res.Sum.Holds++
	if hold < 0 {
		r.res.Sum.Held += time.Duration(r.end - t)
		return // held past the end of the run
	}
	if !c.recorded {
		if _, f := r.s.slowAt(time.Duration(t)); f != 1 {
			hold = time.Duration(float64(hold) * f)
		}
	}
	r.res.Sum.Held += min(hold, time.Duration(r.end-t))
	r.schedule(t+int64(hold), evRelease, c, item)
}

func (r *run) dial(c *caller, t int64, gen uint32) {
	c.state = stDialing
	r.deadline(c)
	r.dialers = append(r.dialers, dialer{c: c, gen: c.gen})
	r.res.Sum.Dials++
	r.rotDial(t)
	d := r.s.Dial
	f, _ := r.s.slowAt(time.Duration(t))
	if f != 1 {
		d = time.Duration(float64(d) * f)
	}
	ok := true
	if fail := r.s.failAt(time.Duration(t)); fail >= 1 || fail > 0 && r.drng.Float64() < fail {
		ok = false
	}
	if r.opt.DialFails != nil && r.opt.DialFails(time.Duration(t)) {
		ok = false
	}
	// A backend at its connection limit refuses the dial (after the dial
	// time: it answers the connection's startup); one that takes it holds
	// a connection from now until the resource is closed.
	full := false
	if r.opt.DialFull != nil && r.opt.DialFull(time.Duration(t)) || ok && r.s.ServerMax > 0 && r.conns >= r.s.ServerMax {
		ok, full = false, true
	} else if ok {
		r.conns++
		r.res.Sum.Full.Conns = max(r.res.Sum.Full.Conns, r.conns)
	}
	r.foDial(t, ok)
	r.seq++
	r.q.push(event{at: t + int64(d), seq: r.seq, kind: evDialed, c: c, gen: c.gen, ok: ok, old: r.oldDial(t), rgen: gen, full: full, class: int32(c.class)})
}

func (r *run) dialed(e *event, t int64) {
	c := e.c
	owner := c.gen == e.gen && c.state == stDialing
	now := r.now(t)
	if !e.ok {
		// While the pool holds its callers after a failover, Unmade says
		// the caller waits for the next dial; a backend that refused the
		// dial for want of room, told to the pool as such (Scenario.Full),
		// has the caller wait for a return or the next dial while others
		// are live. Either way the Keeper puts it back at the front of its
		// queue, where it was. Otherwise the caller gets the dial's error.
		by := ward.GuardNone
		if e.full {
			r.cur.Full++
			r.res.Sum.Full.Refused++
			if r.s.fullWait() {
				by = ward.GuardFull
			}
		} else {
			r.res.Sum.DeadDials++
		}
		wait := r.p.UnmadeAs(now, r.prng.Float64(), by, int(e.class))
		r.cur.Failed++
		switch {
		case owner && wait && e.full:
			r.res.Sum.Full.PutBack++
			r.requeue(c, t)
		case owner && wait:
			r.res.Sum.Failover.PutBack++
			r.requeue(c, t)
		case owner:
			r.cur.DialErrors++
			r.classFailed(c, false)
			r.ended(c, t)
			r.done(c, t)
		}
		r.serve(t)
		return
	}
	id := r.nextRes
	r.nextRes++
	if !r.p.MadeAs(id, e.rgen, int(e.class), now, 0) {
		r.cur.Retired++ // closed: never, the simulator does not close
		r.conns--
		return
	}
	r.cur.Opened++
	r.made(id, e.old)
	r.foMade(e.old, t)
	if owner {
		r.lend(c, id, t)
		return
	}
	// A loan to nobody (its caller gave up, or was served by a return
	// meanwhile): the pool counts it, then takes it back, and it serves
	// the queue and the callers dialing as a return does.
	r.cur.Orphans++
	if !r.p.Give(id, now) {
		r.cur.Retired++
		r.gone(id)
	}
	r.serve(t)
}

// classFailed counts a call of c's class that timed out, or failed.
func (r *run) classFailed(c *caller, timedOut bool) {
	if c.group == 0 {
		return
	}
	if g := &r.groups[c.group-1]; timedOut {
		g.TimedOut++
	} else {
		g.Failed++
	}
}

// deadline arms c's timeout, once.
func (r *run) deadline(c *caller) {
	if r.s.Timeout <= 0 || c.timer {
		return
	}
	c.timer = true
	r.schedule(c.asked+int64(r.s.Timeout), evTimeout, c, 0)
}

// ended records the end of c's acquire wait at t.
func (r *run) ended(c *caller, t int64) {
	w := time.Duration(t - c.asked)
	if r.opt.Wait != nil {
		r.opt.Wait(c.id, w)
	}
	if c.group > 0 {
		g := &r.groups[c.group-1]
		if w == 0 {
			g.zeros++
		} else {
			g.waits = append(g.waits, w)
		}
	}
	r.waits = append(r.waits, w)
	r.rotWait(t, w)
	if w == 0 {
		r.zeros++
	} else {
		r.all = append(r.all, w)
	}
}

// done retires c: its loan is home, or it gave up, or was refused.
func (r *run) done(c *caller, t int64) {
	if c.state == stLent {
		if r.opt.Record != nil {
			r.opt.Record.close(c, t)
		}
	} else if r.opt.Record != nil {
		r.opt.Record.close(c, -1)
	}
	if c.loop {
		// One of a population: it asks again now, or, its call failed,
		// after its hold.
		at := t
		if c.state != stLent {
			at += int64(c.hold)
		}
		if at < r.end {
			r.schedule(at, evAgain, nil, int32(c.group))
		}
	}
	if c.state == stLent && c.group > 0 {
		r.groups[c.group-1].lent--
	}
	c.state = stDone
	if !c.timer {
		r.free = append(r.free, c)
	}
	// A caller with a timeout pending is left for the collector: the
	// event still points at it.
}

// cpu is the CPU reading a take at t passes: Options.CPU's, else the
// scenario's model at the pool's busy count.
func (r *run) cpu(t int64) int {
	var v int
	if r.opt.CPU == nil {
		v = r.s.cpuAt(r.p.Books().Busy)
	} else {
		v = r.opt.CPU(time.Duration(t))
	}
	r.res.Sum.CPUMax = max(r.res.Sum.CPUMax, v)
	return v
}
