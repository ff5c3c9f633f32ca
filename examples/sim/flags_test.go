package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// away sets every setting a flag can override to something other than the
// flag's default, so that a flag given with its default value has to change
// the run to be seen applying.
const away = `seed 7
seconds 5
rate 50
hold 30ms
dial 10ms
size 6
idle 3
keep 1s
life 5s
timeout 300ms
ward all
bucket-rate 7
bucket-burst 3
shed-cpu 500
shed-floor 0.3
cpu-idle 100
cpu-per-loan 30
limit-initial 4
limit-min 2
limit-max 50
limit-slow 500ms
limit-backoff 0.5
failover 2s
hold-for 1s
hold-every 50ms
server-max 2
full fail
`

// runIn runs the command on in-memory files holding the scenario away.
func runIn(t *testing.T, args ...string) string {
	t.Helper()
	m := newMemFiles()
	m.put("away.txt", []byte(away))
	var out bytes.Buffer
	args = append([]string{"-scenario", "away.txt", "-table=false", "-svg", "out.svg"}, args...)
	if err := command(m, args, &out); err != nil {
		t.Fatalf("sim %v: %v", args, err)
	}
	svg, err := m.ReadFile("out.svg")
	if err != nil {
		t.Fatal(err)
	}
	return out.String() + string(svg)
}

// Every setting flag given on the command line applies, its default value
// included: each is given at its default over a scenario that sets another.
func TestEveryFlagGivenApplies(t *testing.T) {
	for _, c := range []struct {
		flag, value string
		says        string // in the summary or the chart's load line
	}{
		{"seed", "1", "seed 1,"},
		{"seconds", "24", ", 24 s."},
		{"rate", "100", "Poisson at 100 callers/s"},
		{"hold", "40ms", "mean 40ms"},
		{"dial", "20ms", "dial 20ms"},
		{"size", "12", "Size 12, Idle 3,"},
		{"idle", "12", "Size 6, Idle 12,"},
		{"keep", "2s", "Keep 2s, Life"},
		{"life", "0", "Keep 1s, breaker+backoff+"},
		{"timeout", "0", "callers wait for ever"},
		{"ward", "none", "ward off"},
		{"bucket-rate", "50", "bucket (50 a second,"},
		{"bucket-burst", "10", "burst 10)"},
		{"shed-cpu", "900", "hot at 900‰"},
		{"shed-floor", "0.1", "floor 0.1;"},
		{"cpu-idle", "200", "CPU 200‰ +"},
		{"cpu-per-loan", "50", "+ 50‰ a busy resource"},
		{"limit-initial", "10", "AIMD from 10 in"},
		{"limit-min", "1", "in [1, 50]"},
		{"limit-max", "100", "in [2, 100]"},
		{"limit-slow", "1s", "a hold over 1s"},
		{"limit-backoff", "0.9", "x0.9 on"},
		{"hold-for", "0", "switchover     not held: "},
		{"hold-every", "0", "held for 1s, a dial every 100ms: "},
		{"server-max", "3", "full backend   takes 3, refused: "},
		{"full", "wait", "refused: the caller waits: "},
	} {
		if strings.Contains(runIn(t), c.says) {
			t.Fatalf("-%s: the scenario alone already says %q", c.flag, c.says)
		}
		if got := runIn(t, "-"+c.flag, c.value); !strings.Contains(got, c.says) {
			t.Errorf("-%s %s is ignored: no %q in\n%s", c.flag, c.value, c.says, got[:min(len(got), 600)])
		}
	}
	// -server-max at its default, 0, lifts the scenario's limit.
	if line := "full backend   takes 2,"; !strings.Contains(runIn(t), line) || strings.Contains(runIn(t, "-server-max", "0"), line) {
		t.Errorf("-server-max 0 is ignored, or the scenario's server-max 2 is: %q", line)
	}
	if len(settingFlags) != 26 {
		t.Errorf("%d setting flags, the test covers 26", len(settingFlags))
	}
}

// Size and idle given together apply as given, in either order: an idle
// equal to the default is not lost to size's "idle follows size".
func TestSizeAndIdleTogether(t *testing.T) {
	for _, args := range [][]string{{"-size", "13", "-idle", "12"}, {"-idle", "12", "-size", "13"}} {
		out := sim(t, append(args, "-table=false")...)
		if !strings.Contains(out, "Size 13, Idle 12,") {
			t.Errorf("%v runs\n%s", args, out)
		}
	}
	if out := sim(t, "-size", "13", "-table=false"); !strings.Contains(out, "Size 13, Idle 13,") {
		t.Errorf("-size alone: idle does not follow:\n%s", out)
	}
}

// The flags beyond the scenario apply too.
func TestOtherFlagsApply(t *testing.T) {
	if out := sim(t, "-table=false"); strings.Contains(out, " sec ") {
		t.Errorf("-table=false printed the table:\n%s", out)
	}
	if out := sim(t, "-table=true"); !strings.Contains(out, " sec ") {
		t.Errorf("-table=true printed no table:\n%s", out)
	}
	out := sim(t, "-suggest", "-target", "1ns", "-max-size", "3", "-seeds", "2")
	if !strings.Contains(out, "no Size up to 3") || !strings.Contains(out, "within 1ns on at least 2 of 2 seeds (seeds 1 to 2)") {
		t.Errorf("-max-size 3 -target 1ns:\n%s", out)
	}
}

// The page fills its controls with a scenario's own settings
// (settingsOf): given back as flags, they change nothing.
func TestScenarioSettingsAsFlagsChangeNothing(t *testing.T) {
	for _, name := range engine.Builtins {
		s, _ := engine.Builtin(name)
		args := []string{"-scenario", name, "-table=false"}
		for f, v := range settingsOf(s) {
			args = append(args, "-"+f, v.(string))
		}
		if a, b := sim(t, "-scenario", name, "-table=false"), sim(t, args...); a != b {
			t.Errorf("%s: %v runs\n%s\nnot\n%s", name, args, b, a)
		}
	}
}

// -suggest honours -seeds, -svg and -html: the chart of the search carries
// the target as a line and a point for each trial.
func TestSuggestDrawsItsSearch(t *testing.T) {
	m := newMemFiles()
	var out bytes.Buffer
	if err := command(m, []string{"-suggest", "-target", "10ms", "-seeds", "3", "-svg", "s.svg", "-html", "s.html"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "this answer rests on 3 seeds (seeds 1 to 3)") {
		t.Errorf("-seeds 3:\n%s", out.String())
	}
	trials := 0
	for l := range strings.Lines(out.String()) {
		if f := strings.Fields(l); len(f) > 0 && slices.Contains([]string{"size", "idle", "keep", "final"}, f[0]) && len(f) > 10 {
			trials++
		}
	}
	b, err := m.ReadFile("s.svg")
	if err != nil {
		t.Fatal(err)
	}
	d := readDrawing(t, b)
	if !slices.ContainsFunc(d.Rules, func(r struct {
		Rule string `xml:"data-rule,attr"`
	}) bool {
		return r.Rule == "target 10ms"
	}) {
		t.Error("the search's chart has no target line")
	}
	for _, l := range d.Lines {
		if n := len(strings.Fields(l.Values)); n != trials {
			t.Errorf("series %s has %d points for %d trials", l.Series, n, trials)
		}
	}
	h, err := m.ReadFile("s.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "<svg") || !strings.Contains(string(h), "this answer rests on 3 seeds") {
		t.Error("the search's page has no chart or no answer")
	}
}
