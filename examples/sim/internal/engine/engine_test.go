package engine

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
	"pgregory.net/rapid"
)

func builtin(t testing.TB, name string) Scenario {
	t.Helper()
	s, ok := Builtin(name)
	if !ok {
		t.Fatalf("no built-in %q", name)
	}
	return s
}

// runCSV runs s (on load, when given) and returns the result and the CSV
// it recorded.
func runCSV(t *testing.T, s Scenario, load Load) (*Result, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := NewCSVWriter(&buf)
	r, err := Run(s, Options{Load: load, Record: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return r, buf.Bytes()
}

// The heart of "what if": a recording replayed with the limits it was made
// with gives back every decision, instant and row exactly.
func TestReplayWithTheSameLimitsReproducesTheRun(t *testing.T) {
	partial := builtin(t, "outage")
	partial.Name = "partial outage, breaker only"
	partial.Outages[0].Fraction = 0.5
	partial.Breaks[0].Fraction = 0.1
	partial.Backoff = false
	for _, s := range []Scenario{builtin(t, "burst"), builtin(t, "slowdown"), builtin(t, "outage"), partial} {
		t.Run(s.Name, func(t *testing.T) {
			orig, csv := runCSV(t, s, nil)
			rec, err := ReadCSV(bytes.NewReader(csv))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Rows) != orig.Sum.Arrived {
				t.Fatalf("%d rows for %d callers", len(rec.Rows), orig.Sum.Arrived)
			}
			again, csv2 := runCSV(t, s, rec.Load(s.Hold))
			if !bytes.Equal(csv, csv2) {
				a, b := strings.Split(string(csv), "\n"), strings.Split(string(csv2), "\n")
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Fatalf("replay differs at line %d:\n recorded %s\n replayed %s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("replay has %d lines, the recording %d", len(b), len(a))
			}
			if !slices.Equal(orig.Rows, again.Rows) || orig.Sum != again.Sum {
				t.Fatalf("replay's seconds or summary differ:\n%+v\n%+v", orig.Sum, again.Sum)
			}
			// The recording is not trivial: it has queued and made callers.
			wants := []string{",Make\n", ",Ready\n"}
			if s.Name == "burst" {
				wants = append(wants, ",queued Wait Ready\n", ",Wait Ready\n")
			}
			for _, want := range wants {
				if !bytes.Contains(csv, []byte(want)) {
					t.Errorf("recording has no %q", want)
				}
			}
		})
	}
}

// A replay against other limits changes the answers: the replay really
// drives the pool, it does not echo the recording.
func TestReplayWithOtherLimitsDiffers(t *testing.T) {
	s := builtin(t, "burst")
	orig, csv := runCSV(t, s, nil)
	rec, err := ReadCSV(bytes.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	s.Limits.Size, s.Limits.Idle = 24, 24
	wider, _ := runCSV(t, s, rec.Load(s.Hold))
	if wider.Sum.Saturated >= orig.Sum.Saturated || orig.Sum.Saturated == 0 {
		t.Fatalf("Size 24 saturated %v, Size 12 %v: want less with more room", wider.Sum.Saturated, orig.Sum.Saturated)
	}
	if wider.Sum.Arrived != orig.Sum.Arrived {
		t.Fatalf("the same recording gave %d and %d callers", wider.Sum.Arrived, orig.Sum.Arrived)
	}
}

func TestSameSeedSameRunOtherSeedOtherRun(t *testing.T) {
	s := builtin(t, "outage")
	a, _ := Run(s, Options{})
	b, _ := Run(s, Options{})
	if !slices.Equal(a.Rows, b.Rows) || a.Sum != b.Sum {
		t.Fatal("the same seed gave two runs")
	}
	s.Seed = 2
	c, _ := Run(s, Options{})
	if slices.Equal(a.Rows, c.Rows) {
		t.Fatal("seed 2 gave the run of seed 1")
	}
}

// Two configurations on the same seed see the same callers: the load's
// draws do not depend on the pool's answers.
func TestLimitsDoNotChangeTheLoad(t *testing.T) {
	s := builtin(t, "outage")
	a, _ := Run(s, Options{})
	s.Limits.Size, s.Limits.Idle, s.Breaker, s.Backoff = 4, 2, false, false
	b, _ := Run(s, Options{})
	for i := range a.Rows {
		if a.Rows[i].Arrived != b.Rows[i].Arrived {
			t.Fatalf("second %d: %d and %d arrivals", i+1, a.Rows[i].Arrived, b.Rows[i].Arrived)
		}
	}
	if a.Sum == b.Sum {
		t.Fatal("different limits, same summary")
	}
}

// Every second's row agrees with the pool's books: gauges as read, and the
// counts as differences of the counters.
func TestRowsAgreeWithTheBooks(t *testing.T) {
	for _, name := range Builtins {
		s := builtin(t, name)
		n := 0
		check := booksCheck(t, name)
		_, err := Run(s, Options{Observe: func(x Second, b pool.Books) { n++; check(x, b) }})
		if err != nil {
			t.Fatal(err)
		}
		if n != s.Seconds {
			t.Fatalf("%s: %d rows for %d seconds", name, n, s.Seconds)
		}
	}
}

// booksCheck returns an Observe function that fails t when a row and the
// books disagree.
func booksCheck(t interface{ Fatalf(string, ...any) }, name string) func(Second, pool.Books) {
	var prev pool.Books
	prevMaking := 0
	return func(x Second, b pool.Books) {
		d := func(now, then uint64) int { return int(now - then) }
		making := b.Busy - x.Lent
		checks := []struct {
			what      string
			got, want int
		}{
			{"idle", x.Idle, b.Idle},
			{"making", x.Making, making},
			{"live", x.Lent + x.Idle + x.Making, b.Live},
			{"Ready", x.Answers[pool.Ready], d(b.Reused, prev.Reused)},
			{"Wait", x.Answers[pool.Wait], d(b.Waited, prev.Waited)},
			{"Later", x.Answers[pool.Later], d(b.Deferred, prev.Deferred)},
			{"Shed", x.Answers[pool.Shed], d(b.Shed, prev.Shed)},
			{"Make", x.Answers[pool.Make], d(b.Made, prev.Made) + d(b.Failed, prev.Failed) + making - prevMaking},
			{"opened", x.Opened, d(b.Made, prev.Made)},
			{"failed", x.Failed, d(b.Failed, prev.Failed)},
			{"retired", x.Retired, d(b.Retired, prev.Retired)},
			{"dropped", x.Dropped, d(b.Dropped, prev.Dropped)},
			{"served+orphans", x.Served + x.Orphans, d(b.Loans, prev.Loans)},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Fatalf("%s second %d: %s %d, books say %d", name, x.Sec, c.what, c.got, c.want)
			}
		}
		prev, prevMaking = b, making
	}
}

func TestScenarioErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		says string
	}{
		{"rate 100\nsize -1\n", 2, "size"},
		{"# a comment\n\nburst 8s 4s x2\n", 3, "ends before"},
		{"slow 1s 2s dial 10\n", 1, "x2"},
		{"slow 1s 2s speed x2\n", 1, "neither"},
		{"outage 1s 2s 1.5\n", 1, "0 to 1"},
		{"ward strong\n", 1, "unknown guard"},
		{"sizee 3\n", 1, "unknown setting"},
		{"hold\n", 1, "one value"},
		{"keep 5 parsecs\n", 1, "one value"},
		{"dial 1fortnight\n", 1, "not a duration"},
		{"seconds 0\n", 1, "whole number"},
		{"rate NaN\n", 1, "not a number"},
		{strings.Repeat("x", 5000) + "\n", 1, "too long"},
	} {
		_, err := Parse(strings.NewReader(c.text), builtin(t, "steady"))
		var le *LineError
		if !errors.As(err, &le) || le.Line != c.line || !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: got %v, want line %d saying %q", c.text, err, c.line, c.says)
		}
	}
	// Whole-scenario checks have no line, but still wrap ErrScenario.
	_, err := Parse(strings.NewReader("rate 0\n"), builtin(t, "steady"))
	if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "rate") {
		t.Errorf("rate 0: %v", err)
	}
}

