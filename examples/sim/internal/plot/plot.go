// Package plot is a small SVG line-chart writer: panels of time series
// stacked in columns, with axes, ticks, units, legends, shaded spans and
// text. It is written for the simulator's charts and nothing more; it uses
// only the standard library, so the simulator stays `go run`-able with no
// download, and its output is a pure function of its input (same figure,
// same bytes).
//
// Every series is written as one <polyline> carrying the numbers it plots
// in data-series and data-values attributes, so a test, or a reader with a
// text editor, can read back exactly what was drawn.
package plot

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Series is one line of a panel: Values[i] is plotted at x = X0 + i·Step of
// the figure.
type Series struct {
	Name   string
	Color  string // any SVG colour
	Values []float64
	Dash   bool // drawn dashed
	// Right draws the series against an axis of its own on the panel's
	// right, for a quantity whose scale would flatten the others (a queue
	// of a hundred beside a dozen resources). Its legend says so.
	Right bool
}

// Band is a shaded stretch of x, such as an outage, labelled in the top
// panel of its column.
type Band struct {
	From, To float64
	Label    string
	Color    string
}

// Panel is one chart: a title, a unit for its y axis, and its lines.
type Panel struct {
	Title  string
	Unit   string // y unit, written on the axis: "ms", "callers/s", …
	Series []Series
	// Max is the top of the y axis; zero means from the data (rounded up
	// to a tick). Panels in the same row of a figure share the larger.
	Max float64
	// Log draws the y axis on a log scale (of 1 + y, so zero stays at the
	// bottom): small counts stay visible beside large ones.
	Log bool
	// Rule draws a dashed horizontal line at Rule.Y labelled Rule.Label
	// (a ceiling such as Size), when Label is not empty.
	Rule struct {
		Y     float64
		Label string
	}
}

// Column is one configuration: a title and its panels, top to bottom.
type Column struct {
	Title  string
	Bands  []Band
	Panels []Panel
}

// Figure is the whole picture.
type Figure struct {
	Title string
	// Width is the width of one column in px; zero means 900 for one
	// column and 620 each for more.
	Width int
	// Text is written under the title, one line each: the scenario.
	Text []string
	// X0 and Step place the values of every series on the x axis; XLabel
	// names it with its unit ("virtual time (s)").
	X0, Step float64
	XLabel   string
	Columns  []Column
	// Footer is written under the charts, one line each: the summary.
	Footer []string
	// Bare leaves out the title, the text and the footer, for a page that
	// writes them itself.
	Bare bool
}

// Sizes, in px.
const (
	panelHeight = 150
	left        = 64
	right       = 52 // room for a right-hand axis
	panelGap    = 66
	lineHeight  = 16
	headTop     = 30
)

// WriteSVG writes f as one standalone SVG document.
func (f *Figure) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	rows := 0
	for _, c := range f.Columns {
		rows = max(rows, len(c.Panels))
	}
	// Shared y scales per row, left and right.
	tops := make([]float64, rows)
	rights := make([]float64, rows)
	for r := range rows {
		for _, c := range f.Columns {
			if r < len(c.Panels) {
				tops[r] = max(tops[r], top(&c.Panels[r]))
				rights[r] = max(rights[r], topRight(&c.Panels[r]))
			}
		}
	}
	colWidth := f.Width
	if colWidth <= 0 {
		colWidth = 900
		if len(f.Columns) > 1 {
			colWidth = 620
		}
	}
	head := headTop + lineHeight*(len(f.Text)+1) + 10
	footer := lineHeight*(len(f.Footer)+1) + 22
	if f.Bare {
		head, footer = 24, 22
	}
	width := colWidth * max(len(f.Columns), 1)
	height := head + rows*(panelHeight+panelGap) + footer
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	if !f.Bare {
		fmt.Fprintf(bw, `<text x="12" y="%d" font-size="16" font-weight="bold">%s</text>`+"\n", headTop-8, esc(f.Title))
		for i, t := range f.Text {
			fmt.Fprintf(bw, `<text x="12" y="%d" fill="#333">%s</text>`+"\n", headTop+8+lineHeight*i, esc(t))
		}
	}
	for ci, c := range f.Columns {
		x0 := ci * colWidth
		fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+left, head-4, esc(c.Title))
		for r, p := range c.Panels {
			y0 := head + r*(panelHeight+panelGap) + 42
			f.panel(bw, ci, &p, c.Bands, r == 0, r == len(c.Panels)-1, x0, colWidth, y0, tops[r], rights[r])
		}
	}
	fy := head + rows*(panelHeight+panelGap) + 18
	for i, t := range f.Footer {
		if f.Bare {
			break
		}
		fmt.Fprintf(bw, `<text x="12" y="%d" font-family="monospace" fill="#222">%s</text>`+"\n", fy+lineHeight*i, esc(t))
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// points is the length of the longest series of the figure: every panel
// spans it, so that side-by-side panels line up.
func (f *Figure) points() int {
	n := 0
	for _, c := range f.Columns {
		for _, p := range c.Panels {
			for _, s := range p.Series {
				n = max(n, len(s.Values))
			}
		}
	}
	return n
}

// top is the data's top for p's y axis.
func top(p *Panel) float64 {
	if p.Max > 0 {
		return p.Max
	}
	m := 0.0
	for _, s := range p.Series {
		if !s.Right {
			m = max(m, peak(s.Values))
		}
	}
	if p.Rule.Label != "" {
		m = max(m, p.Rule.Y)
	}
	return m
}

// topRight is the data's top for p's right-hand axis, zero when it has none.
func topRight(p *Panel) float64 {
	m := 0.0
	for _, s := range p.Series {
		if s.Right {
			m = max(m, peak(s.Values), 1)
		}
	}
	return m
}

// peak is the largest finite value of v, or zero.
func peak(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		if x > m && !math.IsInf(x, 0) {
			m = x
		}
	}
	return m
}

