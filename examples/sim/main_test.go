package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// sim runs the command with args and returns what it printed.
func sim(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := cli(args, &out); err != nil {
		t.Fatalf("sim %v: %v", args, err)
	}
	return out.String()
}

// rows parses the per-second table at the top of the default output.
func rows(t *testing.T, out string) [][]int {
	t.Helper()
	table, _, _ := strings.Cut(out, "\n\n")
	lines := strings.Split(table, "\n")
	if len(lines) < len(tableLegend) || !slices.Equal(lines[:len(tableLegend)], tableLegend) {
		t.Fatalf("the table does not open with its legend:\n%s", table)
	}
	lines = lines[len(tableLegend):]
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "sec lent idle queued deepest waited made retired" {
		t.Fatalf("header %q", lines[0])
	}
	var rs [][]int
	for _, l := range lines[1:] {
		var row []int
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("row %q: %v", l, err)
			}
			row = append(row, n)
		}
		rs = append(rs, row)
	}
	return rs
}

func TestDefaultTableIsDeterministicAndHonest(t *testing.T) {
	out := sim(t)
	if out != sim(t) {
		t.Fatal("the same seed printed two tables")
	}
	a := rows(t, out)
	if len(a) != 24 {
		t.Fatalf("%d rows, want 24", len(a))
	}
	size := 12
	waited := 0
	for i, row := range a {
		if row[0] != i+1 {
			t.Fatalf("row %d is second %d", i, row[0])
		}
		if lent, idle := row[1], row[2]; lent < 0 || idle < 0 || lent+idle > size {
			t.Fatalf("second %d: lent %d idle %d over size %d", row[0], lent, idle, size)
		}
		if i >= 8 && i < 16 {
			waited += row[5]
		}
	}
	if waited == 0 {
		t.Fatal("nobody waited during the burst")
	}
	for _, want := range []string{"acquire wait", "saturated", "opened", "callers"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary has no %q", want)
		}
	}
	if out == sim(t, "-seed", "2") {
		t.Fatal("seed 2 printed the table of seed 1")
	}
}

// The table's legend names every column it prints, and its deepest
// column shows the queues the summary reports: the longest queue's depth
// is within the deepest of the seconds, where the queue at the seconds' ends
// (the queued column) can be empty all the while.
func TestTableLegendAndDeepestQueue(t *testing.T) {
	out := sim(t)
	legend := strings.Join(tableLegend, " ")
	for _, col := range []string{"lent", "idle", "queued", "deepest", "waited", "made", "retired"} {
		if !strings.Contains(legend, col+" (") {
			t.Errorf("the legend does not say what %q is: %s", col, legend)
		}
	}
	var depth int
	if _, err := fmt.Sscanf(out[strings.Index(out, "longest queue"):], "longest queue %s from %s s (%d deep)", new(string), new(string), &depth); err != nil || depth < 2 {
		t.Fatalf("no longest queue's depth in the summary (%v):\n%s", err, out)
	}
	deepest, queued := 0, 0
	for _, row := range rows(t, out) {
		if row[4] < row[3] {
			t.Errorf("second %d: deepest %d under the queue at its end %d", row[0], row[4], row[3])
		}
		deepest, queued = max(deepest, row[4]), max(queued, row[3])
	}
	if deepest < depth {
		t.Errorf("the deepest queue of any second is %d, the summary's longest queue was %d deep", deepest, depth)
	}
	if queued >= depth {
		t.Errorf("the queue at the seconds' ends reached %d: the default run no longer shows why deepest is there", queued)
	}
}