func TestScenarioFileSetsEverything(t *testing.T) {
	text := `name  test  run
note  a note   # comment
seconds 60
seed 7
rate 250.5
hold 0.05
dial 1ms
size 16
keep 1m
life 1h
timeout 750ms
burst 10s 20s x3
slow 30s 40s hold x2
outage 45s 50s 0.25
break 46s 47s
ward breaker
`
	s, err := Parse(strings.NewReader(text), builtin(t, "steady"))
	if err != nil {
		t.Fatal(err)
	}
	want := Scenario{
		Name: "test run", Note: "a note", Seconds: 60, Seed: 7, Rate: 250.5,
		Hold: 50 * time.Millisecond, Dial: time.Millisecond,
		Limits:  pool.Limits{Size: 16, Idle: 16, Keep: time.Minute, Life: time.Hour},
		Timeout: 750 * time.Millisecond,
		Bursts:  []Burst{{Span{10 * time.Second, 20 * time.Second}, 3}},
		Slows:   []Slow{{Span{30 * time.Second, 40 * time.Second}, 1, 2}},
		Outages: []Outage{{Span{45 * time.Second, 50 * time.Second}, 0.25}},
		Breaks:  []Outage{{Span{46 * time.Second, 47 * time.Second}, 1}},
		Breaker: true,
	}
	if s.Name != want.Name || s.Note != want.Note || s.Seconds != want.Seconds || s.Seed != want.Seed ||
		s.Rate != want.Rate || s.Hold != want.Hold || s.Dial != want.Dial || s.Limits != want.Limits ||
		s.Timeout != want.Timeout || !slices.Equal(s.Bursts, want.Bursts) || !slices.Equal(s.Slows, want.Slows) ||
		!slices.Equal(s.Outages, want.Outages) || !slices.Equal(s.Breaks, want.Breaks) || s.Breaker != want.Breaker || s.Backoff != want.Backoff {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	o, err := Override(s, "idle=4; ward = none, size 8")
	if err != nil {
		t.Fatal(err)
	}
	if o.Limits.Size != 8 || o.Limits.Idle != 4 || o.Breaker || s.Limits.Size != 16 {
		t.Fatalf("override gave %+v (from %+v)", o.Limits, s.Limits)
	}
	if _, err := Override(s, "size=8, bogus=1"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a bad override: %v", err)
	}
}

func TestCSVErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		says string
	}{
		{"asked,acquired,released\n1.0,0.5,2\n", 2, "acquired before asked"},
		{"1.0,1.5,1.2\n", 1, "released before acquired"},
		{"# c\n1.0,,1.2\n", 2, "never acquired"},
		{"1.0,1.5\n", 1, "2 fields"},
		{"0.1,0.2,0.3\n,0.5,0.6\n", 2, "asked is empty"},
		{"0.1,0.2,0.3\n0.4,x,0.6\n", 2, "acquired"},
		{"0.1,0.2,0.3\n0.4,0.5,-1\n", 2, "released"},
		{"0.1,0.2,0.3\n0.4,0.5,0.6000000001\n", 2, "nine decimals"},
		{"asked,got,released\n", 1, "unknown column"},
		{"acquired,released\n", 1, "no asked"},
		{"0.1,0.2,0.3\n2026-11-30T14:02:00Z,,\n", 2, "not both"},
		{"2026-11-30T14:02:00Z,,\n2026-11-30T14:02:61Z,,\n", 2, "RFC 3339"},
		{"0.1,0.2,0.3\n\"0.4,0.5,0.6\n", 2, "quote"},
		{"99999999999,,\n", 1, "a year"},
	} {
		_, err := ReadCSV(strings.NewReader(c.text))
		var le *LineError
		if !errors.As(err, &le) || le.Line != c.line || !errors.Is(err, ErrCSV) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: got %v, want line %d saying %q", c.text, err, c.line, c.says)
		}
	}
}

