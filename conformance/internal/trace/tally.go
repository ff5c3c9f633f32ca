package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Row is one line of a conformance table: what was compared with one
// reference in one step file, or in all of them (File "all"); or, when
// Reason is set, the traces of that file not compared whole with that
// reference, and why.
type Row struct {
	Reference string
	File      string
	// Reason is empty for a row of compared traces. For a row of traces not
	// compared whole it says why (see NotCompared); such a row counts Traces
	// and Steps, and, for InPlaceRecycle, the hand-outs, refusals and
	// differences of the steps before deliberate difference 3 (and Ruled
	// after it).
	Reason string
	// Ran lists the versions that answered, as their recordings' ran lines
	// say, without the reference's name.
	Ran []string
	// Files and Traces count the step files and traces compared.
	Files, Traces int
	// Handouts counts the takes that handed a resource out, Refusals the
	// takes refused at the ceiling, Steps every step compared.
	Handouts, Refusals, Steps int
	// Differ counts the traces whose recordings differ, and Same the
	// hand-outs recorded identically (the same step answered with the same
	// line) by both pools.
	Differ, Same int
	// Ruled counts, in a row of traces compared up to deliberate difference
	// 3 (InPlaceRecycle), the hand-outs from that step on, which are held to
	// the model of SQLAlchemy's rule (SQLAlchemyRule) instead.
	Ruled int
}

// Difference is the first place where a trace's recordings differ.
type Difference struct {
	File, Reference, Trace string
	// Text names the step and shows both lines.
	Text string
}

// String returns the difference as the tally command prints it.
func (d Difference) String() string {
	return fmt.Sprintf("%s against %s: %s", d.File, d.Reference, d.Text)
}

