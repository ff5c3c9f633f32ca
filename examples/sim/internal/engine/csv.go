package engine

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The load CSV: one acquire a line, so that the logs of any pool can be
// turned into one.
//
//	# lines starting with # are comments
//	asked,acquired,released,answers
//	0.012000000,0.012000000,0.049731002,Ready
//	0.013500000,0.034100000,0.081000000,Make
//	0.020000000,,,queued
//
//   - asked: when the caller asked for a resource.
//   - acquired: when it got one; empty if it never did (it gave up, was
//     refused, or its dial failed).
//   - released: when it gave the resource back; empty if it still held it
//     when the recording ended.
//   - answers (optional): what the pool answered on the caller's behalf,
//     in order, separated by spaces ("queued" first when the caller joined
//     a queue without asking; "…" when there were more than six). Only the
//     simulator reads it, to check a replay; other tools may leave it out.
//
// Times are seconds since the start of the recording, a decimal with up to
// nine places (nanoseconds; read exactly, not through a float), or RFC 3339
// timestamps (2026-11-30T14:02:00.125Z), in which case the earliest asked is
// the start; one file uses one kind. The header line is optional; without
// it the columns are in the order above. Rows need not be sorted: they are
// replayed in order of asked, rows asked at the same instant in file order.
//
// What a replay keeps and what it estimates. The instants callers ask and
// how long each held its resource (released − acquired) are taken as
// recorded; so a replay assumes a caller's work takes as long whatever the
// pool does, which is false when the database slows down because of the
// load itself. How long a dial takes is a parameter (the scenario's dial),
// not a recording. A caller that never got a resource has no hold on
// record: if other limits would serve it, it holds for the scenario's mean
// hold, an estimate.

// Row is one line of a load CSV, in nanoseconds since the start.
type Row struct {
	Line              int   // in the file, 1-based
	Asked             int64 // since the start
	Acquired, Release int64 // -1 when empty
	Answers           string
	// Last says the caller asked after everything else at its instant (see
	// Arrival.Last); a CSV cannot say so, a Keeper's recording can.
	Last bool
}

// Recording is a load read from a CSV: its rows in order of Asked.
type Recording struct {
	Rows []Row
	// Origin is the wall-clock instant of the start, for a file of RFC
	// 3339 times; the zero time for a file of seconds.
	Origin time.Time
}

// ErrCSV is wrapped by every error ReadCSV returns.
var ErrCSV = errors.New("sim: bad load CSV")

// maxRows bounds a recording, so that a huge file fails clearly rather than
// exhausting memory.
const maxRows = 50_000_000

