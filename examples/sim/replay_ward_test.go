package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// wardedRun records a pool with a breaker, a limiter and a backoff serving
// n callers, one every gap, each holding for hold, with every fifth dial
// failing; it returns the recording.
func wardedRun(t *testing.T, n int, gap, hold time.Duration) []byte {
	t.Helper()
	base := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	b := ward.DefaultBackoff
	w := ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, base), Backoff: &b,
		Limiter: ward.NewLimiter(ward.Aimd{Initial: 2, Min: 1, Max: 3, Slow: time.Second, Backoff: 0.9})}
	raw, err := pool.New[int](pool.Limits{Size: 4, Idle: 4, Keep: time.Minute}, w)
	if err != nil {
		t.Fatal(err)
	}
	p, err := record.Wrap(raw, record.New(0), base)
	if err != nil {
		t.Fatal(err)
	}
	type loan struct {
		item int
		back time.Time
	}
	var out []loan
	next, dials := 1, 0
	for i := range n {
		now := base.Add(time.Duration(i) * gap)
		for len(out) > 0 && !out[0].back.After(now) {
			p.Give(out[0].item, out[0].back)
			out = out[1:]
		}
		switch a := p.Take(now, float64(i%10)/10, 0); a.Kind {
		case pool.Ready:
			out = append(out, loan{a.Item, now.Add(hold)})
		case pool.Make:
			if dials++; dials%5 == 0 {
				p.Unmade(now, 0.5, ward.GuardNone)
				continue
			}
			p.Made(next, a.Gen, now, 0)
			out = append(out, loan{next, now.Add(hold)})
			next++
		}
	}
	return p.Recording(nil)
}

// -replay of a recording with a breaker, a limiter and a backoff rebuilds
// that ward, guard for guard: the recording replays with no difference,
// the simulation runs on the recorded ward, and -compare ward=none says
// what the ward changed.
func TestReplayRebuildsTheRecordedWard(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pool.rec")
	if err := os.WriteFile(file, wardedRun(t, 400, 5*time.Millisecond, 12*time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	out := sim(t, "-replay", file, "-table=false", "-compare", "ward=none")
	for _, want := range []string{
		"the recorded ward rebuilt (breaker+limiter+backoff); all ", "replayed with no difference",
		"A: Size 4, Idle 4, Keep 1m0s, recorded ward (breaker+limiter+backoff)",
		"B: Size 4, Idle 4, Keep 1m0s, ward off (ward=none)",
		"wait p99", "timed out / shed / dial errors", "dials / to a dead backend",
		"backend        a simulated dial fails when the last recorded dial before it failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// -ward replaces the recorded ward, and says so.
	out = sim(t, "-replay", file, "-table=false", "-ward", "none")
	if !strings.Contains(out, "-ward replaces the recorded ward") || strings.Contains(out, "recorded ward (") {
		t.Errorf("-ward none:\n%s", out)
	}
}

// hotRun records a pool with a shedder serving n callers, one every gap,
// each holding for hold, the CPU hot (980‰) over the second half of the
// run; it returns the recording and how many takes the shedder refused.
func hotRun(t *testing.T, n int, gap, hold time.Duration) ([]byte, int) {
	t.Helper()
	base := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	sh := ward.Shed{Size: 4, Window: time.Second, CPU: 900, Latency: time.Millisecond, Beta: 0.5, Floor: 0.1}
	raw, err := pool.New[int](pool.Limits{Size: 8, Idle: 8, Keep: time.Minute}, ward.Ward{Shedder: ward.NewShedder(sh, base)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := record.Wrap(raw, record.New(0), base)
	if err != nil {
		t.Fatal(err)
	}
	type loan struct {
		item int
		back time.Time
	}
	var out []loan
	next, shed := 1, 0
	for i := range n {
		now := base.Add(time.Duration(i) * gap)
		for len(out) > 0 && !out[0].back.After(now) {
			p.Give(out[0].item, out[0].back)
			out = out[1:]
		}
		cpu := 200
		if i > n/2 {
			cpu = 980
		}
		switch a := p.Take(now, 0, cpu); a.Kind {
		case pool.Ready:
			out = append(out, loan{a.Item, now.Add(hold)})
		case pool.Make:
			p.Made(next, a.Gen, now, 0)
			out = append(out, loan{next, now.Add(hold)})
			next++
		case pool.Shed:
			shed++
		}
	}
	return p.Recording(nil), shed
}

// -replay of a recording with a shedder reads the CPU as recorded: the
// rebuilt shedder turns hot when the recorded one did, and -compare
// ward=none shows the sheds it cost.
func TestReplayReadsTheRecordedCPU(t *testing.T) {
	data, shed := hotRun(t, 600, 2*time.Millisecond, 30*time.Millisecond)
	if shed == 0 {
		t.Fatal("the recorded shedder never shed")
	}
	file := filepath.Join(t.TempDir(), "hot.rec")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := sim(t, "-replay", file, "-table=false", "-compare", "ward=none")
	if !strings.Contains(out, "the simulation reads the CPU as recorded") || !strings.Contains(out, "recorded ward (shedder)") {
		t.Fatalf("output:\n%s", out)
	}
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "timed out / shed / dial errors") {
			line = l
		}
	}
	f := strings.Fields(line)
	// "timed out / shed / dial errors  A0 / Ashed / A2  B0 / Bshed / B2"
	if len(f) < 17 || f[9] == "0" || f[14] != "0" {
		t.Fatalf("sheds: want some under the recorded ward and none without: %q\n%s", line, out)
	}
	t.Logf("recorded %d sheds; %s", shed, strings.TrimSpace(line))
}

// recordedDials and recordedCPU read a recording's dial outcomes and CPU
// readings as functions of the instant: the latest at or before it.
func TestRecordedDialsAndCPU(t *testing.T) {
	base := time.Unix(1000, 0)
	raw, _ := pool.New[int](pool.Limits{Size: 3}, ward.Ward{})
	p, err := record.Wrap(raw, record.New(0), base)
	if err != nil {
		t.Fatal(err)
	}
	p.Take(base, 0, 100)
	p.Made(1, 0, base.Add(10*time.Millisecond), 0)             // ok at 10ms
	p.Take(base.Add(20*time.Millisecond), 0, 950)              // cpu 950 from 20ms
	p.Unmade(base.Add(30*time.Millisecond), 0, ward.GuardNone) // failed at 30ms
	p.Take(base.Add(40*time.Millisecond), 0, 300)              // cpu 300 from 40ms
	p.Made(2, 0, base.Add(50*time.Millisecond), 0)             // ok at 50ms
	rc, err := record.ReadRecording(p.Recording(nil))
	if err != nil {
		t.Fatal(err)
	}
	fails, cpu := recordedDials(rc), recordedCPU(rc)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		at   time.Duration
		fail bool
		cpu  int
	}{{ms(0), false, 100}, {ms(5), false, 100}, {ms(25), false, 950}, {ms(30), true, 950}, {ms(45), true, 300}, {ms(50), false, 300}, {ms(99), false, 300}} {
		if got := fails(c.at); got != c.fail {
			t.Errorf("dial at %v fails %v, want %v", c.at, got, c.fail)
		}
		if got := cpu(c.at); got != c.cpu {
			t.Errorf("cpu at %v = %d, want %d", c.at, got, c.cpu)
		}
	}
}
