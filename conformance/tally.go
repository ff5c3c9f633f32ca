package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Row is one reference's line in a conformance table.
type Row struct {
	Reference string
	// Ran lists the versions that answered, as their recordings' ran lines
	// say, without the reference's name.
	Ran []string
	// Files and Traces count the step files and traces compared with the
	// reference.
	Files, Traces int
	// Handouts counts the takes that handed a resource out, Refusals the
	// takes refused at the ceiling, Steps every step compared.
	Handouts, Refusals, Steps int
	// Differ counts the traces whose recordings differ.
	Differ int
}

// Tally compares, in every step file of dir (*.steps), each trace with the
// references its compare line names: the reference's recording, read from
// NAME.REF.rec beside the step file, against wardpool's. wardpool's recording
// is Replay's when replay is true, and NAME.wardpool.rec's otherwise.
//
// It returns one row per reference and, for each trace that differs, the
// first difference. A trace that names a reference with no recording for it,
// or a recording with no trace, is an error: a comparison silently skipped is
// not a comparison.
func Tally(dir string, replay bool) ([]Row, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.steps"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no step files", dir)
	}
	rows := make([]Row, len(References))
	for i, ref := range References {
		rows[i].Reference = ref
	}
	var diffs []string
	for _, file := range files {
		traces, err := readSteps(file)
		if err != nil {
			return nil, nil, err
		}
		base := strings.TrimSuffix(file, ".steps")
		var ours map[string]Recording
		if !replay {
			if ours, err = readRecordings(base + "." + Wardpool + ".rec"); err != nil {
				return nil, nil, err
			}
		}
		for i, ref := range References {
			row := &rows[i]
			name := base + "." + ref + ".rec"
			theirs, err := readRecordings(name)
			if errors.Is(err, fs.ErrNotExist) && !slices.ContainsFunc(traces, func(t Trace) bool { return t.ComparedWith(ref) }) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			row.Files++
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
				if !slices.Contains(row.Ran, ran) {
					row.Ran = append(row.Ran, ran)
				}
				row.Traces++
				n, r := want.Handouts()
				row.Handouts += n
				row.Refusals += r
				row.Steps += len(want.Entries)
				if d := Diff(want, got); d != "" {
					row.Differ++
					diffs = append(diffs, fmt.Sprintf("%s against %s: %s", filepath.Base(file), ref, d))
				}
			}
			for name := range theirs {
				return nil, nil, fmt.Errorf("%s.%s.rec: trace %s is not in the step file or not compared with %s", base, ref, name, ref)
			}
		}
	}
	return rows, diffs, nil
}

// WriteTable writes rows as a Markdown table.
func WriteTable(w io.Writer, rows []Row) error {
	var b bytes.Buffer
	b.WriteString("| reference | version that ran | step files | traces | steps | hand-outs compared | refusals compared | result |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		result := "all identical"
		if r.Differ > 0 {
			result = fmt.Sprintf("%d of %d traces differ", r.Differ, r.Traces)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s |\n",
			r.Reference, strings.Join(r.Ran, "; "), r.Files, r.Traces, r.Steps, r.Handouts, r.Refusals, result)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func readSteps(name string) ([]Trace, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSteps(f, filepath.Base(name))
}

// readRecordings reads a recording file into a map by trace name.
func readRecordings(name string) (map[string]Recording, error) {
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
