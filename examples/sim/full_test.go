package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool/record"
)

// The full scenario against the same run failing its refused callers: a
// backend that takes 4 connections from a pool of 8 fails no call when the
// pool is told the refusal is for want of room, and refuses the first
// burst of dials and then about one a second; told it is a failed dial,
// it fails a caller for most of the dials it refuses, tens a second. A
// full setting that was ignored would give two equal columns; a
// server-max that was, no refusal at all.
func TestFullCompare(t *testing.T) {
	out := sim(t, "-scenario", "scenarios/full.txt", "-compare", "full=fail", "-table=false")
	failed := failoverRow(t, out, "calls failed")
	refused := failoverRow(t, out, "  refused dials / peak a second")
	conns := failoverRow(t, out, "  most connections at once")
	if len(failed) != 2 || len(refused) != 2 || len(conns) != 2 {
		t.Fatalf("want two columns:\n%s", out)
	}
	if a, b := failed[0][0], failed[1][0]; a != 0 || b < 100 {
		t.Errorf("calls failed: waiting %d, failing %d; want none and 100 or more", a, b)
	}
	// 20 seconds: the first burst (at most Size-4) and one a second.
	if w, f := refused[0], refused[1]; w[0] == 0 || w[0] > 4+20 || w[1] > 4 || f[0] < 10*w[0] {
		t.Errorf("refused dials / peak a second: waiting %v, failing %v", w, f)
	}
	if conns[0][0] != 4 || conns[1][0] != 4 {
		t.Errorf("most connections at once: %v, %v; want the backend's 4", conns[0], conns[1])
	}
	if !strings.Contains(out, "takes 4, refused: the caller waits") || !strings.Contains(out, "takes 4, refused: the caller fails") {
		t.Errorf("the forms are not named:\n%s", out)
	}
	// The summary says it too, and a run without a limit says nothing.
	out = sim(t, "-scenario", "scenarios/full.txt", "-table=false")
	if !strings.Contains(out, "full backend   takes 4, refused: the caller waits: 21 dials refused (peak 3 a second)") {
		t.Errorf("summary:\n%s", out)
	}
	if out := sim(t, "-scenario", "scenarios/full.txt", "-server-max", "0", "-table=false"); strings.Contains(out, "full backend") || strings.Contains(out, "refused dials") {
		t.Errorf("a run without a limit reports one:\n%s", out)
	}
}

// A Keeper's recording of a full backend (the full scenario's run,
// recorded) replays with the refusals for want of room as the Keeper told
// the pool: no caller fails. With -server-max at the backend's limit, the
// sim gives back every recorded Take answer.
func TestReplayOfAFullBackend(t *testing.T) {
	base, _ := engine.Builtin("steady")
	text, err := os.ReadFile("scenarios/full.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Parse(bytes.NewReader(text), base)
	if err != nil {
		t.Fatal(err)
	}
	s.Seconds = 8
	r, err := engine.Run(s, engine.Options{Recorder: record.New(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sum.Full.PutBack == 0 {
		t.Fatalf("nobody put back: %+v", r.Sum.Full)
	}
	file := filepath.Join(t.TempDir(), "pool.rec")
	if err := os.WriteFile(file, r.Recording, 0o644); err != nil {
		t.Fatal(err)
	}
	out := sim(t, "-replay", file, "-table=false", "-resamples", "0")
	for _, want := range []string{
		"full           and is refused for want of room when that one was",
		"full backend   no limit; refused as recorded: the caller waits: ",
		" 0 timed out, 0 shed, 0 dial errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	out = sim(t, "-replay", file, "-server-max", "4", "-table=false", "-resamples", "0")
	for _, want := range []string{
		"recorded Take answers given back, in order, at their instants",
		"full backend   takes 4, refused: the caller waits: ",
		" 0 timed out, 0 shed, 0 dial errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-server-max 4: no %q in:\n%s", want, out)
		}
	}
}