// The summary says the load a run met: its model and, by Little's law,
// how many were busy on average; and a burst, plainly.
func TestSummarySaysTheLoad(t *testing.T) {
	out := sim(t, "-table=false")
	for _, want := range []string{"load           Poisson arrivals, exponential holds: ", " busy on average (Little's law)",
		"burst          x2 from 8s to 16s: 200 a second, 8.00 busy on average"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if out := sim(t, "-scenario", "steady", "-table=false"); strings.Contains(out, "burst  ") {
		t.Errorf("a steady run speaks of a burst:\n%s", out)
	}
}

// svg runs the command writing an SVG and returns its bytes.
func svg(t *testing.T, args ...string) []byte {
	t.Helper()
	name := filepath.Join(t.TempDir(), "sim.svg")
	sim(t, append(args, "-svg", name)...)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSameSeedSameSVGBytes(t *testing.T) {
	for _, args := range [][]string{nil, {"-scenario", "outage", "-compare", "ward=none"}} {
		a, b := svg(t, args...), svg(t, args...)
		if !bytes.Equal(a, b) {
			t.Fatalf("%v: two SVGs from one seed", args)
		}
		if c := svg(t, append(args, "-seed", "3")...); bytes.Equal(a, c) {
			t.Fatalf("%v: seed 3 drew seed 1's chart", args)
		}
		if err := xml.Unmarshal(a, new(struct{})); err != nil {
			t.Fatalf("%v: not well-formed XML: %v", args, err)
		}
	}
}

// line is one series as the SVG carries it.
type line struct {
	Column string `xml:"data-column,attr"`
	Panel  string `xml:"data-panel,attr"`
	Series string `xml:"data-series,attr"`
	Values string `xml:"data-values,attr"`
}

// lines reads back every series drawn in an SVG, by column, panel and name.
func lines(t *testing.T, b []byte) map[string][]float64 {
	t.Helper()
	var doc struct {
		Lines []line `xml:"polyline"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	m := map[string][]float64{}
	for _, l := range doc.Lines {
		var v []float64
		for _, f := range strings.Fields(l.Values) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			v = append(v, x)
		}
		m[l.Column+"/"+l.Panel+"/"+l.Series] = v
	}
	return m
}

// The numbers drawn are the pool's books, second by second: the gauges as
// read, each answer as the difference of its counter.
func TestChartNumbersAreTheBooks(t *testing.T) {
	for _, name := range engine.Builtins {
		s, _ := engine.Builtin(name)
		var books []pool.Books
		r, err := engine.Run(s, engine.Options{Observe: func(_ engine.Second, b pool.Books) { books = append(books, b) }})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := figure([]*engine.Result{r}, []string{"A"}, 0).WriteSVG(&buf); err != nil {
			t.Fatal(err)
		}
		drawn := lines(t, buf.Bytes())
		get := func(panel, series string) []float64 {
			v, ok := drawn["0/"+panel+"/"+series]
			if !ok || len(v) != len(books) {
				t.Fatalf("%s: series %s/%s has %d points, want %d", name, panel, series, len(v), len(books))
			}
			return v
		}
		var prev pool.Books
		prevMaking := 0.0
		for i, b := range books {
			d := func(f func(pool.Books) uint64) float64 { return float64(f(b) - f(prev)) }
			making := get(panelResources, "being made")[i]
			checks := []struct {
				what      string
				got, want float64
			}{
				{"lent+made", get(panelResources, "lent")[i] + making, float64(b.Busy)},
				{"idle", get(panelResources, "idle")[i], float64(b.Idle)},
				{"Ready", get(panelAnswers, "Ready")[i], d(func(b pool.Books) uint64 { return b.Reused })},
				{"Wait", get(panelAnswers, "Wait")[i], d(func(b pool.Books) uint64 { return b.Waited })},
				{"Later", get(panelAnswers, "Later")[i], d(func(b pool.Books) uint64 { return b.Deferred })},
				{"Shed", get(panelAnswers, "Shed")[i], d(func(b pool.Books) uint64 { return b.Shed })},
				{"Make", get(panelAnswers, "Make")[i], d(func(b pool.Books) uint64 { return b.Made + b.Failed }) + making - prevMaking},
				{"opened", get(panelAnswers, "opened")[i], d(func(b pool.Books) uint64 { return b.Made })},
				{"retired", get(panelAnswers, "retired")[i], d(func(b pool.Books) uint64 { return b.Retired })},
				{"dials failed", get(panelAnswers, "dials failed")[i], d(func(b pool.Books) uint64 { return b.Failed })},
				{"dropped", get(panelAnswers, "dropped broken")[i], d(func(b pool.Books) uint64 { return b.Dropped })},
				{"served+orphans", get(panelCallers, "served")[i] + get(panelCallers, "dial outlived its caller")[i], d(func(b pool.Books) uint64 { return b.Loans })},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s second %d: chart %s %v, books %v", name, i+1, c.what, c.got, c.want)
				}
			}
			// Stale answers are a part of what was retired.
			if st := get(panelAnswers, "Stale")[i]; st > d(func(b pool.Books) uint64 { return b.Retired }) {
				t.Errorf("%s second %d: %v Stale but %v retired", name, i+1, st, d(func(b pool.Books) uint64 { return b.Retired }))
			}
			prev, prevMaking = b, making
		}
		if s.Breaker {
			ratio := get(panelBreaker, "refusal ratio")
			top := 0.0
			for _, v := range ratio {
				top = max(top, v)
			}
			if top == 0 {
				t.Errorf("%s: the breaker never refused during the outage", name)
			}
		}
	}
}

func TestCompareRunsTheSameLoadSideBySide(t *testing.T) {
	var out bytes.Buffer
	name := filepath.Join(t.TempDir(), "c.svg")
	if err := cli([]string{"-scenario", "slowdown", "-compare", "size=24", "-svg", name}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wait p50", "wait p99", "wait max", "time saturated", "connections opened", "to a dead backend", "A: Size 12", "B: Size 24", "longest queue"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison has no %q:\n%s", want, out.String())
		}
	}
	b, _ := os.ReadFile(name)
	drawn := lines(t, b)
	a0, b0 := drawn["0/"+panelCallers+"/arrived"], drawn["1/"+panelCallers+"/arrived"]
	if len(a0) != 30 || len(b0) != 30 {
		t.Fatalf("columns of %d and %d seconds", len(a0), len(b0))
	}
	for i := range a0 {
		if a0[i] != b0[i] {
			t.Fatalf("second %d: %v and %v arrivals: not the same load", i+1, a0[i], b0[i])
		}
	}
}

func TestHTMLIsOnePageWithNothingToFetch(t *testing.T) {
	name := filepath.Join(t.TempDir(), "sim.html")
	sim(t, "-scenario", "outage", "-html", name, "-table=false")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(page, "http"); n != strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("page names %d addresses beside the SVG namespace", n)
	}
	for _, want := range []string{"<svg", "</html>", "Breaker", "to a dead backend"} {
		if !strings.Contains(page, want) {
			t.Errorf("page has no %q", want)
		}
	}
}

// The command's own round trip: record a run, replay it with the same
// limits, and the table is the same.
func TestRecordThenReplayGivesTheSameTable(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "load.csv")
	a := sim(t, "-record", csv)
	b := sim(t, "-replay", csv)
	ta, _, _ := strings.Cut(a, "\n\n")
	tb, _, _ := strings.Cut(b, "\n\n")
	if ta != tb {
		t.Fatalf("replay's table differs:\n%s\n---\n%s", ta, tb)
	}
	c := sim(t, "-replay", csv, "-compare", "size=16")
	if !strings.Contains(c, "B: Size 16") || !strings.Contains(c, "A's longest queues") {
		t.Fatalf("what-if comparison:\n%s", c)
	}
}

func TestSuggestPrintsTheTableSearched(t *testing.T) {
	out := sim(t, "-suggest", "-target", "5ms")
	for _, want := range []string{"step", "size", "idle", "keep", "p99 median", "p99 worst", "margin", "suggest: Size",
		"p99 wait over 20 seeds: median ", "margin to the target 5ms: ", "this answer rests on 20 seeds (seeds 1 to 20)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") < 8 {
		t.Errorf("a short search:\n%s", out)
	}
}

func TestBadInputIsAClearError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("rate 100\n\nburst 8s 16s 2\n"), 0o644)
	badCSV := filepath.Join(dir, "bad.csv")
	os.WriteFile(badCSV, []byte("asked,acquired,released\n0.1,0.2,0.3\n0.5,0.4,0.6\n"), 0o644)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-scenario", bad}, "line 3: sim: bad scenario: burst: factor \"2\""},
		{[]string{"-replay", badCSV}, "line 3: sim: bad load CSV: acquired before asked"},
		{[]string{"-scenario", "nope"}, "neither a built-in"},
		{[]string{"-compare", "size=-2"}, "-compare: line 1"},
		{[]string{"-rate", "0"}, "rate"},
		{[]string{"-ward", "maybe"}, "unknown guard"},
		{[]string{"-suggest", "-target", "0"}, "target"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		err := cli(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.says)
		}
	}
	var le *engine.LineError
	if err := cli([]string{"-replay", badCSV}, &bytes.Buffer{}); !errors.As(err, &le) || le.Line != 3 {
		t.Errorf("the CSV error is not a LineError at line 3: %v", err)
	}
}

var rewrite = flag.Bool("rewrite", false, "rewrite the committed charts (sim.svg, outage.svg) from the command")

// committed are the charts in the repository and the arguments that make
// them; the README shows them.
var committed = []struct {
	file string
	args []string
}{
	{"sim.svg", nil},
	{"outage.svg", []string{"-scenario", "outage", "-compare", "ward=none"}},
}

// The committed charts are what the command draws today: a change to the
// pool's decisions shows up here, and the charts are redrawn with
// go test ./examples/sim -run Committed -rewrite.
func TestCommittedChartsAreCurrent(t *testing.T) {
	for _, c := range committed {
		got := svg(t, c.args...)
		if *rewrite {
			if err := os.WriteFile(c.file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what go run ./examples/sim %s draws now; redraw it with go test ./examples/sim -run Committed -rewrite",
				c.file, strings.Join(append(c.args, "-svg", c.file), " "))
		}
	}
}

// The scenario files shipped as examples parse and run.
func TestShippedScenarioFilesRun(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		out := sim(t, "-scenario", f, "-table=false")
		if !strings.Contains(out, "acquire wait") {
			t.Errorf("%s: no summary in %q", f, out)
		}
	}
}

// A recording with wall-clock times names its queues by the clock.
func TestReplayOfWallClockTimesNamesTheClock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "load.csv")
	var b strings.Builder
	b.WriteString("asked,acquired,released\n")
	// Four callers at 14:02:00 holding to 14:02:03, then four more at
	// 14:02:01: with Size 4 the second four queue until 14:02:03.
	for i := range 8 {
		at := "14:02:00"
		if i >= 4 {
			at = "14:02:01"
		}
		fmt.Fprintf(&b, "2026-11-30T%s.%03dZ,2026-11-30T%s.%03dZ,2026-11-30T14:02:03.%03dZ\n", at, i, at, i, i)
	}
	os.WriteFile(name, []byte(b.String()), 0o644)
	out := sim(t, "-replay", name, "-size", "4", "-compare", "size=8", "-dial", "0")
	if !strings.Contains(out, "at 14:02:01.004 A queued callers for") || !strings.Contains(out, "B for 0s of it") {
		t.Fatalf("no wall-clock queue in:\n%s", out)
	}
}

// poolRun records a pool.Pool driven as a Keeper drives one (a caller asks;
// on Make its dial ends dial later with Made and the loan; a return is
// given back; nobody queues: Size is never reached), callers arriving every
// gap and holding hold, and returns the recording.
func poolRun(t *testing.T, n int, gap, hold, dial time.Duration) []byte {
	t.Helper()
	raw, err := pool.New[int](pool.Limits{Size: 4, Idle: 4, Keep: time.Minute}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := record.Wrap(raw, record.New(0), time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at   time.Duration
		item int // 0: an arrival; -1: a dial ending; else a return
	}
	var evs []ev
	for i := range n {
		evs = append(evs, ev{at: time.Duration(i)*gap + time.Duration(i%3)*time.Microsecond})
	}
	base := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	next := 1
	for len(evs) > 0 {
		slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
		e := evs[0]
		evs = evs[1:]
		now := base.Add(e.at)
		switch e.item {
		case 0:
			switch a := p.Take(now, 0, 0); a.Kind {
			case pool.Ready:
				evs = append(evs, ev{at: e.at + hold, item: a.Item})
			case pool.Make:
				evs = append(evs, ev{at: e.at + dial, item: -1})
			default:
				t.Fatalf("Take at %v: %v", e.at, a.Kind)
			}
		case -1:
			p.Made(next, 0, now, 0)
			evs = append(evs, ev{at: e.at + hold, item: next})
			next++
		default:
			p.Give(e.item, now)
		}
	}
	return p.Recording(nil)
}

// A Keeper's recording replays: the command says what it read exactly and
// what it estimated, and, with the recorded limits, gives back every
// recorded decision; other limits are a what-if like a CSV's.
func TestReplayOfAKeeperRecording(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pool.rec")
	data := poolRun(t, 300, 10*time.Millisecond, 23*time.Millisecond, 4*time.Millisecond)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := sim(t, "-replay", file, "-table=false")
	for _, want := range []string{
		"recording      ", "Size:4", "exact          297 callers lent at once, 0 after a recorded Wait, 3 by their own dial",
		"estimated      0 lane loans", "dial           4ms measured (median of 3",
		"decisions      with the recorded limits and a dial of 4ms: all 300 recorded Take answers given back",
		"callers        300: 300 served",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// What if the pool had been smaller: no claim about the decisions.
	out = sim(t, "-replay", file, "-table=false", "-size", "2")
	if strings.Contains(out, "decisions") || !strings.Contains(out, "Size 2") {
		t.Errorf("-size 2:\n%s", out)
	}
	// A cut recording is a clear error, never a panic.
	cut := filepath.Join(dir, "cut.rec")
	os.WriteFile(cut, data[:len(data)-3], 0o644)
	if err := cli([]string{"-replay", cut}, &bytes.Buffer{}); !errors.Is(err, record.ErrRecording) || !strings.Contains(err.Error(), "cut.rec: wardpool: bad recording") {
		t.Errorf("a cut recording: %v", err)
	}
}

// The planner's question as a new user asks it: the search says the load
// model it answered for (Poisson, exponential, the mean busy by Little's
// law), says the burst of the default scenario plainly and that a steady
// one has none, and tries no Keep under the floor unless told to.
func TestSuggestSaysItsLoadAndKeepsTheFloor(t *testing.T) {
	q := []string{"-rate", "400", "-hold", "15ms", "-target", "5ms", "-seeds", "3", "-suggest"}
	burst := sim(t, q...)
	for _, want := range []string{
		"load      synthetic: Poisson arrivals at 400 a second; holds exponential, mean 15ms",
		"busy on average, by Little's law (rate × mean hold): 400 a second × 15ms = 6.00",
		"burst     x2 from 8s to 16s: 800 a second, 12.0 busy on average",
		"sized for the load above, bursts included (at its height 800 a second); for 400 a second throughout, -scenario steady",
		"Keep no shorter than 30s (-min-keep)",
	} {
		if !strings.Contains(burst, want) {
			t.Errorf("no %q in:\n%s", want, burst)
		}
	}
	steady := sim(t, append(q, "-scenario", "steady")...)
	if !strings.Contains(steady, "burst     none: 400 a second from start to end") || strings.Contains(steady, "bursts included") {
		t.Errorf("the steady search does not say it has no burst:\n%s", steady)
	}
	keeps := func(out string) []time.Duration {
		var ks []time.Duration
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) > 4 && slices.Contains([]string{"size", "idle", "keep", "final"}, f[0]) {
				if d, err := time.ParseDuration(f[3]); err == nil {
					ks = append(ks, d)
				}
			}
		}
		return ks
	}
	ks := keeps(steady)
	if len(ks) == 0 {
		t.Fatalf("no trials read from:\n%s", steady)
	}
	for _, k := range ks {
		if k < 30*time.Second {
			t.Errorf("a trial with Keep %v under the 30s floor:\n%s", k, steady)
		}
	}
	if !strings.Contains(steady, "Keep 30s\n") {
		t.Errorf("the steady search does not suggest Keep 30s:\n%s", steady)
	}
	free := sim(t, append(q, "-scenario", "steady", "-min-keep", "0")...)
	if !slices.ContainsFunc(keeps(free), func(k time.Duration) bool { return k < time.Second }) || !strings.Contains(free, "no floor on Keep") {
		t.Errorf("-min-keep 0 tried no Keep under 1s:\n%s", free)
	}
}

// A what-if on a recording states its uncertainty: each configuration's
// p99 as an interval of runs with the recorded holds resampled, the
// recording's own figure among the numbers; -resamples 0 leaves it out.
func TestReplayWhatIfGivesAnInterval(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "load.csv")
	sim(t, "-record", csv, "-table=false")
	out := sim(t, "-replay", csv, "-compare", "size=10", "-resamples", "30")
	for _, want := range []string{"p99 interval   arrivals as recorded, the holds drawn again", "30 times (-resamples)",
		"A: p99 14.2ms with the holds as recorded; 90% of the resampled runs ", "B: p99 "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	var lo, hi string
	i := strings.Index(out, "B: p99 ")
	if _, err := fmt.Sscanf(out[i:], "B: p99 %s with the holds as recorded; 90%% of the resampled runs %s to %s\n", new(string), &lo, &hi); err != nil {
		t.Fatalf("B's interval unread (%v):\n%s", err, out[i:])
	}
	l, err1 := time.ParseDuration(lo)
	h, err2 := time.ParseDuration(hi)
	if err1 != nil || err2 != nil || !(l < h) {
		t.Errorf("B's interval %s to %s", lo, hi)
	}
	if out := sim(t, "-replay", csv, "-compare", "size=10", "-resamples", "0"); strings.Contains(out, "p99 interval") {
		t.Errorf("-resamples 0 still resampled:\n%s", out)
	}
	if out := sim(t, "-table=false"); strings.Contains(out, "p99 interval") {
		t.Errorf("a synthetic run has an interval from no recording:\n%s", out)
	}
}

// A comparison with a ward says, run by run, how many answers each guard
// gave in the pool's stead.
func TestCompareCountsGuardAnswers(t *testing.T) {
	out := sim(t, "-ward", "shedder+limiter", "-cpu-per-loan", "100", "-shed-cpu", "800", "-compare", "ward=none")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "guards answered instead") {
			line = l
		}
	}
	f := strings.Fields(line)
	if len(f) < 8 || f[3] != "shedder" || f[4] == "0," || f[5] != "limiter" || !strings.HasSuffix(line, "no ward") {
		t.Errorf("the guards' row is %q in:\n%s", line, out)
	}
	if out := sim(t, "-compare", "size=16"); strings.Contains(out, "guards answered") {
		t.Errorf("a comparison without a ward counts guards:\n%s", out)
	}
}
