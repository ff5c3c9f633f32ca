package ward

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// This file writes every guard's state out as bytes and reads it back, so a
// recording can carry a guard and a replay can rebuild it. Each guard has
// the same pair:
//
//	AppendState(dst []byte, origin time.Time) []byte
//	ReadState(src []byte, origin time.Time) (int, error)
//
// AppendState writes the policy and the state, nothing cached; ReadState
// replaces the receiver's whole policy and state with the ones at the start
// of src. Instants are written as nanoseconds since origin, so a guard read
// back against another origin keeps every span it measures: a replay in
// virtual time rebuilds it with the origin moved. (Counter and an aligned
// Period place windows on the calendar, so they answer alike only when the
// origin names the same wall-clock instant.) Guards that hold no instant
// ignore origin.
//
// The encoding: integers are varints (signed ones zigzag-encoded), a
// float64 the varint of its IEEE bits with the bytes reversed, an instant a
// flag (0 for the zero time.Time) then its offset from origin. A guard read
// back answers every later call exactly as the one written out would; the
// property tests in state_test.go hold each guard to that.

// ErrState is wrapped by the error ReadState returns for bytes that are not
// a state AppendState could have written: truncated, or out of a range the
// guard keeps to. The receiver is unchanged then.
var ErrState = errors.New("ward: bad state")

// appendU and appendI are encoding/binary's varints: unsigned LEB128, and
// zigzag for signed values.
func appendU(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

func appendI(b []byte, x int64) []byte { return binary.AppendVarint(b, x) }

func appendF(b []byte, f float64) []byte {
	return appendU(b, bits.ReverseBytes64(math.Float64bits(f)))
}

func appendB(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendT writes t as nanoseconds since origin (saturating), or a zero flag
// for the zero time.Time.
func appendT(b []byte, t, origin time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return appendI(append(b, 1), int64(t.Sub(origin)))
}

// reader reads the encoding; the first error sticks and every read after
// it gives zero.
type reader struct {
	b      []byte
	off    int
	err    error
	origin time.Time
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format+" (at byte %d)", append(append([]any{ErrState}, args...), r.off)...)
	}
}

func (r *reader) u() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail("truncated")
		return 0 // no half-read value goes on
	case n < 0:
		r.fail("a varint runs past 64 bits")
		return 0
	}
	r.off += n
	return x
}

func (r *reader) i() int64 {
	u := r.u()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) f() float64 { return math.Float64frombits(bits.ReverseBytes64(r.u())) }

func (r *reader) flag() bool {
	v := r.u()
	if v > 1 {
		r.fail("a flag of %d", v)
	}
	return v == 1
}

// n reads a non-negative int that fits 32 bits.
func (r *reader) n() int {
	v := r.i()
	if v < 0 || v > math.MaxInt32 {
		r.fail("%d out of range", v)
		return 0
	}
	return int(v)
}

// count reads how many items of at least size bytes follow, refusing more
// than the bytes left could hold.
func (r *reader) count(size int) int {
	v := r.u()
	if r.err == nil && v > uint64(len(r.b)-r.off)/uint64(size) {
		r.fail("%d items, more than the bytes left hold", v)
	}
	if r.err != nil {
		return 0
	}
	return int(v)
}

func (r *reader) t() time.Time {
	if !r.flag() {
		return time.Time{}
	}
	d := r.i()
	if r.err != nil {
		return time.Time{}
	}
	return r.origin.Add(time.Duration(d))
}

// dur reads a duration of at least lo.
func (r *reader) dur(lo time.Duration) time.Duration {
	d := time.Duration(r.i())
	if d < lo {
		r.fail("a span of %v, under %v", d, lo)
	}
	return d
}

func newReader(src []byte, origin time.Time) *reader {
	return &reader{b: src, origin: origin}
}

// done returns how many bytes r read, or its error.
func (r *reader) done() (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return r.off, nil
}

// The windows. Only the buckets, the head and where the newest bucket
// opened are state; the width and span follow from the policy, and the
// generation is a cache key the owner's cache is rebuilt without.

func appendWindow[B any](b []byte, w *Window[B], origin time.Time, bucket func([]byte, *B) []byte) []byte {
	if w == nil {
		return appendT(appendU(b, 0), time.Time{}, origin) // a guard not built by its constructor
	}
	b = appendU(b, uint64(w.head))
	b = appendT(b, w.start, origin)
	for i := range w.buckets {
		b = bucket(b, &w.buckets[i])
	}
	return b
}

