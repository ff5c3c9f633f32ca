package main

import (
	"strconv"
	"strings"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// settingsOf is s written as the values of its setting flags (settingFlags),
// as the page fills its controls with a scenario's own settings.
func settingsOf(s engine.Scenario) map[string]any {
	w := "none"
	if on := s.GuardsOn(); len(on) > 0 {
		w = strings.Join(on, "+")
	}
	full := s.Full
	if full == "" {
		full = engine.FullWait
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return map[string]any{
		"bucket-rate":   f(s.BucketRate),
		"bucket-burst":  f(s.BucketBurst),
		"shed-cpu":      strconv.Itoa(s.ShedCPU),
		"shed-floor":    f(s.ShedFloor),
		"cpu-idle":      strconv.Itoa(s.CPUIdle),
		"cpu-per-loan":  strconv.Itoa(s.CPUPerLoan),
		"limit-initial": strconv.Itoa(s.Limit.Initial),
		"limit-min":     strconv.Itoa(s.Limit.Min),
		"limit-max":     strconv.Itoa(s.Limit.Max),
		"limit-slow":    s.Limit.Slow.String(),
		"limit-backoff": f(s.Limit.Backoff),
		"seed":          strconv.FormatUint(s.Seed, 10),
		"seconds":       strconv.Itoa(s.Seconds),
		"rate":          strconv.FormatFloat(s.Rate, 'g', -1, 64),
		"hold":          s.Hold.String(),
		"dial":          s.Dial.String(),
		"size":          strconv.Itoa(s.Limits.Size),
		"idle":          strconv.Itoa(s.Limits.Idle),
		"keep":          s.Limits.Keep.String(),
		"life":          s.Limits.Life.String(),
		"timeout":       s.Timeout.String(),
		"ward":          w,
		"hold-for":      s.HoldFor.String(),
		"hold-every":    s.HoldEvery.String(),
		"server-max":    strconv.Itoa(s.ServerMax),
		"full":          full,
	}
}