func TestCSVReadsBothKindsOfTime(t *testing.T) {
	a, err := ReadCSV(strings.NewReader("asked,released,acquired\n1.5,2.000000001,1.75\n0.25,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadCSV(strings.NewReader("2026-11-30T14:02:01.5Z,2026-11-30T14:02:01.75Z,2026-11-30T14:02:02.000000001Z\n" +
		"2026-11-30T14:02:00.25Z,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{{Line: 3, Asked: 250e6, Acquired: -1, Release: -1}, {Line: 2, Asked: 1500e6, Acquired: 1750e6, Release: 2e9 + 1}}
	if !slices.Equal(a.Rows, want) {
		t.Fatalf("seconds: %+v", a.Rows)
	}
	// RFC 3339: the earliest asked is the start.
	want = []Row{{Line: 2, Asked: 0, Acquired: -1, Release: -1}, {Line: 1, Asked: 1250e6, Acquired: 1500e6, Release: 1750e6 + 1}}
	if !slices.Equal(b.Rows, want) {
		t.Fatalf("RFC 3339: %+v", b.Rows)
	}
	l := b.Load(time.Second).(*Slice)
	if l.A[0].Hold != time.Second || l.A[0].Recorded || l.A[1].Hold != 250*time.Millisecond+1 || !l.A[1].Recorded {
		t.Fatalf("load %+v", l.A)
	}
}

func TestRankIsNearestRank(t *testing.T) {
	w := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		zeros, p int
		want     time.Duration
	}{{0, 50, 5}, {0, 99, 10}, {0, 1, 1}, {10, 50, 0}, {10, 51, 1}, {10, 99, 10}, {90, 99, 9}} {
		if got := rank(w, c.zeros, c.p); got != c.want {
			t.Errorf("rank(1..10, %d zeros, p%d) = %v, want %v", c.zeros, c.p, got, c.want)
		}
	}
	if rank(nil, 0, 99) != 0 {
		t.Error("no waits: not zero")
	}
}

func TestSuggestFindsTheEdge(t *testing.T) {
	s := builtin(t, "burst")
	target := 5 * time.Millisecond
	const seeds = 5
	best, trials, ok, err := Suggest(s, nil, target, 64, seeds, 0)
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if best.P99.Judged > target || !best.Fits {
		t.Fatalf("best %+v does not fit", best)
	}
	smaller := false
	for _, tr := range trials {
		if tr.Step == "size" && tr.Size == best.Size-1 {
			smaller = true
			if tr.Fits {
				t.Fatalf("Size %d fits too", tr.Size)
			}
		}
		// Each trial is judged on every seed, the scenario's first.
		if len(tr.P99.Each) != seeds || tr.P99.Each[0] != tr.Sum.P99 {
			t.Fatalf("trial %+v: not %d seeds from the scenario's", tr, seeds)
		}
		// 5 seeds: 90% of them is all of them.
		if tr.Fits != (tr.P99.Missed(target) == 0) {
			t.Fatalf("trial %+v: fits wrong", tr)
		}
		if w := slices.Max(tr.P99.Each); tr.P99.Worst != w || tr.P99.Judged != w || tr.P99.Median > w || tr.P99.Median < slices.Min(tr.P99.Each) {
			t.Fatalf("trial %+v: spread wrong", tr)
		}
	}
	if best.Size > 1 && !smaller {
		t.Fatalf("Size %d suggested without trying %d", best.Size, best.Size-1)
	}
	// A target nothing meets says so.
	_, _, ok, err = Suggest(s, nil, time.Nanosecond, 4, seeds, 0)
	if err != nil || ok {
		t.Fatalf("an impossible target: ok %v err %v", ok, err)
	}
}

// scenarioGen draws a small scenario with every feature in play.
func scenarioGen(rt *rapid.T) Scenario {
	ms := func(name string, lo, hi int) time.Duration {
		return time.Duration(rapid.IntRange(lo, hi).Draw(rt, name)) * time.Millisecond
	}
	secs := rapid.IntRange(1, 6).Draw(rt, "seconds")
	end := secs * 1000
	span := func(name string) Span {
		a := rapid.IntRange(0, end-1).Draw(rt, name+".from")
		b := rapid.IntRange(a+1, end).Draw(rt, name+".to")
		return Span{time.Duration(a) * time.Millisecond, time.Duration(b) * time.Millisecond}
	}
	size := rapid.IntRange(0, 16).Draw(rt, "size")
	s := Scenario{
		Name: "gen", Seconds: secs, Seed: rapid.Uint64().Draw(rt, "seed"),
		Rate: float64(rapid.IntRange(1, 400).Draw(rt, "rate")),
		Hold: ms("hold", 1, 200), Dial: ms("dial", 0, 100),
		Limits: pool.Limits{
			Size: size, Idle: rapid.IntRange(0, max(size, 4)).Draw(rt, "idle"),
			Keep: ms("keep", 0, 2000), Life: ms("life", 0, 3000),
		},
		Timeout: ms("timeout", 0, 1500),
		Breaker: rapid.Bool().Draw(rt, "breaker"),
		Backoff: rapid.Bool().Draw(rt, "backoff"),
	}
	if rapid.Bool().Draw(rt, "burst") {
		s.Bursts = append(s.Bursts, Burst{span("burst"), float64(rapid.IntRange(0, 4).Draw(rt, "factor"))})
	}
	if rapid.Bool().Draw(rt, "slow") {
		s.Slows = append(s.Slows, Slow{span("slow"), float64(rapid.IntRange(1, 10).Draw(rt, "dialx")), float64(rapid.IntRange(1, 4).Draw(rt, "holdx"))})
	}
	if rapid.Bool().Draw(rt, "outage") {
		s.Outages = append(s.Outages, Outage{span("outage"), float64(rapid.IntRange(0, 4).Draw(rt, "fail")) / 4})
	}
	if rapid.Bool().Draw(rt, "break") {
		s.Breaks = append(s.Breaks, Outage{span("break"), float64(rapid.IntRange(0, 4).Draw(rt, "broken")) / 4})
	}
	return s
}

// Any scenario: every row agrees with the books, the pool stays within
// Size, callers are accounted for, and a replay of the run's recording with
// the same limits gives back the same run.
func TestAnyScenarioKeepsTheBooksAndReplays(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := scenarioGen(rt)
		check := booksCheck(rt, "gen")
		var buf bytes.Buffer
		w := NewCSVWriter(&buf)
		r, err := Run(s, Options{Record: w, Observe: func(x Second, b pool.Books) {
			check(x, b)
			if s.Limits.Size > 0 && b.Live > s.Limits.Size {
				rt.Fatalf("second %d: %d live over Size %d", x.Sec, b.Live, s.Limits.Size)
			}
		}})
		if err != nil {
			rt.Fatal(err)
		}
		w.Close()
		m := r.Sum
		if done := m.Served + m.TimedOut + m.Refused + m.DialErrors; done > m.Arrived {
			rt.Fatalf("%d callers finished of %d arrived", done, m.Arrived)
		}
		if m.P50 > m.P99 || m.P99 > m.Max || (s.Timeout > 0 && m.Max > s.Timeout) {
			rt.Fatalf("percentiles out of order or past the timeout: %+v", m)
		}
		rec, err := ReadCSV(bytes.NewReader(buf.Bytes()))
		if err != nil {
			rt.Fatal(err)
		}
		var again bytes.Buffer
		w2 := NewCSVWriter(&again)
		r2, err := Run(s, Options{Load: rec.Load(s.Hold), Record: w2})
		if err != nil {
			rt.Fatal(err)
		}
		w2.Close()
		if !bytes.Equal(buf.Bytes(), again.Bytes()) || !slices.Equal(r.Rows, r2.Rows) {
			rt.Fatalf("the replay differs from the run")
		}
	})
}

