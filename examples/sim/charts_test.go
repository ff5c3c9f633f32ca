package main

import (
	"bytes"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/ward"
)

// drawing is what a test reads back from an SVG: every text with its
// place, and every series with its points and its axis' top.
type drawing struct {
	Texts []struct {
		Label  string  `xml:"data-label,attr"`
		Tick   string  `xml:"data-tick,attr"`
		Column string  `xml:"data-column,attr"`
		Panel  string  `xml:"data-panel,attr"`
		X      float64 `xml:"x,attr"`
		Y      float64 `xml:"y,attr"`
		Text   string  `xml:",chardata"`
	} `xml:"text"`
	Lines []struct {
		Column string  `xml:"data-column,attr"`
		Panel  string  `xml:"data-panel,attr"`
		Series string  `xml:"data-series,attr"`
		Top    float64 `xml:"data-top,attr"`
		Values string  `xml:"data-values,attr"`
		Points string  `xml:"points,attr"`
	} `xml:"polyline"`
	Rules []struct {
		Rule string `xml:"data-rule,attr"`
	} `xml:"line"`
}

func readDrawing(t *testing.T, b []byte) drawing {
	t.Helper()
	var d drawing
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// charts are the runs whose charts the tests look at: each built-in alone,
// and the comparisons the README shows.
func charts(t *testing.T) map[string][]byte {
	m := map[string][]byte{}
	for _, name := range engine.Builtins {
		m[name] = svg(t, "-scenario", name, "-table=false")
	}
	m["outage vs no ward"] = svg(t, "-scenario", "outage", "-compare", "ward=none", "-table=false")
	m["slowdown vs size 24"] = svg(t, "-scenario", "slowdown", "-compare", "size=24", "-table=false")
	return m
}

func points(t *testing.T, s string) [][2]float64 {
	var pts [][2]float64
	for _, p := range strings.Fields(s) {
		x, y, _ := strings.Cut(p, ",")
		a, err1 := strconv.ParseFloat(x, 64)
		b, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("point %q", p)
		}
		pts = append(pts, [2]float64{a, b})
	}
	return pts
}

// crosses reports whether the segment from p to q passes through the box
// [x0, x1] × [y0, y1].
func crosses(p, q [2]float64, x0, x1, y0, y1 float64) bool {
	if p[0] > q[0] {
		p, q = q, p
	}
	a, z := max(p[0], x0), min(q[0], x1)
	if a > z {
		return false
	}
	at := func(x float64) float64 {
		if q[0] == p[0] {
			return p[1]
		}
		return p[1] + (q[1]-p[1])*(x-p[0])/(q[0]-p[0])
	}
	lo, hi := min(at(a), at(z)), max(at(a), at(z))
	if q[0] == p[0] {
		lo, hi = min(p[1], q[1]), max(p[1], q[1])
	}
	return hi >= y0 && lo <= y1
}

// A band's label (the outage, the burst) is written where no series of its
// panel passes: its box, a generous 6.5 px a character and 12 px high,
// crosses no segment of any line.
func TestBandLabelsCrossNoSeries(t *testing.T) {
	for name, b := range charts(t) {
		d := readDrawing(t, b)
		labels := 0
		for _, l := range d.Texts {
			if l.Label != "band" {
				continue
			}
			labels++
			x0, x1 := l.X, l.X+6.5*float64(len([]rune(l.Text)))
			y0, y1 := l.Y-10, l.Y+2
			for _, s := range d.Lines {
				if s.Column != l.Column || s.Panel != l.Panel {
					continue
				}
				pts := points(t, s.Points)
				for i := 1; i < len(pts); i++ {
					if crosses(pts[i-1], pts[i], x0, x1, y0, y1) {
						t.Errorf("%s: the label %q crosses the series %q near x %v", name, l.Text, s.Series, pts[i][0])
						break
					}
				}
			}
		}
		if (name == "outage" || name == "burst") && labels == 0 {
			t.Errorf("%s: no band label drawn", name)
		}
	}
}

// In "Resources and queue" the resources are not pressed into the bottom
// of the panel by a deep queue: lent, idle and the queue each reach at
// least a tenth of the axis they are drawn against.
func TestNoSeriesFlattenedByAnother(t *testing.T) {
	deep := false
	for name, b := range charts(t) {
		d := readDrawing(t, b)
		for _, s := range d.Lines {
			if !strings.HasPrefix(s.Panel, "Resources and queue") || !slices.Contains([]string{"lent", "idle", "queued callers"}, s.Series) {
				continue
			}
			top := 0.0
			for _, f := range strings.Fields(s.Values) {
				v, _ := strconv.ParseFloat(f, 64)
				top = max(top, v)
			}
			if s.Series == "queued callers" && top > 50 {
				deep = true
			}
			if top > 0 && s.Top > 10*top {
				t.Errorf("%s column %s: %s peaks at %v on an axis to %v", name, s.Column, s.Series, top, s.Top)
			}
		}
	}
	if !deep {
		t.Error("no chart has a deep queue: the test no longer looks at the case it is for")
	}
}

