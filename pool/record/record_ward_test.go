package record

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
	"pgregory.net/rapid"
)

// driveStart is where drivePool's clock starts; guards are built there.
var driveStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// drawWard draws a ward with any of the five guards, on small policies so
// that a short run moves them: windows of a few buckets, a shedder that
// turns hot, a bucket that runs dry, a limiter that binds.
func drawWard(t *rapid.T, at time.Time) ward.Ward {
	var w ward.Ward
	if rapid.Bool().Draw(t, "backoff") {
		b := ward.DefaultBackoff
		b.Jitter = []ward.Jitter{ward.Rigid, ward.Full, ward.Equal, ward.Decorrelated, ward.Spread(0.3)}[rapid.IntRange(0, 4).Draw(t, "jitter")]
		w.Backoff = &b
	}
	if rapid.Bool().Draw(t, "breaker") {
		s := ward.DefaultSre
		s.Size = rapid.IntRange(1, 6).Draw(t, "sre size")
		s.Window = time.Duration(rapid.IntRange(1, 6).Draw(t, "sre window")) * time.Second
		s.Protection = float64(rapid.IntRange(0, 3).Draw(t, "protection"))
		w.Breaker = ward.NewBreaker(s, at)
	}
	if rapid.Bool().Draw(t, "bucket") {
		w.Bucket = ward.NewBucket(rapid.Float64Range(0, 4).Draw(t, "rate"), rapid.Float64Range(0, 3).Draw(t, "burst"), at)
	}
	if rapid.Bool().Draw(t, "shedder") {
		s := ward.DefaultShed
		s.Size = rapid.IntRange(1, 6).Draw(t, "shed size")
		s.Window = time.Duration(rapid.IntRange(1, 5).Draw(t, "shed window")) * time.Second
		s.Latency = time.Duration(rapid.IntRange(1, 1000).Draw(t, "latency")) * time.Millisecond
		w.Shedder = ward.NewShedder(s, at)
	}
	if rapid.Bool().Draw(t, "limiter") {
		a := ward.Aimd{Initial: rapid.IntRange(1, 4).Draw(t, "initial"), Min: 1, Max: rapid.IntRange(1, 6).Draw(t, "max"),
			Slow: time.Duration(rapid.IntRange(0, 2000).Draw(t, "slow")) * time.Millisecond, Backoff: 0.5}
		w.Limiter = ward.NewLimiter(a)
	}
	return w
}

// TestRecordReplayEveryGuard records random runs of pools with every
// combination of guards, some rolling the ring, and replays each with no
// difference: the checkpoints carry the guards, every later checkpoint
// checks them, and the steps carry every input they read.
func TestRecordReplayEveryGuard(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := pool.Limits{Size: rapid.IntRange(0, 5).Draw(t, "size"), Idle: rapid.IntRange(0, 5).Draw(t, "idle"),
			Keep: time.Duration(rapid.IntRange(0, 3).Draw(t, "keep")) * time.Second,
			Life: time.Duration(rapid.IntRange(0, 5).Draw(t, "life")) * time.Second}
		// Guards built a little before the pool's first call, or long before.
		built := driveStart.Add(-time.Duration(rapid.IntRange(0, 100_000).Draw(t, "built ms")) * time.Millisecond)
		w := drawWard(t, built)
		raw, err := pool.New[*int](l, w)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Wrap(raw, New(MinLimit), driveStart)
		if err != nil {
			t.Fatal(err)
		}
		drivePool(t, p, rapid.SampledFrom([]int{0, 1, 20, 300, 3000}).Draw(t, "steps"))
		rc, err := ReadRecording(p.Recording(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := guardsOf(rc.Ward()), guardsOf(w); got != want {
			t.Fatalf("the recording's ward has guards %v, the pool's %v", got, want)
		}
		if err := rc.Replay(); err != nil {
			t.Fatal(err)
		}
	})
}