// readWindow reads into a window built for the policy (size buckets).
func readWindow[B any](r *reader, w *Window[B], bucket func(*reader, *B)) {
	size := len(w.buckets)
	head := r.u()
	if r.err == nil && head >= uint64(size) {
		r.fail("head %d of %d buckets", head, size)
	}
	w.start = r.t()
	if r.err == nil && len(r.b)-r.off < size {
		r.fail("%d buckets, more than the bytes left hold", size)
	}
	for i := range w.buckets {
		if r.err != nil {
			return
		}
		bucket(r, &w.buckets[i])
	}
	w.head = int(head)
}

// AppendState appends the breaker's policy and state (see state.go) to dst.
func (b *Breaker) AppendState(dst []byte, origin time.Time) []byte {
	p := &b.p
	dst = appendF(dst, p.K)
	dst = appendF(dst, p.Floor)
	dst = appendF(dst, p.Protection)
	dst = appendI(dst, int64(p.Probe))
	dst = appendI(dst, int64(p.Size))
	dst = appendI(dst, int64(p.Window))
	dst = appendWindow(dst, b.win, origin, func(d []byte, t *Tally) []byte {
		return appendI(appendI(appendI(appendI(d, t.Total), t.Success), t.Failure), t.Drop)
	})
	dst = appendT(dst, b.last, origin)
	return appendB(dst, b.sent)
}

// ReadState sets b to the breaker written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, b is
// unchanged. A new(Breaker) may be read into.
func (b *Breaker) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	p := Sre{K: r.f(), Floor: r.f(), Protection: r.f(), Probe: time.Duration(r.i())}
	p.Size = r.n()
	p.Window = time.Duration(r.i())
	if r.err == nil && (p.clean() != p || p.Size > len(src)) {
		r.fail("a breaker policy out of range")
	}
	if r.err != nil {
		return r.done()
	}
	nb := NewBreaker(p, origin)
	readWindow(r, nb.win, func(r *reader, t *Tally) {
		t.Total, t.Success, t.Failure, t.Drop = r.i(), r.i(), r.i(), r.i()
	})
	nb.last = r.t()
	nb.sent = r.flag()
	n, err := r.done()
	if err == nil {
		*b = *nb
	}
	return n, err
}

// AppendState appends the shedder's policy and state (see state.go) to dst.
func (s *Shedder) AppendState(dst []byte, origin time.Time) []byte {
	p := &s.p
	dst = appendI(dst, int64(p.Size))
	dst = appendI(dst, int64(p.Window))
	dst = appendI(dst, int64(p.CPU))
	dst = appendI(dst, int64(p.Latency))
	dst = appendF(dst, p.Beta)
	dst = appendI(dst, int64(p.Cool))
	dst = appendF(dst, p.Floor)
	dst = appendWindow(dst, s.win, origin, func(d []byte, t *Total) []byte {
		return appendI(appendI(d, t.Sum), t.Count)
	})
	dst = appendI(dst, int64(s.flying))
	dst = appendF(dst, s.average)
	dst = appendT(dst, s.hotAt, origin)
	return appendB(dst, s.dropped)
}

// ReadState sets s to the shedder written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, s is
// unchanged. A new(Shedder) may be read into.
func (s *Shedder) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	var p Shed
	p.Size = r.n()
	p.Window = time.Duration(r.i())
	p.CPU = r.n()
	p.Latency = time.Duration(r.i())
	p.Beta = r.f()
	p.Cool = time.Duration(r.i())
	p.Floor = r.f()
	if r.err == nil && (p.clean() != p || p.Size > len(src)) {
		r.fail("a shedder policy out of range")
	}
	if r.err != nil {
		return r.done()
	}
	ns := NewShedder(p, origin)
	readWindow(r, ns.win, func(r *reader, t *Total) { t.Sum, t.Count = r.i(), r.i() })
	ns.flying = r.n()
	ns.average = r.f()
	ns.hotAt = r.t()
	ns.dropped = r.flag()
	n, err := r.done()
	if err == nil {
		*s = *ns
	}
	return n, err
}

// AppendState appends the bucket's rate, burst, tokens and the instant they
// were counted at (see state.go) to dst.
func (b *Bucket) AppendState(dst []byte, origin time.Time) []byte {
	dst = appendF(dst, b.rate)
	dst = appendF(dst, b.burst)
	dst = appendF(dst, b.tokens)
	return appendT(dst, b.at, origin)
}