// scale is one y axis of a panel: its top, its ticks and how a value maps
// to a fraction of the panel's height.
type scale struct {
	top   float64
	ticks []float64
	log   bool
}

// newScale is the axis for data reaching ymax: ticks at 1, 2 or 5 times a
// power of ten, or, on a log axis (of 1 + y, so zero is the bottom),
// powers of ten from 1; a log axis has no "0" tick, its baseline is zero.
func newScale(ymax float64, log bool) scale {
	if log {
		sc := scale{top: math.Pow(10, math.Ceil(math.Log10(max(ymax, 1))-1e-9)), log: true}
		for t := 1.0; t <= sc.top; t *= 10 {
			sc.ticks = append(sc.ticks, t)
		}
		return sc
	}
	step := nice(ymax / 4)
	if ymax <= 0 {
		step = 1
	}
	sc := scale{top: math.Ceil(ymax/step-1e-9) * step}
	if sc.top <= 0 {
		sc.top = step
	}
	for y := 0.0; y <= sc.top+step/2; y += step {
		sc.ticks = append(sc.ticks, y)
	}
	return sc
}

// frac is where y falls between the axis' bottom (0) and top (1).
func (sc scale) frac(y float64) float64 {
	y = min(max(y, 0), sc.top)
	if sc.log {
		return math.Log10(1+y) / math.Log10(1+sc.top)
	}
	return y / sc.top
}

// bandLine is the height of one band label's line, in px.
const bandLine = 12

