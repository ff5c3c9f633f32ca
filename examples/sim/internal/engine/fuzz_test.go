package engine

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any text gives a scenario that validates or an error wrapping
// ErrScenario, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"rate 100\nsize 4\n", "burst 1s 2s x3\n", "slow 1 2 dial x2 hold x3\n", "outage 0 1 0.5\nward on\n",
		"keep 1m30s # c\n", "size\n", "seconds 99999999999\n", "hold 1e308\n", "rate 1e7\nseconds 2592000\n",
		"seconds 3\nfailover 1s\noutage 1s 1.5s\nhold-for 1s\nhold-every 30ms\nrate 300\n",
		"seconds 3\nrate 300\nsize 8\nserver-max 2\nfull fail\n", "seconds 2\nserver-max 1\nfull wait\nkeep 100ms\n",
		"seconds 2\nsize 4\nclass a reserve 1 ceiling 3 lend 100ms\nclass-load a rate 50 hold 5ms\nclass b\nclass-load b callers 8 hold 50ms\n",
		"seconds 2\nclass a lend never\nclass-load a callers 3 hold 1s\nclasses none\nward all\n", "class a\nclass-load b rate 1 hold 1s\n",
	} {
		f.Add(s)
	}
	base, _ := Builtin("steady")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text), base)
		if err != nil {
			if !errors.Is(err, ErrScenario) {
				t.Fatalf("error not wrapping ErrScenario: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid scenario: %v", err)
		}
		if s.Seconds <= 3 && s.callers() < 1e4 {
			if _, err := Run(s, Options{}); err != nil {
				t.Fatalf("Run of a parsed scenario: %v", err)
			}
		}
	})
}

// FuzzReadCSV: any bytes give a recording or an error with its line
// wrapping ErrCSV, never a panic; a recording replays.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"asked,acquired,released,answers\n0.1,0.1,0.2,Ready\n0.15,,,queued\n",
		"2026-11-30T14:02:00Z,2026-11-30T14:02:00.5Z,\n",
		"1,2,3\n\"a\nb\",1,1\n", "0.000000001,0.1,0.2\n", "9.,.5,\n",
	} {
		f.Add(s)
	}
	base, _ := Builtin("steady")
	f.Fuzz(func(t *testing.T, text string) {
		rec, err := ReadCSV(strings.NewReader(text))
		if err != nil {
			var le *LineError
			if !errors.Is(err, ErrCSV) || !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without its line or ErrCSV: %v", err)
			}
			return
		}
		if len(rec.Rows) > 50 {
			return
		}
		s := base
		s.Seconds = 2
		if _, err := Run(s, Options{Load: rec.Load(s.Hold)}); err != nil {
			t.Fatalf("replay: %v", err)
		}
	})
}
