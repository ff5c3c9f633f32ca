package engine

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// poolRecording drives a recorded pool.Pool through the calls ops spell,
// one a byte (take, made, unmade, give, drop, evict, relent, reserve, and
// the clock moving), as a runtime may make them in any order, and returns
// the recording.
func poolRecording(t testing.TB, ops []byte) []byte { return poolRecordingIn(t, ops, 0) }

// poolRecordingIn is poolRecording with a Recorder of limit bytes.
func poolRecordingIn(t testing.TB, ops []byte, limit int) []byte {
	raw, err := pool.New[int](pool.Limits{Size: 3, Idle: 2, Keep: 40 * time.Millisecond}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	p, err := record.Wrap(raw, record.New(limit), now)
	if err != nil {
		t.Fatal(err)
	}
	var lent []int
	making, next := 0, 1
	for _, op := range ops {
		arg := int(op >> 4)
		switch op & 15 {
		case 0, 1:
			switch a := p.Take(now, float64(arg)/16, 0); a.Kind {
			case pool.Ready:
				lent = append(lent, a.Item)
			case pool.Make:
				making++
			}
		case 2:
			if making > 0 {
				making--
				if p.Made(next, 0, now, 0) { // no Reset here: generation 0
					lent = append(lent, next)
				}
				next++
			}
		case 3:
			if making > 0 {
				making--
				p.Unmade(now, 0.5, ward.GuardNone)
			}
		case 4, 5:
			if len(lent) > 0 {
				i := arg % len(lent)
				p.Give(lent[i], now)
				lent = slices.Delete(lent, i, i+1)
			}
		case 6:
			if len(lent) > 0 {
				i := arg % len(lent)
				p.Drop(lent[i], now)
				lent = slices.Delete(lent, i, i+1)
			}
		case 7:
			p.Evict(now)
		case 8:
			if len(lent) > 0 {
				i := arg % len(lent)
				p.Give(lent[i], now)
				lent = slices.Delete(lent, i, i+1)
			}
		case 9:
			if p.Reserve(now, 0.5, 0).Kind == pool.Make {
				making++
			}
		default:
			now = now.Add(time.Duration(arg+1) * time.Millisecond)
		}
	}
	return p.Recording(nil)
}

// checkLoad holds a load read from a recording to the load CSV's rules,
// and replays it.
func checkLoad(t *testing.T, kl *KeeperLoad) {
	t.Helper()
	for i, r := range kl.Rows {
		if r.Asked < 0 || r.Acquired >= 0 && r.Acquired < r.Asked || r.Release >= 0 && r.Release < r.Acquired ||
			r.Release >= 0 && r.Acquired < 0 || i > 0 && r.Asked < kl.Rows[i-1].Asked {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if len(kl.Rows) > 2000 {
		return
	}
	s, _ := Builtin("steady")
	s.Limits, s.Seconds = kl.Limits, int(kl.End()/time.Second)+1
	if _, err := Run(s, Options{Load: kl.Load(s.Hold)}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

func TestReadKeeperRefusesBadRecordings(t *testing.T) {
	good := poolRecording(t, []byte{0, 2, 0x10, 2, 0x1f, 4, 0x2f, 0, 5, 0x3f, 6, 7, 0x2f, 8, 0x18, 3, 9, 2, 0x4f, 0})
	kl, err := ReadKeeper(good)
	if err != nil {
		t.Fatal(err)
	}
	checkLoad(t, kl)
	// Every cut, and every byte flipped, reads as a bad recording.
	for n := range len(good) {
		if _, err := ReadKeeper(good[:n]); !errors.Is(err, record.ErrRecording) {
			t.Fatalf("cut at %d of %d: %v", n, len(good), err)
		}
	}
	for i := range good {
		bad := slices.Clone(good)
		bad[i] ^= 0x55
		if _, err := ReadKeeper(bad); !errors.Is(err, record.ErrRecording) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	// A recording with no acquire in it holds no load.
	if _, err := ReadKeeper(poolRecording(t, []byte{7, 0x1f})); !errors.Is(err, ErrKeeperLoad) {
		t.Fatalf("no acquire: %v", err)
	}
	if IsKeeperRecording([]byte("asked,acquired,released\n")) || !IsKeeperRecording(good) {
		t.Fatal("IsKeeperRecording mistakes a CSV for a recording, or the other way")
	}
}

// A recording whose ring dropped its start reads too: the loans that began
// before it are left out, counted, and the rest are read.
func TestReadKeeperOfARolledRecording(t *testing.T) {
	// One loan held from the start to the end, which the ring drops the
	// start of wherever it cuts; the others come and go around it (their
	// gives pick lent[1], never the held one at lent[0]).
	ops := []byte{0, 2}
	for i := range 3000 {
		ops = append(ops, 0, 2, 0x10, 2, byte(i%7)<<4|0xf, 0x14, 0x1f, 0x14, 0, 0x2f, 0x15)
	}
	ops = append(ops, 4)
	kl, err := ReadKeeper(poolRecordingIn(t, ops, record.MinLimit))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps, %d dropped: %v", kl.Steps, kl.Dropped, kl.Counts)
	if kl.Dropped == 0 || kl.Counts.Before == 0 || kl.Counts.Lock == 0 {
		t.Fatalf("%d dropped: %v", kl.Dropped, kl.Counts)
	}
	checkLoad(t, kl)
}

// FuzzReadKeeper: any bytes give a load or an error wrapping
// record.ErrRecording or ErrKeeperLoad, never a panic.
func FuzzReadKeeper(f *testing.F) {
	good := poolRecording(f, []byte{0, 2, 0x10, 2, 0x1f, 4, 0x2f, 0, 5, 6, 7, 8, 3, 9})
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("wprc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kl, err := ReadKeeper(data)
		if err != nil {
			if !errors.Is(err, record.ErrRecording) && !errors.Is(err, ErrKeeperLoad) {
				t.Fatalf("error wrapping neither record.ErrRecording nor ErrKeeperLoad: %v", err)
			}
			return
		}
		checkLoad(t, kl)
	})
}

// FuzzKeeperSteps: whatever calls a runtime made into its pool, in any
// order, the recording reads as a load the sim replays, or as no load.
func FuzzKeeperSteps(f *testing.F) {
	f.Add([]byte{0, 2, 0x10, 2, 0x1f, 4, 0x2f, 0, 5, 6, 7, 8, 3, 9})
	f.Add([]byte{0, 0, 0, 0, 2, 2, 3, 0x1f, 0x14, 0xff, 7, 0x38, 4, 0, 0x16})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		kl, err := ReadKeeper(poolRecording(t, ops))
		if err != nil {
			if !errors.Is(err, ErrKeeperLoad) {
				t.Fatalf("a pool's own recording: %v", err)
			}
			return
		}
		checkLoad(t, kl)
	})
}

// BenchmarkReadKeeper reads a full default-size recording (1 MiB of
// steps) into a load.
func BenchmarkReadKeeper(b *testing.B) {
	var ops []byte
	for i := range 40_000 {
		ops = append(ops, 0, 2, 0x10, 2, byte(i%7)<<4|0xf, 4, 0x1f, 4, 0, 0x2f, 5)
	}
	data := poolRecordingIn(b, ops, 0)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadKeeper(data); err != nil {
			b.Fatal(err)
		}
	}
}
