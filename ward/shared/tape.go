package shared

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// Tape is a Store that records every call made through it, with its
// arguments and the reply the store gave (values and error), so that the
// shared guards of one replica can be run again alone, on the replies it
// had, without the store: read the bytes back with [ReadTape] and give the
// guards the [Reel] as their store. Besides the replies, a shared guard
// reads only the now and ctx its caller passes, so the same calls on the
// Reel give the same decisions, store outages and local fallbacks
// included.
//
//	tape := shared.NewTape(redisward.NewClientStore(rc, "app:"), 0)
//	br := shared.NewBreaker(shared.Link{Store: tape}, "db", shared.DefaultBreaker)
//	…
//	os.WriteFile("store.wptp", tape.Bytes(), 0o644)
//
// A Tape keeps up to its limit in bytes of calls, the first ones: a
// replay needs them from the start, since the guards' local state (the
// breaker's fallback, the budget's count) is built from every earlier
// reply. Calls past the limit go to the store unrecorded; Full says so.
//
// A Tape is safe for concurrent use when its Store is; concurrent calls are
// recorded in the order they end, and a Reel answers each call with the
// first unused recorded one of the same arguments, so that order does not
// matter between calls that differ.
type Tape struct {
	store Store
	limit int

	mu    sync.Mutex // guards the fields below
	buf   []byte
	calls int
	full  bool
}

// DefaultTapeLimit is the most a Tape made with a limit of zero keeps:
// 4 MiB, some tens of thousands of calls.
const DefaultTapeLimit = 4 << 20

// NewTape returns a Tape recording the calls made through it to store, up
// to limit bytes (zero means DefaultTapeLimit).
func NewTape(store Store, limit int) *Tape {
	if limit <= 0 {
		limit = DefaultTapeLimit
	}
	if store == nil {
		store = noStore{}
	}
	return &Tape{store: store, limit: limit}
}

// Full reports whether calls went unrecorded because the tape was full.
func (t *Tape) Full() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.full
}

// Bytes returns the tape as a file: a header, the calls, a checksum.
func (t *Tape) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := append([]byte(tapeMagic), tapeVersion)
	b = appendU(b, uint64(t.calls))
	b = append(b, t.buf...)
	sum := fnv64(b)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(sum>>(8*i)))
	}
	return b
}

const (
	tapeMagic   = "wptp"
	tapeVersion = 1
)

// The calls, as numbered on the tape.
const (
	tapeIncr byte = iota + 1
	tapeIncrUnder
	tapeSetIfAbsent
	tapeGet
	tapeDel
	tapeBudget
)

// record appends one call: its arguments (args) and its reply (reply),
// then the error.
func (t *Tape) record(args, reply []byte, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.full {
		return
	}
	e := appendErr(reply, err)
	if len(t.buf)+len(args)+len(e) > t.limit {
		t.full = true
		return
	}
	t.buf = append(append(t.buf, args...), e...)
	t.calls++
}

// Incr records a Store.Incr.
func (t *Tape) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	n, err := t.store.Incr(ctx, key, ttl)
	t.record(incrArgs(key, ttl), appendI(nil, n), err)
	return n, err
}

// IncrUnder records a Store.IncrUnder.
func (t *Tape) IncrUnder(ctx context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error) {
	n, ok, err := t.store.IncrUnder(ctx, key, prev, weight, limit, ttl)
	t.record(incrUnderArgs(key, prev, weight, limit, ttl), appendB(appendI(nil, n), ok), err)
	return n, ok, err
}

// SetIfAbsent records a Store.SetIfAbsent.
func (t *Tape) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := t.store.SetIfAbsent(ctx, key, value, ttl)
	t.record(setArgs(key, value, ttl), appendB(nil, ok), err)
	return ok, err
}