// The search judges on many seeds: the answer one draw gives for the
// burst misses the target on many of the next draws, and the 20-seed
// answer, run again seed by seed, misses on at most 2 of 20.
func TestSuggestJudgesOnManySeeds(t *testing.T) {
	s := builtin(t, "burst")
	target := 10 * time.Millisecond
	one, _, ok1, err1 := Suggest(s, nil, target, 64, 1, 0)
	many, _, ok, err := Suggest(s, nil, target, 64, 20, 0)
	if err1 != nil || err != nil || !ok1 || !ok {
		t.Fatalf("one seed: ok %v err %v; 20 seeds: ok %v err %v", ok1, err1, ok, err)
	}
	if many.Size <= one.Size {
		t.Errorf("20 seeds suggest Size %d, one seed %d: the spread no longer matters here", many.Size, one.Size)
	}
	missed, manyMissed := 0, 0
	for i := range uint64(20) {
		c := s
		c.Seed = s.Seed + i
		c.Limits = pool.Limits{Size: one.Size, Idle: one.Idle, Keep: one.Keep}
		r, err := Run(c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Sum.P99 > target {
			missed++
		}
		c.Limits = pool.Limits{Size: many.Size, Idle: many.Idle, Keep: many.Keep}
		if r, err = Run(c, Options{}); err != nil {
			t.Fatal(err)
		}
		if r.Sum.P99 != many.P99.Each[i] {
			t.Errorf("seed %d: the 20-seed answer gives p99 %v, the search said %v", c.Seed, r.Sum.P99, many.P99.Each[i])
		}
		if r.Sum.P99 > target {
			manyMissed++
		}
	}
	if manyMissed > 2 || manyMissed != many.P99.Missed(target) {
		t.Errorf("the 20-seed answer (Size %d) misses on %d seeds (it says %d)", many.Size, manyMissed, many.P99.Missed(target))
	}
	if missed <= 2 {
		t.Errorf("the one-seed answer (Size %d) misses on %d of 20 seeds: it would fit too", one.Size, missed)
	}
}

// A floor on Keep holds every trial of the search at or over it, the size
// and idle steps included, where without one the search tries Keeps of
// a fraction of a second.
func TestSuggestKeepsNoLowerThanTheFloor(t *testing.T) {
	s := builtin(t, "steady")
	s.Rate, s.Hold = 400, 15*time.Millisecond
	const target = 5 * time.Millisecond
	_, free, ok, err := Suggest(s, nil, target, 64, 3, 0)
	if err != nil || !ok {
		t.Fatalf("no floor: ok %v err %v", ok, err)
	}
	if !slices.ContainsFunc(free, func(tr Trial) bool { return tr.Keep < time.Second }) {
		t.Fatalf("without a floor no Keep under 1s was tried: %+v", free)
	}
	floor := 30 * time.Second
	best, trials, ok, err := Suggest(s, nil, target, 64, 3, floor)
	if err != nil || !ok {
		t.Fatalf("floor %v: ok %v err %v", floor, ok, err)
	}
	for _, tr := range trials {
		if tr.Keep < floor {
			t.Errorf("trial %s Size %d Idle %d tried Keep %v under the floor %v", tr.Step, tr.Size, tr.Idle, tr.Keep, floor)
		}
	}
	if best.Keep < floor || !best.Fits {
		t.Errorf("suggested Keep %v (fits %v), floor %v", best.Keep, best.Fits, floor)
	}
	if _, _, _, err := Suggest(s, nil, target, 64, 3, -time.Second); err == nil {
		t.Error("a negative floor is not an error")
	}
}

// Each guard a scenario can put in front of its pool acts, with its knobs:
// the bucket defers makes past its rate, the shedder sheds while the CPU
// the load drives is over its threshold (and not while it is under), and
// the limiter keeps loans within its limit. Without the guard, the same
// load sees none of it.
func TestEveryGuardActs(t *testing.T) {
	base := builtin(t, "burst")
	run := func(t *testing.T, s Scenario) *Result {
		t.Helper()
		r, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("bucket", func(t *testing.T) {
		s := base
		s.Limits.Keep = 100 * time.Millisecond // many makes
		free := run(t, s)
		s.Bucket, s.BucketRate, s.BucketBurst = true, 2, 1
		r := run(t, s)
		if r.Sum.Guards[ward.GuardBucket] == 0 || free.Sum.Guards[ward.GuardBucket] != 0 {
			t.Fatalf("bucket deferred %d makes, %d without it", r.Sum.Guards[ward.GuardBucket], free.Sum.Guards[ward.GuardBucket])
		}
		// Tokens: one at first, then two a second.
		if most := 1 + 2*s.Seconds; r.Sum.Dials > most || free.Sum.Dials <= most {
			t.Fatalf("%d dials with a bucket of 2 a second over %d s (at most %d), %d without", r.Sum.Dials, s.Seconds, most, free.Sum.Dials)
		}
	})
	t.Run("shedder", func(t *testing.T) {
		s := base
		s.Shedder, s.ShedCPU, s.CPUIdle, s.CPUPerLoan = true, 800, 200, 100
		r := run(t, s)
		// Every caller refused was shed; a Shed answered for a caller
		// dialing (asked for it at a return) refuses nobody: it dials on.
		if r.Sum.Refused == 0 || r.Sum.Refused > r.Sum.Guards[ward.GuardShedder] {
			t.Fatalf("a hot host shed %d (%d refused)", r.Sum.Guards[ward.GuardShedder], r.Sum.Refused)
		}
		if r.Sum.CPUMax < 400 {
			t.Fatalf("the CPU model read at most %d‰ with the load's busy resources", r.Sum.CPUMax)
		}
		s.CPUPerLoan = 0 // the CPU stays at 20%: never hot
		if cool := run(t, s); cool.Sum.Refused != 0 || cool.Sum.CPUMax != 200 {
			t.Fatalf("a cool host shed %d, CPU at most %d‰", cool.Sum.Refused, cool.Sum.CPUMax)
		}
	})
	t.Run("limiter", func(t *testing.T) {
		s := base
		s.Limiter, s.Limit = true, ward.Aimd{Initial: 4, Min: 1, Max: 4, Slow: time.Second, Backoff: 0.9}
		r := run(t, s)
		if r.Sum.Guards[ward.GuardLimiter] == 0 || r.Sum.LimitMax != 4 {
			t.Fatalf("limiter answered %d times, limit up to %d", r.Sum.Guards[ward.GuardLimiter], r.Sum.LimitMax)
		}
		for _, row := range r.Rows {
			if row.Lent > 4 || row.Limit != 4 {
				t.Fatalf("second %d: %d lent over a limit of %d", row.Sec, row.Lent, row.Limit)
			}
		}
		if r.Sum.Peak > 4 || run(t, base).Sum.Peak <= 4 {
			t.Fatalf("peak %d live under a limit of 4", r.Sum.Peak)
		}
		// A hold over Slow shrinks the limit: it moves with the load.
		s.Limit = ward.DefaultAimd
		s.Limit.Slow = 30 * time.Millisecond
		if r := run(t, s); r.Sum.LimitMin >= r.Sum.LimitMax {
			t.Fatalf("the limit stayed at %d with slow holds", r.Sum.LimitMin)
		}
	})
}

// The ward setting reads every guard, alone, joined by + or spaced, and
// the knobs as their keys.
func TestWardSettingNamesEveryGuard(t *testing.T) {
	base := builtin(t, "steady")
	for in, want := range map[string][]string{
		"none":                    nil,
		"on":                      {"breaker", "backoff"},
		"all":                     Guards,
		"bucket":                  {"bucket"},
		"shedder+limiter":         {"shedder", "limiter"},
		"limiter bucket":          {"bucket", "limiter"},
		"breaker+backoff+shedder": {"breaker", "backoff", "shedder"},
	} {
		s, err := Override(base, "ward "+in)
		if err != nil {
			t.Fatalf("ward %s: %v", in, err)
		}
		if got := s.GuardsOn(); !slices.Equal(got, want) {
			t.Errorf("ward %s: %v, want %v", in, got, want)
		}
	}
	s, err := Override(base, "bucket-rate 7; bucket-burst 3; shed-cpu 500; shed-floor 0.3; cpu-idle 100; cpu-per-loan 30; limit-initial 4; limit-min 2; limit-max 50; limit-slow 500ms; limit-backoff 0.5")
	if err != nil {
		t.Fatal(err)
	}
	if s.BucketRate != 7 || s.BucketBurst != 3 || s.ShedCPU != 500 || s.ShedFloor != 0.3 || s.CPUIdle != 100 || s.CPUPerLoan != 30 ||
		s.Limit != (ward.Aimd{Initial: 4, Min: 2, Max: 50, Slow: 500 * time.Millisecond, Backoff: 0.5}) {
		t.Errorf("knobs read as %+v", s)
	}
	for _, bad := range []string{"ward sheder", "ward limiter; limit-min 5; limit-max 4", "ward limiter; limit-min 0", "ward shedder; shed-floor 2", "cpu-idle 1001"} {
		if _, err := Override(base, bad); err == nil {
			t.Errorf("%q is not an error", bad)
		}
	}
}

// A what-if's interval: the same arguments give the same interval; holds
// that are all alike leave nothing to resample (the interval is the
// point); holds that vary spread it, and the recording's own p99 is the
// point. Blocks keep consecutive holds together: a recording whose long
// holds all come in one stretch resamples into runs that have that
// stretch once, twice or not at all, so its interval is wider than with
// each hold drawn alone.
func TestResampleGivesAnInterval(t *testing.T) {
	s := builtin(t, "steady")
	s.Seconds = 10
	s.Limits = pool.Limits{Size: 5, Idle: 5, Keep: time.Minute} // a p99 of queueing, not of dials
	var b bytes.Buffer
	w := NewCSVWriter(&b)
	a, err := Run(s, Options{Record: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := Resample(s, rec, s.Hold, nil, 40, 0.9, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Resample(s, rec, s.Hold, nil, 40, 0.9, time.Second, nil)
	if !slices.Equal(iv.Each, again.Each) || iv.Lo != again.Lo || iv.Hi != again.Hi {
		t.Fatal("the same arguments gave two intervals")
	}
	if iv.Point != a.Sum.P99 || len(iv.Each) != 40 || !(iv.Lo < iv.Hi) || !iv.Contains(iv.Lo) || iv.Contains(iv.Hi+1) {
		t.Fatalf("interval %v to %v around %v (the run's p99 %v), %d runs", iv.Lo, iv.Hi, iv.Point, a.Sum.P99, len(iv.Each))
	}
	in := 0
	for _, d := range iv.Each {
		if iv.Contains(d) {
			in++
		}
	}
	if in < 36 {
		t.Fatalf("%d of 40 resampled runs within the 90%% interval", in)
	}
	// A delay beyond the pool's, carried with each caller: 5 ms more for
	// every caller is 5 ms more at p99, as recorded and resampled.
	extra := make([]time.Duration, len(rec.Rows))
	for i := range extra {
		extra[i] = 5 * time.Millisecond
	}
	late, err := Resample(s, rec, s.Hold, nil, 40, 0.9, time.Second, extra)
	if err != nil || late.Point != iv.Point+5*time.Millisecond || late.Lo != iv.Lo+5*time.Millisecond || late.Hi != iv.Hi+5*time.Millisecond {
		t.Fatalf("5ms more each: %v to %v around %v, against %v to %v around %v (%v)", late.Lo, late.Hi, late.Point, iv.Lo, iv.Hi, iv.Point, err)
	}
	if _, err := Resample(s, rec, s.Hold, nil, 4, 0.9, time.Second, extra[1:]); err == nil {
		t.Fatal("extra delays not one a caller: no error")
	}
	// All holds alike: nothing to resample.
	same := &Recording{Rows: slices.Clone(rec.Rows)}
	for i := range same.Rows {
		if same.Rows[i].Acquired >= 0 {
			same.Rows[i].Release = same.Rows[i].Acquired + int64(30*time.Millisecond)
		}
	}
	flat, err := Resample(s, same, s.Hold, nil, 20, 0.9, time.Second, nil)
	if err != nil || flat.Lo != flat.Point || flat.Hi != flat.Point {
		t.Fatalf("alike holds: interval %v to %v around %v (%v)", flat.Lo, flat.Hi, flat.Point, err)
	}
	// A stall: the holds of two seconds run long together.
	stall := &Recording{Rows: slices.Clone(rec.Rows)}
	for i, r := range stall.Rows {
		if r.Asked >= int64(4*time.Second) && r.Asked < int64(6*time.Second) && r.Acquired >= 0 && r.Release >= 0 {
			stall.Rows[i].Release = r.Acquired + 4*(r.Release-r.Acquired)
		}
	}
	blocks, _ := Resample(s, stall, s.Hold, nil, 40, 0.9, time.Second, nil)
	alone, _ := Resample(s, stall, s.Hold, nil, 40, 0.9, 0, nil)
	if blocks.Hi-blocks.Lo <= alone.Hi-alone.Lo {
		t.Fatalf("a stall resampled in blocks spans %v, alone %v", blocks.Hi-blocks.Lo, alone.Hi-alone.Lo)
	}
	if _, err := Resample(s, &Recording{Rows: []Row{{Asked: 0, Acquired: -1, Release: -1}}}, s.Hold, nil, 5, 0.9, 0, nil); !errors.Is(err, ErrNoHolds) {
		t.Fatalf("no holds: %v", err)
	}
}