// panel draws p with its top-left plot corner at (x0+left, y0). When
// labels is set, the bands' labels are written in a strip along the top of
// the panel that no series enters.
func (f *Figure) panel(w *bufio.Writer, col int, p *Panel, bands []Band, labels, last bool, x0, colWidth, y0 int, ymax, ymaxRight float64) {
	pw := float64(colWidth - left - right)
	ph := float64(panelHeight)
	px := float64(x0 + left)
	py := float64(y0)
	n := f.points()
	xmin := f.X0
	xmax := f.X0 + f.Step*float64(max(n-1, 1))
	if xmax <= xmin {
		xmax = xmin + 1
	}
	strip := 0.0
	if labels {
		for _, b := range bands {
			if b.Label != "" {
				strip += bandLine
			}
		}
		if strip > 0 {
			strip += 4
		}
	}
	sc := newScale(ymax, p.Log)
	var rsc scale
	if ymaxRight > 0 {
		rsc = newScale(ymaxRight, p.Log)
	}
	X := func(x float64) float64 { return px + (x-xmin)/(xmax-xmin)*pw }
	// The data's area is below the label strip.
	yOf := func(a scale, y float64) float64 { return py + ph - a.frac(y)*(ph-strip) }
	Y := func(y float64) float64 { return yOf(sc, y) }

	// Title and legend: the legend in one row, or two when it does not fit.
	fmt.Fprintf(w, `<text x="%s" y="%s" font-weight="bold">%s</text>`+"\n", num(px), num(py-34), esc(p.Title))
	names := make([]string, len(p.Series))
	widths := make([]float64, len(p.Series))
	total := 0.0
	for i, s := range p.Series {
		names[i] = s.Name
		if s.Right {
			names[i] += " (right axis)"
		}
		widths[i] = 24 + 6.2*float64(len([]rune(names[i])))
		total += widths[i]
	}
	lx, ly := px, py-6
	if total > pw {
		ly = py - 20
	}
	for i, s := range p.Series {
		if ly < py-6 && lx+widths[i] > px+pw {
			lx, ly = px, py-6
		}
		fmt.Fprintf(w, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, num(lx), num(ly), num(lx+14), num(ly), s.Color, dash(s.Dash))
		fmt.Fprintf(w, `<text x="%s" y="%s">%s</text>`+"\n", num(lx+17), num(ly+4), esc(names[i]))
		lx += widths[i]
	}
	// Bands, and their labels in the strip, one line each.
	line := 0
	for _, b := range bands {
		a, z := X(max(b.From, xmin)), X(min(b.To, xmax))
		if z <= a {
			continue
		}
		fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.15"/>`+"\n", num(a), num(py), num(z-a), num(ph), b.Color)
		if strip > 0 && b.Label != "" {
			fmt.Fprintf(w, `<text data-label="band" data-column="%d" data-panel="%s" x="%s" y="%s" fill="#555" font-style="italic">%s</text>`+"\n",
				col, esc(p.Title), num(a+3), num(py+bandLine*float64(line+1)-2), esc(b.Label))
			line++
		}
	}
	// Grid, ticks and axes.
	for _, y := range sc.ticks {
		fmt.Fprintf(w, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`, num(px), num(Y(y)), num(px+pw), num(Y(y)))
		fmt.Fprintf(w, `<text data-tick="left" data-column="%d" data-panel="%s" x="%s" y="%s" text-anchor="end">%s</text>`+"\n", col, esc(p.Title), num(px-4), num(Y(y)+4), tick(y))
	}
	for _, y := range rsc.ticks {
		fmt.Fprintf(w, `<text data-tick="right" data-column="%d" data-panel="%s" x="%s" y="%s" fill="#a00">%s</text>`+"\n", col, esc(p.Title), num(px+pw+4), num(yOf(rsc, y)+4), tick(y))
	}
	xstep := nice((xmax - xmin) / 8)
	for x := math.Ceil(xmin/xstep) * xstep; x <= xmax+1e-9; x += xstep {
		fmt.Fprintf(w, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999"/>`, num(X(x)), num(py+ph), num(X(x)), num(py+ph+4))
		fmt.Fprintf(w, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(X(x)), num(py+ph+15), tick(x))
	}
	if ymaxRight > 0 {
		fmt.Fprintf(w, `<path d="M%s %sV%sH%sV%s" fill="none" stroke="#333"/>`+"\n", num(px), num(py), num(py+ph), num(px+pw), num(py))
	} else {
		fmt.Fprintf(w, `<path d="M%s %sV%sH%s" fill="none" stroke="#333"/>`+"\n", num(px), num(py), num(py+ph), num(px+pw))
	}
	unit := p.Unit
	if p.Log {
		unit += " (log)"
	}
	fmt.Fprintf(w, `<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)" fill="#333">%s</text>`+"\n",
		num(float64(x0)+14), num(py+ph/2), num(float64(x0)+14), num(py+ph/2), esc(unit))
	if last {
		fmt.Fprintf(w, `<text x="%s" y="%s" text-anchor="end" fill="#333">%s</text>`+"\n", num(px+pw), num(py+ph+28), esc(f.XLabel))
	}
	if p.Rule.Label != "" {
		fmt.Fprintf(w, `<line data-rule="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000" stroke-dasharray="2 3"/>`, esc(p.Rule.Label), num(px), num(Y(p.Rule.Y)), num(px+pw), num(Y(p.Rule.Y)))
		// A white outline keeps the label legible where a series passes.
		fmt.Fprintf(w, `<text x="%s" y="%s" text-anchor="end" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", num(px+pw-2), num(Y(p.Rule.Y)-3), esc(p.Rule.Label))
	}
	// Lines, each with the top of the axis it is drawn against.
	for _, s := range p.Series {
		a, side := sc, "left"
		if s.Right {
			a, side = rsc, "right"
		}
		var pts, vals strings.Builder
		for i, v := range s.Values {
			if i > 0 {
				pts.WriteByte(' ')
				vals.WriteByte(' ')
			}
			pts.WriteString(num(X(f.X0 + f.Step*float64(i))))
			pts.WriteByte(',')
			pts.WriteString(num(yOf(a, v)))
			vals.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		fmt.Fprintf(w, `<polyline data-column="%d" data-panel="%s" data-series="%s" data-axis="%s" data-top="%s" data-values="%s" points="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round"%s/>`+"\n",
			col, esc(p.Title), esc(s.Name), side, strconv.FormatFloat(a.top, 'g', -1, 64), vals.String(), pts.String(), s.Color, dash(s.Dash))
	}
}

func dash(d bool) string {
	if d {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

// nice rounds x up to 1, 2 or 5 times a power of ten.
func nice(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	switch f := x / e; {
	case f <= 1:
		return e
	case f <= 2:
		return 2 * e
	case f <= 5:
		return 5 * e
	}
	return 10 * e
}

// num writes a coordinate with one decimal.
func num(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) }

// tick writes an axis label: short, no trailing zeros.
func tick(x float64) string {
	if math.Abs(x) < 1e-9 {
		return "0"
	}
	if r := math.Round(x); math.Abs(x-r) < 1e-9 && math.Abs(r) < 1e12 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func esc(s string) string { return escaper.Replace(s) }