// Get records a Store.Get.
func (t *Tape) Get(ctx context.Context, key string) (string, bool, error) {
	v, ok, err := t.store.Get(ctx, key)
	t.record(getArgs(key), appendB(appendS(nil, v), ok), err)
	return v, ok, err
}

// Del records a Store.Del.
func (t *Tape) Del(ctx context.Context, keys ...string) error {
	err := t.store.Del(ctx, keys...)
	t.record(delArgs(keys), nil, err)
	return err
}

// Budget records a Store.Budget.
func (t *Tape) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	r, err := t.store.Budget(ctx, op)
	t.record(budgetArgs(op), appendReply(nil, r), err)
	return r, err
}

func incrArgs(key string, ttl time.Duration) []byte {
	return appendI(appendS([]byte{tapeIncr}, key), int64(ttl))
}

func incrUnderArgs(key, prev string, weight float64, limit int64, ttl time.Duration) []byte {
	b := appendS(appendS([]byte{tapeIncrUnder}, key), prev)
	b = appendU(b, math.Float64bits(weight))
	return appendI(appendI(b, limit), int64(ttl))
}

func setArgs(key, value string, ttl time.Duration) []byte {
	return appendI(appendS(appendS([]byte{tapeSetIfAbsent}, key), value), int64(ttl))
}

func getArgs(key string) []byte { return appendS([]byte{tapeGet}, key) }

func delArgs(keys []string) []byte {
	b := appendU([]byte{tapeDel}, uint64(len(keys)))
	for _, k := range keys {
		b = appendS(b, k)
	}
	return b
}

func budgetArgs(op BudgetOp) []byte {
	b := append([]byte{tapeBudget}, byte(op.Step))
	b = appendS(appendS(b, op.Key), op.Replica)
	b = appendI(appendI(appendI(b, int64(op.Budget)), int64(op.TTL)), int64(op.Held))
	b = appendB(b, op.Overwrite)
	// Unsure and Room share Borrow's byte (bits 1 and 2; Room follows
	// when set), so that tapes made before them match.
	v := flag(op.Borrow)
	if op.Unsure {
		v |= 2
	}
	if op.Room != 0 {
		return appendI(append(b, v|4), int64(op.Room))
	}
	return append(b, v)
}