// Tally compares, in every step file of dir (*.steps), each trace with the
// references its compare line names: the reference's recording, read from
// NAME.REF.rec beside the step file, against wardpool's. wardpool's recording
// is Replay's when replay is true, and NAME.wardpool.rec's otherwise.
//
// It returns a row for each step file and reference with something to
// compare and, for each trace that differs, the first difference. A trace
// that NotCompared leaves out is counted in a row of its own that carries
// the reason; for InPlaceRecycle it is compared up to deliberate difference
// 3, whose step must be exactly it (CheckDifference3). Every SQLAlchemy
// recording is also held to the model of its rule (SQLAlchemyRule), and a
// departure is a difference too. A trace that names a reference with no
// recording for it, or a recording with no trace, is an error: a comparison
// silently skipped is not a comparison.
func Tally(dir string, replay bool) ([]Row, []Difference, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.steps"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no step files", dir)
	}
	var rows []Row
	var diffs []Difference
	for _, file := range files {
		traces, err := ReadSteps(file)
		if err != nil {
			return nil, nil, err
		}
		base := strings.TrimSuffix(file, ".steps")
		var ours map[string]Recording
		if !replay {
			if ours, err = ReadRecordings(base + "." + Wardpool + ".rec"); err != nil {
				return nil, nil, err
			}
		}
		for _, ref := range References {
			row := &Row{Reference: ref, File: filepath.Base(file)}
			left := map[string]*Row{} // rows of traces not compared, by reason
			name := base + "." + ref + ".rec"
			theirs, err := ReadRecordings(name)
			if errors.Is(err, fs.ErrNotExist) && !slices.ContainsFunc(traces, func(t Trace) bool { return t.ComparedWith(ref) }) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			for _, t := range traces {
				if !t.ComparedWith(ref) {
					continue
				}
				want, ok := theirs[t.Name]
				if !ok {
					return nil, nil, fmt.Errorf("%s: no recording of trace %s", name, t.Name)
				}
				delete(theirs, t.Name)
				var got Recording
				if replay {
					if got, err = Replay(t); err != nil {
						return nil, nil, err
					}
				} else if got, ok = ours[t.Name]; !ok {
					return nil, nil, fmt.Errorf("%s.%s.rec: no recording of trace %s", base, Wardpool, t.Name)
				}
				ran := strings.TrimPrefix(want.Ran, ref+" ")
				if ref == SQLAlchemy {
					// Every SQLAlchemy recording, compared or not, is
					// held to the model of its rule.
					rule, err := SQLAlchemyRule(t)
					if err != nil {
						return nil, nil, err
					}
					if d := Diff(want, rule); d != "" {
						diffs = append(diffs, Difference{File: row.File, Reference: ref + " (its rule, sqlrule.go)", Trace: t.Name, Text: d})
					}
				}
				if why := NotCompared(ref, want); why != "" {
					l := left[why]
					if l == nil {
						l = &Row{Reference: ref, File: row.File, Reason: why}
						left[why] = l
					}
					if !slices.Contains(l.Ran, ran) {
						l.Ran = append(l.Ran, ran)
					}
					l.Traces++
					l.Steps += len(want.Entries)
					if why == InPlaceRecycle {
						// Compared up to the recycle, which must be
						// exactly difference 3; the rest was held to
						// SQLAlchemy's rule above.
						k := FirstInPlaceRecycle(want)
						before := Recording{Name: want.Name, Policy: want.Policy, Entries: want.Entries[:k]}
						after := Recording{Entries: want.Entries[k:]}
						n, r := before.Handouts()
						l.Handouts += n
						l.Refusals += r
						ruled, _ := after.Handouts()
						l.Ruled += ruled
						mine := got
						if len(mine.Entries) > k {
							mine.Entries = mine.Entries[:k]
						}
						l.Same += sameHandouts(before, mine)
						d := Diff(before, mine)
						if d == "" {
							d = CheckDifference3(want, got, k)
						}
						if d != "" {
							l.Differ++
							diffs = append(diffs, Difference{File: row.File, Reference: ref, Trace: t.Name, Text: d})
						}
					}
					continue
				}
				if !slices.Contains(row.Ran, ran) {
					row.Ran = append(row.Ran, ran)
				}
				row.Traces++
				n, r := want.Handouts()
				row.Handouts += n
				row.Refusals += r
				row.Steps += len(want.Entries)
				row.Same += sameHandouts(want, got)
				if d := Diff(want, got); d != "" {
					row.Differ++
					diffs = append(diffs, Difference{File: row.File, Reference: ref, Trace: t.Name, Text: d})
				}
			}
			for name := range theirs {
				return nil, nil, fmt.Errorf("%s.%s.rec: trace %s is not in the step file or not compared with %s", base, ref, name, ref)
			}
			if row.Traces > 0 {
				row.Files = 1
				rows = append(rows, *row)
			}
			for _, why := range slices.Sorted(maps.Keys(left)) {
				left[why].Files = 1
				rows = append(rows, *left[why])
			}
		}
	}
	return rows, diffs, nil
}

// InPlaceRecycle is the reason NotCompared gives for a lifetime trace that
// SQLAlchemy recorded recycling a connection in place over other idle
// records: deliberate difference 3 in README.md. Such a trace is compared
// with wardpool up to that step; the step must be exactly difference 3
// (CheckDifference3); from there on SQLAlchemy's recording is held to the
// model of its rule (SQLAlchemyRule), as every SQLAlchemy recording is.
const InPlaceRecycle = "compared up to difference 3"

// NotCompared returns why the trace that ref recorded as rec is left out of
// the comparison with ref, or "" when it is compared. The decision reads
// only the reference's own recording, never wardpool's, so a trace drawn
// from any seed is sorted the same way before anything is compared.
//
// One rule holds today: a lifetime trace is not compared whole with
// SQLAlchemy when its recording shows a take that closes a resource (a
// recycle at checkout) while two or more were idle after the step before it
// (at the start of a trace none are; FirstInPlaceRecycle finds the step).
// SQLAlchemy then replaces the connection inside the record it popped and
// leaves the records below it idle; what it hands out and counts from there
// on is its bookkeeping (README.md, deliberate difference 3). Tally compares
// such a trace up to that step and checks the step itself. A recycle with
// one idle, or none, is compared.
func NotCompared(ref string, rec Recording) string {
	if ref != SQLAlchemy || FirstInPlaceRecycle(rec) < 0 {
		return ""
	}
	return InPlaceRecycle
}