// ReadCSV reads a load CSV (see the format above). An error names its line
// (a *LineError wrapping ErrCSV); ReadCSV never panics.
func ReadCSV(r io.Reader) (*Recording, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	col := [4]int{0, 1, 2, 3}
	ncol := 3
	kind := 0 // 0 unknown, 1 seconds, 2 RFC 3339
	var origin time.Time
	var stamps []time.Time // RFC 3339: asked, acquired, released per row
	rec := &Recording{}
	first := true
	last := 0 // the line of the last record read
	for {
		f, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &LineError{pe.Line, fmt.Errorf("%w: %v", ErrCSV, pe.Err)}
			}
			return nil, &LineError{last + 1, fmt.Errorf("%w: %v", ErrCSV, err)}
		}
		line, _ := cr.FieldPos(0)
		last = line
		bad := func(format string, a ...any) error {
			return &LineError{line, fmt.Errorf("%w: "+format, append([]any{ErrCSV}, a...)...)}
		}
		if first {
			first = false
			if h, ok, err := header(f); err != nil {
				return nil, bad("%v", err)
			} else if ok {
				col, ncol = h, 3
				if h[3] >= 0 {
					ncol = 4
				}
				continue
			}
			if len(f) >= 4 {
				ncol = 4
			}
		}
		if len(f) < 3 {
			return nil, bad("%d fields, want asked,acquired,released[,answers]", len(f))
		}
		if len(rec.Rows) >= maxRows {
			return nil, bad("more than %d rows", maxRows)
		}
		row := Row{Line: line, Acquired: -1, Release: -1}
		var ts [3]time.Time
		for i, name := range [3]string{"asked", "acquired", "released"} {
			v := ""
			if col[i] < len(f) {
				v = strings.TrimSpace(f[col[i]])
			}
			if v == "" {
				if i == 0 {
					return nil, bad("asked is empty")
				}
				continue
			}
			k := 1
			if strings.ContainsAny(v, "T:") {
				k = 2
			}
			if kind == 0 {
				kind = k
			} else if kind != k {
				return nil, bad("%s %q: one file uses seconds or RFC 3339 times, not both", name, v)
			}
			if k == 1 {
				ns, err := seconds(v)
				if err != nil {
					return nil, bad("%s: %v", name, err)
				}
				*[3]*int64{&row.Asked, &row.Acquired, &row.Release}[i] = ns
			} else {
				t, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					return nil, bad("%s %q is not an RFC 3339 time", name, v)
				}
				ts[i] = t
				*[3]*int64{&row.Asked, &row.Acquired, &row.Release}[i] = 0
			}
		}
		if ncol == 4 && col[3] < len(f) {
			row.Answers = strings.TrimSpace(f[col[3]])
		}
		if kind == 2 {
			stamps = append(stamps, ts[0], ts[1], ts[2])
			if origin.IsZero() || ts[0].Before(origin) {
				origin = ts[0]
			}
		}
		rec.Rows = append(rec.Rows, row)
	}
	if kind == 2 {
		rec.Origin = origin
		for i := range rec.Rows {
			row := &rec.Rows[i]
			for j, p := range [3]*int64{&row.Asked, &row.Acquired, &row.Release} {
				t := stamps[3*i+j]
				if t.IsZero() {
					continue
				}
				d := t.Sub(origin)
				if d > maxSpan {
					return nil, &LineError{row.Line, fmt.Errorf("%w: %v is more than a year after the first asked", ErrCSV, t)}
				}
				*p = int64(d)
			}
		}
	}
	for _, row := range rec.Rows {
		bad := func(format string, a ...any) error {
			return &LineError{row.Line, fmt.Errorf("%w: "+format, append([]any{ErrCSV}, a...)...)}
		}
		switch {
		case row.Acquired >= 0 && row.Acquired < row.Asked:
			return nil, bad("acquired before asked")
		case row.Release >= 0 && row.Acquired < 0:
			return nil, bad("released but never acquired")
		case row.Release >= 0 && row.Release < row.Acquired:
			return nil, bad("released before acquired")
		}
	}
	slices.SortStableFunc(rec.Rows, func(a, b Row) int {
		switch {
		case a.Asked < b.Asked:
			return -1
		case a.Asked > b.Asked:
			return 1
		}
		return 0
	})
	return rec, nil
}

// header reads a header line, if f is one, into the column of each of
// asked, acquired, released and answers (-1 when absent).
func header(f []string) ([4]int, bool, error) {
	h := [4]int{-1, -1, -1, -1}
	if len(f) == 0 {
		return h, false, nil
	}
	v := strings.TrimSpace(f[0])
	if v == "" || strings.ContainsAny(v[:1], "0123456789.") {
		return h, false, nil
	}
	for i, name := range f {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "asked":
			h[0] = i
		case "acquired":
			h[1] = i
		case "released":
			h[2] = i
		case "answers":
			h[3] = i
		default:
			return h, false, fmt.Errorf("unknown column %q (asked, acquired, released, answers)", name)
		}
	}
	for i, name := range [3]string{"asked", "acquired", "released"} {
		if h[i] < 0 {
			return h, false, fmt.Errorf("header has no %s column", name)
		}
	}
	return h, true, nil
}