func flag(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendReply(b []byte, r BudgetReply) []byte {
	b = appendB(b, r.Granted)
	for _, v := range [...]int{r.Held, r.Share, r.Live, r.Total, r.Owed, r.Room} {
		b = appendI(b, int64(v))
	}
	return b
}

// appendErr appends err as a kind (0 none, 1 a deadline, 2 a value that is
// not an integer, 3 no store, 4 another) and, for another, its text.
func appendErr(b []byte, err error) []byte {
	switch {
	case err == nil:
		return append(b, 0)
	case errors.Is(err, context.DeadlineExceeded):
		return append(b, 1)
	case errors.Is(err, ErrNotInteger):
		return append(b, 2)
	case errors.Is(err, ErrNoStore):
		return append(b, 3)
	}
	return appendS(append(b, 4), err.Error())
}

// The encoding: varints, zigzag for signed ones, strings as a length and
// bytes.

// appendU and appendI are encoding/binary's varints: unsigned LEB128, and
// zigzag for signed values.
func appendU(b []byte, x uint64) []byte { return binary.AppendUvarint(b, x) }

func appendI(b []byte, x int64) []byte { return binary.AppendVarint(b, x) }

func appendS(b []byte, s string) []byte { return append(appendU(b, uint64(len(s))), s...) }

func appendB(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// ErrTape is wrapped by the errors of ReadTape, for bytes that are not a
// whole tape, and of a Reel, for a call the tape does not hold.
var ErrTape = errors.New("wardpool: shared: bad tape")

// Reel is a Store that answers from a tape (see Tape): each call with the
// reply recorded for the first unused call of the same arguments. A call
// the tape does not hold fails with an error wrapping ErrTape, which the
// guards take as a store outage; Err reports the first. A Reel is safe for
// concurrent use.
type Reel struct {
	mu      sync.Mutex // guards the fields below
	entries []tapeEntry
	used    []bool
	next    map[string]int // the first possibly unused entry for arguments
	err     error
}

type tapeEntry struct {
	args  string
	reply []byte
	kind  byte
	msg   string
}

// ReadTape reads a tape written by Tape.Bytes into a Reel. It fails, with
// an error wrapping ErrTape, for anything else: a wrong magic or version,
// a checksum that does not match, a call that does not parse.
func ReadTape(data []byte) (*Reel, error) {
	bad := func(format string, args ...any) (*Reel, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrTape}, args...)...)
	}
	if len(data) < len(tapeMagic)+1+8 || string(data[:len(tapeMagic)]) != tapeMagic {
		return bad("not a tape (no %q at the start)", tapeMagic)
	}
	body := data[:len(data)-8]
	var sum uint64
	for _, c := range data[len(data)-8:] {
		sum = sum<<8 | uint64(c)
	}
	if fnv64(body) != sum {
		return bad("checksum mismatch: the tape is truncated or corrupted")
	}
	if v := body[len(tapeMagic)]; v != tapeVersion {
		return bad("version %d, this build reads version %d", v, tapeVersion)
	}
	r := &tapeReader{b: body, off: len(tapeMagic) + 1}
	n := r.u()
	if r.err == nil && n > uint64(len(body)) {
		r.fail("%d calls in %d bytes", n, len(body))
	}
	reel := &Reel{next: map[string]int{}}
	for i := uint64(0); i < n && r.err == nil; i++ {
		start := r.off
		r.args()
		if r.err != nil {
			break
		}
		args := string(r.b[start:r.off])
		replyAt := r.off
		r.reply(args[0])
		e := tapeEntry{args: args, reply: r.b[replyAt:r.off]}
		e.kind = r.byte()
		if e.kind > 4 {
			r.fail("error kind %d", e.kind)
		}
		if e.kind == 4 {
			e.msg = r.s()
		}
		reel.entries = append(reel.entries, e)
	}
	if r.err == nil && r.off != len(body) {
		r.fail("%d bytes after the last call", len(body)-r.off)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTape, r.err)
	}
	reel.used = make([]bool, len(reel.entries))
	return reel, nil
}

// Calls returns how many calls the tape holds, and Left how many of them no
// call has been answered with yet.
func (r *Reel) Calls() int { return len(r.entries) }

// Left returns how many recorded calls no call has been answered with yet.
func (r *Reel) Left() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.used {
		if !u {
			n++
		}
	}
	return n
}

// Err returns the first call the tape did not hold, or nil.
func (r *Reel) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// take finds the first unused entry with args and marks it used; it
// returns a reader at its reply and its error.
func (r *Reel) take(args []byte) (*tapeReader, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := string(args)
	for i := r.next[key]; i < len(r.entries); i++ {
		if r.used[i] || r.entries[i].args != key {
			continue
		}
		r.used[i] = true
		r.next[key] = i + 1
		e := &r.entries[i]
		var err error
		switch e.kind {
		case 1:
			err = context.DeadlineExceeded
		case 2:
			err = ErrNotInteger
		case 3:
			err = ErrNoStore
		case 4:
			err = errors.New(e.msg)
		}
		return &tapeReader{b: e.reply}, err
	}
	r.next[key] = len(r.entries)
	err := fmt.Errorf("%w: a call the tape does not hold (%s)", ErrTape, describeArgs(args))
	if r.err == nil {
		r.err = err
	}
	return nil, err
}

// describeArgs names a call for an error.
func describeArgs(args []byte) string {
	names := [...]string{"?", "Incr", "IncrUnder", "SetIfAbsent", "Get", "Del", "Budget"}
	op := "?"
	if int(args[0]) < len(names) {
		op = names[args[0]]
	}
	return op + " " + strconv.Quote(string(args[1:]))
}