// Totals adds rows up into one row per reference, in the order of
// References, with File "all": the compared rows into one, and after it the
// rows of traces not compared into one for each reason, in the order the
// reasons first appear.
func Totals(rows []Row) []Row {
	var reasons []string
	for _, r := range rows {
		if r.Reason != "" && !slices.Contains(reasons, r.Reason) {
			reasons = append(reasons, r.Reason)
		}
	}
	var out []Row
	for _, ref := range References {
		out = append(out, total(rows, ref, ""))
		for _, why := range reasons {
			if t := total(rows, ref, why); t.Traces > 0 {
				out = append(out, t)
			}
		}
	}
	return out
}

// Compared returns the rows of compared traces, leaving out the rows of
// traces not compared.
func Compared(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Reason == "" {
			out = append(out, r)
		}
	}
	return out
}

// total adds up the rows of ref with the given reason ("" for compared).
func total(rows []Row, ref, reason string) Row {
	t := Row{Reference: ref, File: "all", Reason: reason}
	for _, r := range rows {
		if r.Reference != ref || r.Reason != reason {
			continue
		}
		for _, v := range r.Ran {
			if !slices.Contains(t.Ran, v) {
				t.Ran = append(t.Ran, v)
			}
		}
		t.Files += r.Files
		t.Traces += r.Traces
		t.Steps += r.Steps
		t.Handouts += r.Handouts
		t.Refusals += r.Refusals
		t.Differ += r.Differ
		t.Same += r.Same
		t.Ruled += r.Ruled
	}
	return t
}

// sameHandouts counts the hand-outs of want that got records with the same
// line at the same step.
func sameHandouts(want, got Recording) int {
	n := 0
	for i, e := range want.Entries {
		if e.Got > 0 && i < len(got.Entries) && e.String() == got.Entries[i].String() {
			n++
		}
	}
	return n
}

// WriteTable writes rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) error {
	var b bytes.Buffer
	b.WriteString("| reference | version that ran | step file | traces | steps | hand-outs compared | refusals compared | result |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		result := "all identical"
		switch {
		case r.Reason == InPlaceRecycle && r.Differ == 0:
			result = fmt.Sprintf("identical up to difference 3, which is exactly it; after it %d hand-outs as SQLAlchemy's rule says", r.Ruled)
		case r.Reason != "":
			result = r.Reason
		case r.Differ > 0:
			result = fmt.Sprintf("%d of %d traces differ; %d of %d hand-outs identical", r.Differ, r.Traces, r.Same, r.Handouts)
		}
		file := r.File
		if file == "all" {
			file = fmt.Sprintf("all %d", r.Files)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %s |\n",
			r.Reference, strings.Join(r.Ran, "; "), file, r.Traces, r.Steps, r.Handouts, r.Refusals, result)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ReadSteps reads a step file; the error messages name it by its base name.
func ReadSteps(name string) ([]Trace, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSteps(f, filepath.Base(name))
}

// ReadRecordings reads a recording file into a map by trace name.
func ReadRecordings(name string) (map[string]Recording, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ParseRecording(f, filepath.Base(name))
	if err != nil {
		return nil, err
	}
	m := make(map[string]Recording, len(recs))
	for _, r := range recs {
		if _, dup := m[r.Name]; dup {
			return nil, fmt.Errorf("%s: trace %s recorded twice", name, r.Name)
		}
		m[r.Name] = r
	}
	return m, nil
}