// wardRecording is a small recording of a pool with all five guards, the
// shedder hot at times, rolled once: the seed of the corruption tests for
// the ward's sections.
func wardRecording() []byte {
	b := ward.DefaultBackoff
	s := ward.DefaultSre
	s.Size, s.Window = 4, 2*time.Second
	sh := ward.DefaultShed
	sh.Size, sh.Window = 4, 2*time.Second
	start := time.Unix(500, 0)
	w := ward.Ward{Backoff: &b, Breaker: ward.NewBreaker(s, start), Bucket: ward.NewBucket(3, 2, start),
		Shedder: ward.NewShedder(sh, start), Limiter: ward.NewLimiter(ward.Aimd{Initial: 2, Min: 1, Max: 4, Slow: 300 * time.Millisecond})}
	raw, _ := pool.New[*int](pool.Limits{Size: 3, Idle: 2, Keep: time.Second, Life: 3 * time.Second}, w)
	p, err := Wrap(raw, New(MinLimit), start)
	if err != nil {
		panic(err)
	}
	now := start
	var lent []*int
	for i := range 500 {
		now = now.Add(time.Duration(i%7) * 90 * time.Millisecond)
		cpu := 0
		if i%40 > 30 {
			cpu = 980
		}
		switch a := p.Take(now, float64(i%10)/10, cpu); a.Kind {
		case pool.Make:
			if i%5 == 0 {
				p.Unmade(now, 0.5, ward.GuardNone)
				continue
			}
			v := i
			p.Made(&v, a.Gen, now, 0)
			lent = append(lent, &v)
		case pool.Ready:
			lent = append(lent, a.Item)
		}
		if len(lent) > 1 {
			v := lent[0]
			lent = lent[1:]
			if i%6 == 0 {
				p.Drop(v, now)
			} else {
				p.Give(v, now)
			}
		}
		if i%50 == 30 {
			p.Refusal(now)
		}
	}
	return p.Recording(nil)
}

// TestWardRecordingCorrupted cuts the ward's recording at every length and
// flips every byte of it (its checksum mended, so the reader's own checks
// are tested): each is refused with ErrRecording, or replays to a
// divergence or to no difference, and none panics.
func TestWardRecordingCorrupted(t *testing.T) {
	data := wardRecording()
	rc, err := ReadRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	if g := guardsOf(rc.Ward()); len(rc.cps) < 2 || g != [5]bool{true, true, true, true, true} {
		t.Fatalf("%d checkpoints, guards %v: the seed does not cover the ward's sections", len(rc.cps), g)
	}
	if err := rc.Replay(); err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		if err := Replay(data[:n]); !errors.Is(err, ErrRecording) {
			t.Fatalf("cut at %d of %d: %v", n, len(data), err)
		}
	}
	for n := len(magic); n < len(data)-8; n += 3 {
		cut := append(append([]byte(nil), data[:n]...), make([]byte, 8)...)
		if err := Replay(mend(cut, 0, cut[0])); !errors.Is(err, ErrRecording) {
			t.Fatalf("cut at %d of %d, checksum mended: %v", n, len(data), err)
		}
	}
	diverged := 0
	for i := range len(data) - 8 {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			bad := append([]byte(nil), data...)
			bad[i] ^= x
			err := Replay(mend(bad, i, bad[i]))
			checkReplayError(t, err)
			var d *Divergence
			if errors.As(err, &d) {
				diverged++
			}
		}
	}
	if diverged == 0 {
		t.Fatal("no flipped byte replayed to a divergence")
	}
	// An older version's header is refused by name.
	old := append([]byte(nil), data...)
	old[len(magic)] = 2
	if err := Replay(mend(old, 0, old[0])); !errors.Is(err, ErrRecording) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2: %v", err)
	}
}

// FuzzReplayWard is FuzzReplay seeded with the ward's recording.
func FuzzReplayWard(f *testing.F) {
	data := wardRecording()
	f.Add(data)
	f.Add(data[:len(data)/2])
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/3] ^= 0x40
	f.Add(flipped)
	f.Fuzz(replayAnyBytes)
}

// TestRecordingWard: Recording.Ward rebuilds the recorded guards, fresh on
// every call, and a pool built with them replays the recorded calls.
func TestRecordingWard(t *testing.T) {
	rc, err := ReadRecording(wardRecording())
	if err != nil {
		t.Fatal(err)
	}
	a, b := rc.Ward(), rc.Ward()
	if a.Breaker == nil || a.Breaker == b.Breaker || a.Limiter == nil {
		t.Fatalf("Ward() = %+v", a)
	}
	want := ward.Aimd{Initial: 2, Min: 1, Max: 4, Slow: 300 * time.Millisecond, Backoff: 0.9}
	if diff := cmp.Diff(want, a.Limiter.Policy()); diff != "" {
		t.Fatalf("Ward().Limiter.Policy() (-want +got):\n%s", diff)
	}
	if a.Backoff == nil {
		t.Fatal("Backoff = nil")
	}
	// Jitter's kind is unexported: compare Jitters with ==, as != did.
	if diff := cmp.Diff(ward.DefaultBackoff, *a.Backoff, cmpopts.EquateComparable(ward.Jitter{})); diff != "" {
		t.Fatalf("Backoff (-want +got):\n%s", diff)
	}
}

// guardsOf says which of the five guards w has, in the state's order.
func guardsOf(w ward.Ward) [5]bool {
	return [5]bool{w.Backoff != nil, w.Breaker != nil, w.Bucket != nil, w.Shedder != nil, w.Limiter != nil}
}
