package main

import (
	"strconv"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// settingsOf is s written as the values of its setting flags (settingFlags),
// as the page fills its controls with a scenario's own settings.
func settingsOf(s engine.Scenario) map[string]any {
	w := "none"
	switch {
	case s.Breaker && s.Backoff:
		w = "on"
	case s.Breaker:
		w = "breaker"
	case s.Backoff:
		w = "backoff"
	}
	return map[string]any{
		"seed":    strconv.FormatUint(s.Seed, 10),
		"seconds": strconv.Itoa(s.Seconds),
		"rate":    strconv.FormatFloat(s.Rate, 'g', -1, 64),
		"hold":    s.Hold.String(),
		"dial":    s.Dial.String(),
		"size":    strconv.Itoa(s.Limits.Size),
		"idle":    strconv.Itoa(s.Limits.Idle),
		"keep":    s.Limits.Keep.String(),
		"life":    s.Limits.Life.String(),
		"timeout": s.Timeout.String(),
		"ward":    w,
	}
}