// ReadState sets b to the bucket written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, b is
// unchanged. A new(Bucket) may be read into.
func (b *Bucket) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	nb := Bucket{rate: r.f(), burst: r.f(), tokens: r.f()}
	nb.at = r.t()
	if r.err == nil && !(nb.rate >= 0 && nb.burst >= 1 && nb.tokens <= nb.burst) {
		r.fail("a bucket out of range")
	}
	n, err := r.done()
	if err == nil {
		*b = nb
	}
	return n, err
}

// AppendState appends the limiter's policy, limit and leases out (see
// state.go) to dst.
func (l *Limiter) AppendState(dst []byte, _ time.Time) []byte {
	p := &l.p
	dst = appendI(dst, int64(p.Initial))
	dst = appendI(dst, int64(p.Min))
	dst = appendI(dst, int64(p.Max))
	dst = appendI(dst, int64(p.Slow))
	dst = appendF(dst, p.Backoff)
	dst = appendF(dst, l.limit)
	return appendI(dst, int64(l.inflight))
}

// ReadState sets l to the limiter written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, l is
// unchanged. A new(Limiter) may be read into.
func (l *Limiter) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	p := Aimd{Initial: r.n(), Min: r.n(), Max: r.n(), Slow: time.Duration(r.i()), Backoff: r.f()}
	nl := Limiter{p: p, limit: r.f(), inflight: r.n()}
	if r.err == nil && (p.clean() != p || !(nl.limit >= float64(p.Min) && nl.limit <= float64(p.Max))) {
		r.fail("a limiter out of range")
	}
	n, err := r.done()
	if err == nil {
		*l = nl
	}
	return n, err
}

// AppendState appends the backoff policy (a Backoff keeps no other state;
// see state.go) to dst.
func (b *Backoff) AppendState(dst []byte, _ time.Time) []byte {
	dst = appendI(dst, int64(b.Base))
	dst = appendF(dst, b.Factor)
	dst = appendI(dst, int64(b.Cap))
	dst = appendI(dst, int64(b.Attempts))
	dst = appendU(dst, uint64(b.Jitter.kind))
	return appendF(dst, b.Jitter.spread)
}

// ReadState sets b to the backoff written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, b is
// unchanged.
func (b *Backoff) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	nb := Backoff{Base: time.Duration(r.i()), Factor: r.f(), Cap: time.Duration(r.i()), Attempts: int(r.i())}
	kind, f := r.u(), r.f()
	switch {
	case r.err != nil:
	case kind == uint64(spread) && Spread(f).spread == f:
		nb.Jitter = Spread(f)
	case kind < uint64(spread) && math.Float64bits(f) == 0:
		nb.Jitter = Jitter{kind: uint8(kind)}
	default:
		r.fail("jitter %d (%v)", kind, f)
	}
	n, err := r.done()
	if err == nil {
		*b = nb
	}
	return n, err
}

// AppendState appends the log's quota, window and the moments of the events
// still in it (see state.go) to dst.
func (s *Sliding) AppendState(dst []byte, origin time.Time) []byte {
	dst = appendI(dst, int64(s.quota))
	dst = appendI(dst, int64(s.window))
	dst = appendU(dst, uint64(s.n))
	for i := range s.n {
		dst = appendT(dst, s.ring[(s.first+i)%len(s.ring)], origin)
	}
	return dst
}

// ReadState sets s to the log written by AppendState at the start of src,
// and returns how many bytes it read. On error, wrapping ErrState, s is
// unchanged. A new(Sliding) may be read into.
func (s *Sliding) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	ns := Sliding{quota: r.n(), window: r.dur(1)}
	ns.n = r.count(1)
	if r.err == nil && ns.n > ns.quota {
		r.fail("%d events over a quota of %d", ns.n, ns.quota)
	}
	if r.err == nil && ns.n > 0 {
		ns.ring = make([]time.Time, ns.n)
		for i := range ns.ring {
			ns.ring[i] = r.t()
			if r.err == nil && i > 0 && ns.ring[i].Before(ns.ring[i-1]) {
				r.fail("events out of order")
			}
		}
	}
	n, err := r.done()
	if err == nil {
		*s = ns
	}
	return n, err
}

// AppendState appends the counter's limit, window and counts (see state.go)
// to dst. The window index is the calendar's, whatever origin.
func (c *Counter) AppendState(dst []byte, _ time.Time) []byte {
	dst = appendI(dst, int64(c.limit))
	dst = appendI(dst, c.window)
	dst = appendI(dst, c.idx)
	dst = appendI(dst, int64(c.cur))
	dst = appendI(dst, int64(c.prev))
	return appendB(dst, c.started)
}