// A log axis has no "0" tick (its baseline is zero, "1" sits just above
// it), and no two ticks of an axis are written within 10 px of each other.
func TestAxisTicksAreApartAndLogHasNoZero(t *testing.T) {
	for name, b := range charts(t) {
		d := readDrawing(t, b)
		ticks := map[string][]float64{}
		for _, x := range d.Texts {
			if x.Tick == "" {
				continue
			}
			key := x.Column + "/" + x.Panel + "/" + x.Tick
			if x.Text == "0" && strings.Contains(x.Panel, "answers") {
				t.Errorf("%s: a 0 tick on the log axis of %s", name, x.Panel)
			}
			ticks[key] = append(ticks[key], x.Y)
		}
		if len(ticks) == 0 {
			t.Fatalf("%s: no ticks found", name)
		}
		for key, ys := range ticks {
			slices.Sort(ys)
			for i := 1; i < len(ys); i++ {
				if ys[i]-ys[i-1] < 10 {
					t.Errorf("%s: ticks of %s %v px apart", name, key, ys[i]-ys[i-1])
				}
			}
		}
	}
}

// The page says its title, its load line and its summary once: the chart
// inside it carries none of them.
func TestHTMLSaysEachThingOnce(t *testing.T) {
	name := filepath.Join(t.TempDir(), "o.html")
	sim(t, "-scenario", "outage", "-compare", "ward=none", "-html", name, "-table=false")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(b), "<body>")
	for _, once := range []string{"wardpool sim: outage", "Load: Poisson at 100 callers/s", "from second 8 to 16 every dial fails", "trade: A&#39;s ward made "} {
		if n := strings.Count(body, once); n != 1 {
			t.Errorf("the page says %q %d times", once, n)
		}
	}
}

// -target is drawn as a line on the wait panels, and only when given.
func TestTargetIsDrawn(t *testing.T) {
	rules := func(b []byte) []string {
		var r []string
		for _, l := range readDrawing(t, b).Rules {
			if l.Rule != "" {
				r = append(r, l.Rule)
			}
		}
		return r
	}
	if got := rules(svg(t, "-target", "15ms")); !slices.Contains(got, "target p99 15ms") {
		t.Errorf("-target 15ms drew the rules %q", got)
	}
	if got := rules(svg(t)); slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "target") }) {
		t.Errorf("no -target, yet the rules %q", got)
	}
}

// Each newer guard has a panel of its own when a run has it: the bucket's
// tokens, the shedder's CPU model and what it shed, the limiter's limit
// beside the loans, drawn from the rows; a run without it draws none.
func TestChartDrawsEveryGuard(t *testing.T) {
	r, err := engine.Run(func() engine.Scenario {
		s, _ := engine.Builtin("burst")
		s.Bucket, s.Shedder, s.Limiter = true, true, true
		s.ShedCPU, s.CPUPerLoan, s.Limit.Max = 800, 100, 8
		return s
	}(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := figure([]*engine.Result{r}, []string{"A"}, 0).WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	drawn := lines(t, buf.Bytes())
	for _, c := range []struct {
		panel, series string
		want          func(engine.Second) float64
	}{
		{panelBucket, "tokens", func(x engine.Second) float64 { return x.Tokens }},
		{panelShedder, "CPU ‰", func(x engine.Second) float64 { return float64(x.CPU) }},
		{panelShedder, "shed", func(x engine.Second) float64 { return float64(x.Guards[ward.GuardShedder]) }},
		{panelLimiter, "limit", func(x engine.Second) float64 { return float64(x.Limit) }},
	} {
		got, ok := drawn["0/"+c.panel+"/"+c.series]
		if !ok || len(got) != len(r.Rows) {
			t.Errorf("%s / %s: %d points drawn, want %d", c.panel, c.series, len(got), len(r.Rows))
			continue
		}
		for i, x := range r.Rows {
			if w := c.want(x); math.Abs(got[i]-w) > 1e-6*max(1, math.Abs(w)) {
				t.Errorf("%s / %s second %d: drawn %v, the row says %v", c.panel, c.series, x.Sec, got[i], w)
				break
			}
		}
	}
	if slices.Max(drawn["0/"+panelShedder+"/shed"]) == 0 {
		t.Error("the shedder panel shows nothing shed on a hot host")
	}
	for k := range lines(t, svg(t, "-table=false")) {
		if strings.Contains(k, "Bucket") || strings.Contains(k, "Shedder") || strings.Contains(k, "Limiter") {
			t.Errorf("a run without the newer guards draws %s", k)
		}
	}
}
