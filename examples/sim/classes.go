package main

import (
	"fmt"
	"strings"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// This file is the report's part of classes of callers (engine.ClassLoad):
// what each class's callers got, in the summary and in a comparison.

// classForm names a class as the pool was given it: its reserve, ceiling
// and lend, those that are set.
func classForm(c engine.ClassLoad) string {
	var out []string
	if c.Reserve > 0 {
		out = append(out, fmt.Sprintf("reserve %d", c.Reserve))
	}
	if c.Ceiling > 0 {
		out = append(out, fmt.Sprintf("ceiling %d", c.Ceiling))
	}
	switch {
	case c.Lend < 0:
		out = append(out, "lend never")
	case c.Lend > 0:
		out = append(out, fmt.Sprintf("lend %v", c.Lend))
	}
	if len(out) == 0 {
		return c.Name
	}
	return c.Name + " (" + strings.Join(out, ", ") + ")"
}

// classesForm names a run's classes as the pool was given them, or says
// it was given none.
func classesForm(s engine.Scenario) string {
	if len(s.Classes) == 0 {
		return "none"
	}
	if s.NoClasses {
		return "none given to the pool: one FIFO"
	}
	var out []string
	for _, c := range s.Classes {
		out = append(out, classForm(c))
	}
	return strings.Join(out, ", ")
}

// classLoad says a class's load in words.
func classLoad(c engine.ClassLoad) string {
	if c.Callers > 0 {
		return fmt.Sprintf("%d callers back to back, holding %v", c.Callers, c.Hold)
	}
	return fmt.Sprintf("%s a second (Poisson), holding %v on average", num(c.Rate), c.Hold)
}

// classFigures is what one class's callers got, in a line.
func classFigures(r *engine.Result, c engine.ClassSum) string {
	return fmt.Sprintf("wait p50 %v p99 %v max %v; %d served (%s a second) of %d, %d timed out, %d failed; %d held at most",
		round(c.P50), round(c.P99), round(c.Max), c.Served, num(c.PerSecond(r.Scenario.Seconds)), c.Arrived, c.TimedOut, c.Failed, c.Peak)
}

// classSummary is the summary's lines for a run's classes: none without.
func classSummary(r *engine.Result) []string {
	s := r.Scenario
	if len(s.Classes) == 0 {
		return nil
	}
	out := []string{"classes        " + classesForm(s)}
	for i, c := range r.Classes {
		out = append(out, fmt.Sprintf("  %-12s %s: %s", c.Name, classLoad(s.Classes[i]), classFigures(r, c)))
	}
	return out
}

// classOf returns run r's figures for the class called name.
func classOf(r *engine.Result, name string) (engine.ClassSum, bool) {
	for _, c := range r.Classes {
		if c.Name == name {
			return c, true
		}
	}
	return engine.ClassSum{}, false
}

// classNames are the names of the runs' classes, in the order they first
// come.
func classNames(runs []*engine.Result) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, c := range r.Classes {
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// classModel is loadModel for a scenario with classes: each class's load,
// and the mean busy of its rate by Little's law.
func classModel(s engine.Scenario) []string {
	lines := []string{fmt.Sprintf("load      synthetic, by class; dial %v; %d s", s.Dial, s.Seconds)}
	for _, c := range s.Classes {
		l := fmt.Sprintf("          %s: %s", c.Name, classLoad(c))
		if c.Callers == 0 {
			l += fmt.Sprintf(", %s busy on average (Little's law)", num(busy(c.Rate, c.Hold)))
		} else {
			l += fmt.Sprintf(", up to %d busy", c.Callers)
		}
		lines = append(lines, l)
	}
	for _, b := range s.Bursts {
		lines = append(lines, fmt.Sprintf("burst     x%g from %v to %v on the classes' rates", b.Factor, b.From, b.To))
	}
	if s.Timeout > 0 {
		lines = append(lines, fmt.Sprintf("timeout   callers give up after %v", s.Timeout))
	}
	return lines
}
