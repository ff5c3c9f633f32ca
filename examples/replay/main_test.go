package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoRecordsAndReplays writes the demo recording and replays it: the
// exit status is 0 and the summary says so.
func TestDemoRecordsAndReplays(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pool.rec")
	var out, errs bytes.Buffer
	if code := run([]string{"-demo", file}, &out, &errs); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errs.String())
	}
	out.Reset()
	if code := run([]string{"-steps", file}, &out, &errs); code != 0 {
		t.Fatalf("replay: exit %d: %s%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "replayed: every answer the same") || !strings.Contains(out.String(), "#0 Take") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestBadFilesAreRefused: a truncated file and a file that is no recording
// exit 2 with the reader's error; a missing argument too.
func TestBadFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pool.rec")
	var out, errs bytes.Buffer
	if code := run([]string{"-demo", file}, &out, &errs); code != 0 {
		t.Fatal(errs.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.rec")
	if err := os.WriteFile(cut, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{cut}, {filepath.Join(dir, "missing.rec")}, {}} {
		errs.Reset()
		if code := run(args, &out, &errs); code != 2 || errs.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs.String())
		}
	}
	errs.Reset()
	run([]string{cut}, &out, &errs)
	if !strings.Contains(errs.String(), "wardpool: bad recording: checksum mismatch") {
		t.Errorf("truncated file: %q", errs.String())
	}
}

// TestAlteredRecordingDiffers changes the last figure of the books at the
// end (Busy, 0 after Close) and mends the checksum: the replay differs
// there, exit 1.
func TestAlteredRecordingDiffers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pool.rec")
	var out, errs bytes.Buffer
	if code := run([]string{"-demo", file}, &out, &errs); code != 0 {
		t.Fatal(errs.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	body := data[:len(data)-8]
	if body[len(body)-1] != 0 {
		t.Fatalf("the last byte before the checksum is %d, want Busy 0", body[len(body)-1])
	}
	body[len(body)-1] = 1
	sum := uint64(14695981039346656037) // FNV-1a 64, as the format says
	for _, c := range body {
		sum ^= uint64(c)
		sum *= 1099511628211
	}
	for i := range 8 {
		data[len(body)+i] = byte(sum >> (8 * (7 - i)))
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{file}, &out, &errs); code != 1 || !strings.Contains(out.String(), "(End)") || !strings.Contains(out.String(), "Busy=1") {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errs.String())
	}
	t.Log(out.String())
}

// TestReplayFromAService fetches a running Keeper's recording from its
// RecordingHandler and replays it: the ward it names is the one that ran.
func TestReplayFromAService(t *testing.T) {
	data, err := demoRun()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer srv.Close()
	var out, errs bytes.Buffer
	if code := run([]string{srv.URL + "/debug/pool.wprc"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "ward breaker {K:1.5") || !strings.Contains(out.String(), "every answer the same") {
		t.Fatalf("output:\n%s", out.String())
	}
}