// ReadState sets c to the counter written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, c is
// unchanged. A new(Counter) may be read into.
func (c *Counter) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	nc := Counter{limit: r.n(), window: int64(r.dur(1)), idx: r.i(), cur: r.n(), prev: r.n(), started: r.flag()}
	n, err := r.done()
	if err == nil {
		*c = nc
	}
	return n, err
}

// AppendState appends the period's quota, length, alignment and the open
// period (see state.go) to dst.
func (p *Period) AppendState(dst []byte, origin time.Time) []byte {
	dst = appendI(dst, int64(p.quota))
	dst = appendI(dst, int64(p.period))
	dst = appendB(dst, p.align)
	dst = appendB(dst, p.open)
	dst = appendT(dst, p.start, origin)
	return appendI(dst, int64(p.count))
}

// ReadState sets p to the period written by AppendState at the start of
// src, and returns how many bytes it read. On error, wrapping ErrState, p is
// unchanged. A new(Period) may be read into.
func (p *Period) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	np := Period{quota: r.n(), period: r.dur(1), align: r.flag(), open: r.flag()}
	np.start = r.t()
	np.count = r.n()
	n, err := r.done()
	if err == nil {
		*p = np
	}
	return n, err
}

// AppendState appends the gate's ceiling and how many are inside (see
// state.go) to dst.
func (g *Gate) AppendState(dst []byte, _ time.Time) []byte {
	return appendI(appendI(dst, int64(g.limit)), int64(g.held))
}

// ReadState sets g to the gate written by AppendState at the start of src,
// and returns how many bytes it read. On error, wrapping ErrState, g is
// unchanged.
func (g *Gate) ReadState(src []byte, origin time.Time) (int, error) {
	r := newReader(src, origin)
	ng := Gate{limit: r.n(), held: r.n()}
	n, err := r.done()
	if err == nil {
		*g = ng
	}
	return n, err
}

// Anchor returns the earliest instant w's guards hold (a window's opening,
// the moment a breaker last let a call through, a bucket's last reading),
// for a recorder to count instants from before its pool has seen one;
// false when no guard holds an instant.
func (w Ward) Anchor() (time.Time, bool) {
	var at time.Time
	found := false
	see := func(t time.Time) {
		if !t.IsZero() && (!found || t.Before(at)) {
			at, found = t, true
		}
	}
	if b := w.Breaker; b != nil && b.win != nil {
		see(b.win.start)
		see(b.last)
	}
	if s := w.Shedder; s != nil && s.win != nil {
		see(s.win.start)
		see(s.hotAt)
	}
	if b := w.Bucket; b != nil {
		see(b.at)
	}
	return at, found
}

// AppendState appends the window's size, bucket width, head, the instant
// its newest bucket opened and every bucket, each written by bucket, to
// dst. (A Breaker and a Shedder write their windows as part of their own
// state.)
func (w *Window[B]) AppendState(dst []byte, origin time.Time, bucket func(dst []byte, b *B) []byte) []byte {
	dst = appendU(dst, uint64(len(w.buckets)))
	dst = appendI(dst, int64(w.width))
	return appendWindow(dst, w, origin, bucket)
}

// ReadState sets w to the window written by AppendState at the start of
// src, each bucket read by bucket (which returns how many bytes it read, or
// an error), and returns how many bytes it read. On error, wrapping ErrState
// (and bucket's error), w is unchanged. A new(Window[B]) may be read into.
func (w *Window[B]) ReadState(src []byte, origin time.Time, bucket func(src []byte, b *B) (int, error)) (int, error) {
	r := newReader(src, origin)
	size := r.count(1)
	width := r.dur(1)
	if r.err == nil && (size < 1 || width > Never/time.Duration(size)) {
		r.fail("a window of %d buckets %v wide", size, width)
	}
	if r.err != nil {
		return r.done()
	}
	nw := &Window[B]{width: width, span: width * time.Duration(size), buckets: make([]B, size)}
	readWindow(r, nw, func(r *reader, b *B) {
		n, err := bucket(r.b[r.off:], b)
		if err != nil {
			r.fail("bucket: %w", err)
			return
		}
		r.off += n
	})
	n, err := r.done()
	if err == nil {
		*w = *nw
	}
	return n, err
}
