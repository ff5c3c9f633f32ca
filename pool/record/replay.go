package record

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/internal/wire"
)

// This file replays a recording read by ReadRecording: a fresh Pool,
// rebuilt from the recording's first checkpoint, is given the same calls
// through a recorder of its own, and every step that recorder writes must
// come out the same as the recorded one, byte for byte; so must every
// later checkpoint (the whole state) and the books at the end.

// Divergence is Replay's report of the first step whose replayed answer is
// not the recorded one.
type Divergence struct {
	Index uint64 // the step's number (as Step.Index)
	Op    string // its operation; a Checkpoint or End compares the state
	Want  string // the recorded step
	Got   string // the replayed one
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("wardpool: replay differs at step %d (%v): recorded %s, replayed %s", d.Index, d.Op, d.Want, d.Got)
}

// Replay reads data as a recording and replays it (see Recording.Replay).
func Replay(data []byte) error {
	rc, err := ReadRecording(data)
	if err != nil {
		return err
	}
	return rc.Replay()
}

// replayBase is the origin a replay's instants are counted from.
var replayBase = time.Unix(0, 0).UTC()

// Replay rebuilds the recorded pool from the recording's first checkpoint
// (its resources stand-ins: numbers) and replays every step into it, in
// order. It returns nil when every replayed step, every later checkpoint
// and the books at the end are the same, byte for byte, as recorded; a
// *Divergence naming the first that is not; or an error wrapping
// ErrRecording for a recording that no pool could have made (a checkpoint
// whose seats do not form a pool, say). It never panics, and it does not
// change rc.
func (rc *Recording) Replay() (err error) {
	if len(rc.cps) == 0 {
		return fmt.Errorf("%w: not read by ReadRecording", ErrRecording)
	}
	first := rc.cps[0]
	p, _, _, err := pool.ReadState(first.state, replayBase)
	if err != nil {
		return fmt.Errorf("%w: the first checkpoint: %w", ErrRecording, err)
	}
	rec := &Recorder{half: math.MaxInt, steps: rc.Total - uint64(len(rc.Steps)),
		attached: true, origin: replayBase, prev: first.prev}
	w := &Pool[uint64]{p: p, r: rec, seats: map[uint64]int32{}}
	for _, s := range first.known {
		// The recorder knew the resource in seat s: so does the replay,
		// whose stand-in there is s+1.
		if p.SeatOf(uint64(s)+1) != s {
			return fmt.Errorf("%w: the first checkpoint knows seat %d, which holds nothing", ErrRecording, s)
		}
		w.seats[uint64(s)+1] = s
	}
	i := 0
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: replaying step %d panicked: %v", ErrRecording, rc.Total-uint64(len(rc.Steps)-i), v)
		}
	}()

	// The stand-in in each seat: ReadState numbers seat s as s+1; a
	// resource made in the replay is numbered from 2^32 on, past any seat.
	bySeat := map[int32]uint64{}
	next := uint64(1) << 32
	item := func(ref uint64) (uint64, bool) {
		if ref == 0 {
			next++
			return next - 1, true
		}
		s := int32(ref - 1)
		if v, ok := bySeat[s]; ok && p.SeatOf(v) == s {
			return v, true
		}
		if v := uint64(s) + 1; p.SeatOf(v) == s {
			return v, true
		}
		return 0, false
	}
	seated := func(v uint64) {
		if s := p.SeatOf(v); s >= 0 {
			bySeat[s] = v
		}
	}

	var scratch []byte
	cp := 1
	for i = 0; i <= len(rc.Steps); i++ {
		index := rc.Total - uint64(len(rc.Steps)-i)
		if cp < len(rc.cps) && rc.cps[cp].step == i {
			scratch, err = appendCheckpoint(scratch[:0], p, rec, w.seats)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrRecording, err)
			}
			if string(scratch) != string(rc.cps[cp].raw) {
				return &Divergence{Index: index, Op: opCheckpoint.String(),
					Want: "the state recorded", Got: "a state that " + diffAt(rc.cps[cp].raw, scratch)}
			}
			cp++
		}
		if i == len(rc.Steps) {
			break
		}
		s := rc.Steps[i]
		now := replayBase.Add(s.At)
		rec.cur = rec.cur[:0]
		var v uint64
		ok := true
		switch s.op {
		case opTake:
			w.Take(now, s.Roll, s.CPU)
		case opMade:
			if v, ok = item(s.Ref); ok {
				w.Made(v, s.Gen, now, s.Extra)
				seated(v)
			}
		case opUnmade:
			w.Unmade(now, s.Roll, s.Guard)
		case opTakeAs:
			w.TakeAs(now, s.Roll, s.CPU, s.Class)
		case opMadeAs:
			if v, ok = item(s.Ref); ok {
				w.MadeAs(v, s.Gen, s.Class, now, s.Extra)
				seated(v)
			}
		case opUnmadeAs:
			w.UnmadeAs(now, s.Roll, s.Guard, s.Class)
		case opServe:
			fronts := make([]pool.Front, len(s.Fronts))
			for i, f := range s.Fronts {
				fronts[i] = pool.Front{Class: f.Class, Since: replayBase.Add(f.Since)}
			}
			w.Serve(now, fronts)
		case opReserve:
			w.Reserve(now, s.Roll, s.CPU)
		case opGive:
			if v, ok = item(s.Ref); ok {
				w.Give(v, now)
				seated(v)
			}
		case opDrop:
			if v, ok = item(s.Ref); ok {
				w.Drop(v, now)
			}
		case opEvict:
			w.Evict(now)
		case opClose:
			w.Close()
		case opReset:
			w.Reset(now, s.Over)
		case opResetFor:
			if v, ok = item(s.Ref); ok {
				w.ResetFor(v, now, s.Hold)
			}
		case opCeiling:
			w.SetCeiling(s.N, now)
		case opLimits:
			if _, err := w.SetLimits(s.Limits, now); err != nil {
				return fmt.Errorf("%w: step %d: %w", ErrRecording, s.Index, err)
			}
		case opRefusal:
			w.Refusal(now)
		case opLoans:
			w.Loans(now)
		case opAdmit:
			w.Admit(now, s.N, s.Wait)
		}
		if !ok {
			return &Divergence{Index: s.Index, Op: s.Op, Want: s.String(),
				Got: fmt.Sprintf("no resource in seat %d to call it with", int64(s.Ref)-1)}
		}
		got := rec.cur
		if string(got) != string(s.raw) {
			g := readStep(&wire.Reader{B: got})
			g.Index = s.Index
			g.At = s.At - s.delta + g.delta
			return &Divergence{Index: s.Index, Op: s.Op, Want: s.String(), Got: g.String()}
		}
	}
	scratch = append(scratch[:0], byte(opEnd))
	scratch = wire.AppendU(scratch, rc.Total)
	scratch = appendBooks(scratch, p.Books())
	if string(scratch) != string(rc.end) {
		return &Divergence{Index: rc.Total, Op: opEnd.String(),
			Want: "books " + describeEnd(rc.end), Got: "books " + describeEnd(scratch)}
	}
	return nil
}

// describeEnd renders an end record's books.
func describeEnd(b []byte) string {
	r := &wire.Reader{B: b, Off: 1}
	r.U()
	parts := make([]string, len(bookNames))
	for i, n := range bookNames {
		parts[i] = n + "=" + strconv.FormatUint(r.U(), 10)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// diffAt says where two encodings first differ.
func diffAt(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("differs from byte %d of %d", i, len(want))
}
