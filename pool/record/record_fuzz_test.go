package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// sampleRecording is a small recording with most kinds of steps in it, a
// backoff, Life (so a birth heap) and a ring that has rolled (so two
// checkpoints).
func sampleRecording() []byte {
	b := ward.DefaultBackoff
	now := time.Unix(500, 0)
	raw, _ := pool.New[*int](pool.Limits{Size: 3, Idle: 2, Keep: time.Second, Life: 3 * time.Second}, ward.Ward{Backoff: &b})
	p, err := Wrap(raw, New(MinLimit), now)
	if err != nil {
		panic(err)
	}
	var lent []*int
	for i := range 400 {
		now = now.Add(time.Duration(i%7) * 90 * time.Millisecond)
		switch a := p.Take(now, float64(i%10)/10, 0); a.Kind {
		case pool.Make:
			if i%9 == 0 {
				p.Unmade(now, 0.5, ward.GuardNone)
				continue
			}
			v := i
			p.Made(&v, a.Gen, now, time.Duration(i%3)*time.Millisecond)
			lent = append(lent, &v)
		case pool.Ready:
			lent = append(lent, a.Item)
		}
		if len(lent) > 1 {
			v := lent[0]
			lent = lent[1:]
			switch i % 6 {
			case 0:
				p.Drop(v, now)
			case 1:
				p.Give(v, now.Add(-time.Millisecond)) // late: see Pool.Give
			default:
				p.Give(v, now)
			}
		}
		switch i % 50 {
		case 10:
			p.Evict(now)
		case 20:
			p.Loans(now)
		case 30:
			p.Refusal(now)
		case 40:
			p.Reset(now, time.Duration(i%3)*time.Second) // at once, or rolling
		}
	}
	p.Close()
	return p.Recording(nil)
}

// checkReplayError fails t unless err is nil, a *Divergence or wraps
// ErrRecording, and flags a recovered panic: the reader's checks should
// refuse the bytes before a replay gets that far.
func checkReplayError(t *testing.T, err error) {
	t.Helper()
	var d *Divergence
	switch {
	case err == nil, errors.As(err, &d):
	case !errors.Is(err, ErrRecording):
		t.Fatalf("an error that is not ErrRecording: %v", err)
	case strings.Contains(err.Error(), "panicked"):
		t.Fatalf("the replay panicked (recovered): %v", err)
	}
}

// TestTruncatedRecordingsAreRefused cuts a recording at every length: each
// is refused with ErrRecording.
func TestTruncatedRecordingsAreRefused(t *testing.T) {
	data := sampleRecording()
	if err := Replay(data); err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		if err := Replay(data[:n]); !errors.Is(err, ErrRecording) {
			t.Fatalf("cut at %d of %d: %v", n, len(data), err)
		}
	}
	// Cut, then given a right checksum: the reader's own checks refuse it.
	for n := len(magic); n < len(data)-8; n++ {
		cut := append(append([]byte(nil), data[:n]...), make([]byte, 8)...)
		cut = mend(cut, 0, cut[0])
		if err := Replay(cut); !errors.Is(err, ErrRecording) {
			t.Fatalf("cut at %d of %d, checksum mended: %v", n, len(data), err)
		}
	}
}

// TestCorruptedRecordingsNeverPanic flips every byte of a recording: with
// the checksum as it was, each is refused; with the checksum mended, each
// is refused, or replays to a divergence or to no difference (a flipped
// draw that no guard reads changes nothing), and none panics.
func TestCorruptedRecordingsNeverPanic(t *testing.T) {
	data := sampleRecording()
	for i := range len(data) - 8 {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := append([]byte(nil), data...)
			bad[i] ^= x
			if err := Replay(bad); !errors.Is(err, ErrRecording) || !strings.Contains(err.Error(), "checksum") && i >= len(magic) {
				t.Fatalf("byte %d ^ %#x, checksum not mended: %v", i, x, err)
			}
			checkReplayError(t, Replay(mend(bad, i, bad[i])))
		}
	}
	if err := Replay([]byte("wprc")); !errors.Is(err, ErrRecording) {
		t.Fatalf("magic alone: %v", err)
	}
	for v, says := range map[byte]string{3: "version 3, written by an older", 4: "version 4, written by an older wardpool (before recordings held classes", 6: "version 6"} {
		other := append([]byte(nil), data...)
		other[len(magic)] = v
		if err := Replay(mend(other, 0, other[0])); !errors.Is(err, ErrRecording) || !strings.Contains(err.Error(), says) {
			t.Fatalf("version %d: %v", v, err)
		}
	}
}

// FuzzReplay feeds arbitrary bytes to the reader and the replayer, once as
// they are and once with the checksum made right (so that the reader's own
// checks are what stands between the bytes and a Pool): a clear error or
// none, never a panic. The seeds are a recording, cut and flipped.
func FuzzReplay(f *testing.F) {
	data := sampleRecording()
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(data[:len(magic)+3])
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/3] ^= 0x40
	f.Add(flipped)
	f.Add([]byte{})
	f.Fuzz(replayAnyBytes)
}

// replayAnyBytes is the body of the replay fuzzers: b as it is, and with
// its checksum made right (so that the reader's own checks are what stands
// between the bytes and a Pool), gives a clear error or none, never a panic.
func replayAnyBytes(t *testing.T, b []byte) {
	checkReplayError(t, Replay(b))
	if len(b) >= 8 {
		checkReplayError(t, Replay(mend(append([]byte(nil), b...), 0, b[0])))
	}
}

// TestSampleRecordingHasItAll: the fuzz seed holds two checkpoints and the
// kinds of steps the corruption tests mean to reach.
func TestSampleRecordingHasItAll(t *testing.T) {
	rc, err := ReadRecording(sampleRecording())
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, s := range rc.Steps {
		ops[s.Op] = true
	}
	if len(rc.cps) != 2 || len(ops) < 10 {
		t.Fatalf("%d checkpoints, ops %v", len(rc.cps), ops)
	}
}