// Incr answers from the tape.
func (r *Reel) Incr(_ context.Context, key string, ttl time.Duration) (int64, error) {
	t, err := r.take(incrArgs(key, ttl))
	if t == nil {
		return 0, err
	}
	return t.i(), err
}

// IncrUnder answers from the tape.
func (r *Reel) IncrUnder(_ context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error) {
	t, err := r.take(incrUnderArgs(key, prev, weight, limit, ttl))
	if t == nil {
		return 0, false, err
	}
	return t.i(), t.flag(), err
}

// SetIfAbsent answers from the tape.
func (r *Reel) SetIfAbsent(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	t, err := r.take(setArgs(key, value, ttl))
	if t == nil {
		return false, err
	}
	return t.flag(), err
}

// Get answers from the tape.
func (r *Reel) Get(_ context.Context, key string) (string, bool, error) {
	t, err := r.take(getArgs(key))
	if t == nil {
		return "", false, err
	}
	return t.s(), t.flag(), err
}

// Del answers from the tape.
func (r *Reel) Del(_ context.Context, keys ...string) error {
	_, err := r.take(delArgs(keys))
	return err
}

// Budget answers from the tape.
func (r *Reel) Budget(_ context.Context, op BudgetOp) (BudgetReply, error) {
	t, err := r.take(budgetArgs(op))
	if t == nil {
		return BudgetReply{}, err
	}
	rep := BudgetReply{Granted: t.flag()}
	for _, v := range [...]*int{&rep.Held, &rep.Share, &rep.Live, &rep.Total, &rep.Owed, &rep.Room} {
		*v = int(t.i())
	}
	return rep, err
}

// tapeReader reads the encoding; the first error sticks.
type tapeReader struct {
	b   []byte
	off int
	err error
}

func (r *tapeReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format+" (at byte %d)", append(args, r.off)...)
	}
}

func (r *tapeReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *tapeReader) u() uint64 {
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

func (r *tapeReader) i() int64 {
	u := r.u()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *tapeReader) flag() bool {
	v := r.byte()
	if v > 1 {
		r.fail("a flag of %d", v)
	}
	return v == 1
}

func (r *tapeReader) s() string {
	n := r.u()
	if r.err == nil && n > uint64(len(r.b)-r.off) {
		r.fail("a string of %d bytes, more than are left", n)
	}
	if r.err != nil {
		return ""
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s
}

// args reads past a call's arguments, its op first.
func (r *tapeReader) args() {
	switch op := r.byte(); op {
	case tapeIncr:
		r.s()
		r.i()
	case tapeIncrUnder:
		r.s()
		r.s()
		r.u()
		r.i()
		r.i()
	case tapeSetIfAbsent:
		r.s()
		r.s()
		r.i()
	case tapeGet:
		r.s()
	case tapeDel:
		n := r.u()
		if r.err == nil && n > uint64(len(r.b)-r.off) {
			r.fail("%d keys, more than the bytes left hold", n)
		}
		for ; n > 0 && r.err == nil; n-- {
			r.s()
		}
	case tapeBudget:
		r.byte()
		r.s()
		r.s()
		r.i()
		r.i()
		r.i()
		r.flag()
		if v := r.byte(); v > 7 {
			r.fail("a borrow flag of %d", v) // bit 0 Borrow, bit 1 Unsure, bit 2 Room
		} else if v&4 != 0 {
			r.i()
		}
	default:
		r.fail("unknown call %d", op)
	}
}

// reply reads past the reply of a call of op.
func (r *tapeReader) reply(op byte) {
	switch op {
	case tapeIncr:
		r.i()
	case tapeIncrUnder:
		r.i()
		r.flag()
	case tapeSetIfAbsent:
		r.flag()
	case tapeGet:
		r.s()
		r.flag()
	case tapeBudget:
		r.flag()
		for range 6 {
			r.i()
		}
	}
}
