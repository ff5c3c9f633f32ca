package main

// This file turns a Keeper's recording into what a run needs: the notes
// on how its callers were rebuilt, its label, and the backend's answers
// (CPU, failed dials, a full backend) as the recording saw them.

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// keeperNotes says how the callers of a Keeper's recording were rebuilt:
// what is exact and what is an estimate (see engine/keeper.go).
func keeperNotes(w io.Writer, kl *engine.KeeperLoad, s engine.Scenario) {
	c := kl.Counts
	fmt.Fprintf(w, "recording      %d steps (%d dropped by the recorder's ring before them), limits %+v\n", kl.Steps, kl.Dropped, kl.Limits)
	fmt.Fprintf(w, "exact          %d callers lent at once, %d after a recorded Wait, %d by their own dial, %d by a return while dialing: asked, lent and returned as recorded\n", c.Lock, c.Queued, c.Dialed, c.Returned)
	fmt.Fprintf(w, "estimated      %d lane loans (count exact, instants spread evenly between recorded ones); %d first seen when the Keeper served its queue (queued behind others: arrival late)\n", c.Lane, c.AtReturn)
	fmt.Fprintf(w, "not served     %d refused or failed dials, %d gave up (what is left of them: a waiter never served, a dial handed on), %d waiting at the end: each holds for -hold (%v) if served now\n", c.Failed, c.GaveUp, c.Waiting, s.Hold)
	if c.Before+c.Open+c.Guessed > 0 {
		fmt.Fprintf(w, "partial        %d loans begun before the recording left out, %d still out at its end, %d returns paired by guess\n", c.Before, c.Open, c.Guessed)
	}
	if kl.Dials > 0 {
		fmt.Fprintf(w, "dial           %v measured (median of %d, Make to Made); the replay dials in %v\n", kl.Dial, kl.Dials, s.Dial)
	}
	fmt.Fprintln(w)
}

// recordedLabel is label for a run on the recording's own ward.
func recordedLabel(s engine.Scenario, settings string, kl *engine.KeeperLoad) string {
	l := label(s, "")
	l = l[:strings.LastIndex(l, ", ")] + ", recorded ward (" + wardNames(kl.Source.Ward()) + ")"
	if settings != "" {
		l += " (" + settings + ")"
	}
	return l
}

// wardNames lists w's guards, as "breaker+limiter", or "none".
func wardNames(w ward.Ward) string {
	var n []string
	for _, g := range []struct {
		on   bool
		name string
	}{{w.Breaker != nil, "breaker"}, {w.Shedder != nil, "shedder"}, {w.Bucket != nil, "bucket"},
		{w.Limiter != nil, "limiter"}, {w.Backoff != nil, "backoff"}} {
		if g.on {
			n = append(n, g.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, "+")
}

// exactReplay replays the recording itself (pool.Recording.Replay: the
// recorded ward rebuilt, every recorded call with its recorded instant,
// draw and CPU reading) and says whether every decision came out the same,
// before the simulation re-runs the callers.
func exactReplay(w io.Writer, kl *engine.KeeperLoad, used bool) {
	names := wardNames(kl.Source.Ward())
	switch err := kl.Source.Replay(); {
	case err == nil:
		fmt.Fprintf(w, "replayed       the recorded ward rebuilt (%s); all %d recorded steps replayed with no difference (pool.Replay)\n", names, len(kl.Source.Steps))
	default:
		fmt.Fprintf(w, "replayed       the recorded ward rebuilt (%s); the replay differs: %v\n", names, err)
	}
	if !used {
		fmt.Fprintf(w, "ward           -ward replaces the recorded ward in the simulation below\n")
	}
	if kl.Source.Ward().Shedder != nil {
		fmt.Fprintf(w, "cpu            the simulation reads the CPU as recorded: each Take's reading holds until the next\n")
	}
	fmt.Fprintf(w, "backend        a simulated dial fails when the last recorded dial before it failed (Unmade), as the recorded ward saw\n")
	if slices.ContainsFunc(kl.Source.Steps, func(s record.Step) bool { return s.Op == "Unmade" && s.Guard == ward.GuardFull }) {
		fmt.Fprintf(w, "full           and is refused for want of room when that one was (Unmade with ward.GuardFull), as the Keeper told the pool; -server-max models the backend's limit instead of its timing\n")
	}
	fmt.Fprintln(w)
}

// recordedCPU returns the CPU readings of a recording's Take and Reserve
// steps as a function of the instant: the latest reading at or before it
// (the first one before any), 0 for a recording with none.
func recordedCPU(rc *record.Recording) func(time.Duration) int {
	var at []time.Duration
	var cpu []int
	for _, s := range rc.Steps {
		if s.Op == "Take" || s.Op == "Reserve" {
			at, cpu = append(at, s.At), append(cpu, s.CPU)
		}
	}
	return func(t time.Duration) int {
		if len(at) == 0 {
			return 0
		}
		i := sort.Search(len(at), func(i int) bool { return at[i] > t })
		return cpu[max(i-1, 0)]
	}
}

// recordedDials returns, as a function of the instant, whether the last
// dial outcome the recording holds at or before it was a failure (Unmade
// rather than Made): the backend as the recorded pool saw it. False before
// any outcome.
func recordedDials(rc *record.Recording) func(time.Duration) bool {
	return lastDial(rc, func(s record.Step) bool { return s.Op == "Unmade" })
}

// recordedFull is recordedDials for the failures the Keeper told the pool
// were for want of room (Unmade with ward.GuardFull): the backend full, as
// the recorded pool saw it.
func recordedFull(rc *record.Recording) func(time.Duration) bool {
	return lastDial(rc, func(s record.Step) bool { return s.Op == "Unmade" && s.Guard == ward.GuardFull })
}

// lastDial returns, as a function of the instant, whether is says yes of
// the last dial outcome (Made or Unmade) the recording holds at or before
// it; false before any.
func lastDial(rc *record.Recording, is func(record.Step) bool) func(time.Duration) bool {
	var at []time.Duration
	var yes []bool
	for _, s := range rc.Steps {
		if s.Op == "Made" || s.Op == "Unmade" {
			at, yes = append(at, s.At), append(yes, is(s))
		}
	}
	return func(t time.Duration) bool {
		i := sort.Search(len(at), func(i int) bool { return at[i] > t })
		return i > 0 && yes[i-1]
	}
}