// seconds reads a decimal number of seconds exactly, as nanoseconds.
func seconds(v string) (int64, error) {
	whole, frac, dot := strings.Cut(v, ".")
	if whole == "" && (!dot || frac == "") || len(frac) > 9 {
		return 0, fmt.Errorf("%q is not seconds with at most nine decimals", v)
	}
	var s int64
	if whole != "" {
		n, err := strconv.ParseUint(whole, 10, 32)
		if err != nil || time.Duration(n)*time.Second > maxSpan {
			return 0, fmt.Errorf("%q is not seconds from 0 to a year", v)
		}
		s = int64(n) * int64(time.Second)
	}
	if frac != "" {
		n, err := strconv.ParseUint(frac, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not seconds with at most nine decimals", v)
		}
		for range 9 - len(frac) {
			n *= 10
		}
		s += int64(n)
	}
	return s, nil
}

// End is the latest instant in the recording.
func (r *Recording) End() time.Duration {
	var end int64
	for _, row := range r.Rows {
		end = max(end, row.Asked, row.Acquired, row.Release)
	}
	return time.Duration(end)
}

// Load returns the recording as a load, fresh for one run. hold is the
// estimate for callers that never got a resource (see the format's notes).
func (r *Recording) Load(hold time.Duration) Load {
	a := make([]Arrival, len(r.Rows))
	for i, row := range r.Rows {
		a[i] = Arrival{At: time.Duration(row.Asked), Hold: hold, Last: row.Last}
		switch {
		case row.Acquired >= 0 && row.Release >= 0:
			a[i].Hold, a[i].Recorded = time.Duration(row.Release-row.Acquired), true
		case row.Acquired >= 0:
			a[i].Hold, a[i].Recorded = -1, true
		}
	}
	return &Slice{A: a}
}

// CSVWriter writes the callers of a run as a load CSV, in order of arrival.
type CSVWriter struct {
	w    *bufio.Writer
	rows []csvRow // callers not yet written, from id base on
	base uint64
	err  error
}

type csvRow struct {
	c        *caller // until the caller is done
	asked    int64
	got, rel int64
	answers  string
	done     bool
}

// NewCSVWriter returns a writer of a run's load to w; call Close after the
// run to learn of a write error.
func NewCSVWriter(w io.Writer) *CSVWriter {
	cw := &CSVWriter{w: bufio.NewWriter(w)}
	_, cw.err = cw.w.WriteString("# wardpool sim load: times in seconds since the start\nasked,acquired,released,answers\n")
	return cw
}

func (cw *CSVWriter) open(c *caller) {
	cw.rows = append(cw.rows, csvRow{c: c, asked: c.asked, got: -1, rel: -1})
}

// close settles c's row; released is -1 when it never held a resource.
func (cw *CSVWriter) close(c *caller, released int64) {
	row := &cw.rows[c.id-cw.base]
	row.fill(c)
	row.rel, row.done, row.c = released, true, nil
	if c.id == cw.base {
		cw.flush(false)
	}
}

func (row *csvRow) fill(c *caller) {
	row.got = c.got
	var b strings.Builder
	if c.queued0 {
		b.WriteString("queued")
	}
	for i := range min(int(c.nans), maxAnswers) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.answers[i].String())
	}
	if int(c.nans) > maxAnswers {
		b.WriteString(" …")
	}
	row.answers = b.String()
}

// flush writes the rows that are settled, in order; all writes the rest
// too, as they stand.
func (cw *CSVWriter) flush(all bool) {
	n := 0
	for n < len(cw.rows) && (cw.rows[n].done || all) {
		row := &cw.rows[n]
		if !row.done {
			row.fill(row.c)
		}
		if cw.err == nil {
			_, cw.err = fmt.Fprintf(cw.w, "%s,%s,%s,%s\n", stamp(row.asked), stamp(row.got), stamp(row.rel), row.answers)
		}
		n++
	}
	cw.rows = cw.rows[:copy(cw.rows, cw.rows[n:])]
	cw.base += uint64(n)
}

// Close flushes what is buffered and reports the first write error.
func (cw *CSVWriter) Close() error {
	if err := cw.w.Flush(); cw.err == nil {
		cw.err = err
	}
	return cw.err
}

func stamp(ns int64) string {
	if ns < 0 {
		return ""
	}
	return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
}
