package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// This file reads scenario files: Parse, Override and the settings they
// take. The Scenario itself, its built-ins and what it answers during a
// run are in scenario.go.

// ErrScenario is wrapped by every error Parse returns.
var ErrScenario = errors.New("sim: bad scenario")

// LineError is a scenario or load error at a line of its file.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// maxLine is the longest line Parse and ReadCSV accept, in bytes.
const maxLine = 4096

// Parse reads a scenario file, starting from base (a built-in, or the zero
// Scenario), and returns the scenario it describes. The format is one
// setting a line, "key value…"; blank lines and text after # are ignored;
// later lines override earlier ones, except burst, slow, outage and break,
// which add a span each:
//
//	name     outage-16                 # a label
//	note     dials fail for 8 s        # one line written on the chart
//	seconds  60                        # virtual seconds to run
//	seed     7
//	rate     200                       # callers a second (Poisson)
//	hold     40ms                      # mean hold (exponential)
//	dial     20ms
//	size     16                        # pool.Limits
//	idle     16
//	keep     2s
//	life     0                         # 0: no limit
//	timeout  1s                        # callers give up after; 0: never
//	burst    8s 16s x2                 # rate times 2 within [8 s, 16 s)
//	slow     8s 16s dial x10 hold x3   # growing to 10x and 3x by 16 s
//	outage   8s 16s                    # every dial fails; "0.5" after: half
//	break    8s 16s 0.1                # a tenth of loans come home broken
//	ward     breaker backoff           # "none", "on" (these two), "all", or any of
//	                                   # breaker, backoff, bucket, shedder, limiter
//	                                   # (also joined: breaker+shedder)
//	bucket-rate   50                   # the bucket's makes a second
//	bucket-burst  10                   # and how many at once
//	shed-cpu      900                  # the shedder's threshold, thousandths
//	shed-floor    0.1                  # the least share of capacity it admits
//	cpu-idle      200                  # CPU model: thousandths with nothing busy
//	cpu-per-loan  50                   # and more for each busy resource
//	limit-initial 10                   # the limiter's AIMD policy
//	limit-min     1
//	limit-max     100
//	limit-slow    1s                   # a hold over it shrinks the limit
//	limit-backoff 0.9                  # by this factor
//	failover 8s                        # the backend moves; the old one answers read-only
//	classify reset                     # what callers make of that: reset, destroy or none
//	hold-for 2s                        # the reset holds callers up to 2 s (pool.Hold; 0: no hold)
//	hold-every 100ms                   # one dial at a time, at most one every 100 ms meanwhile
//	rotate-at 10s                      # every resource is replaced (Pool.Reset) at that instant
//	rotate-over 5s                     # at a bounded pace over that window (0: at once)
//	server-max 4                       # the backend takes 4 connections from the pool (0: no limit)
//	full wait                          # a dial it refuses for want of room: the caller waits, or fail
//	class interactive reserve 2        # a class of callers (pool.Class); also ceiling N,
//	                                   # lend D (1s unless set; never: kept for ever)
//	class-load interactive rate 100 hold 2ms  # its load: Poisson, holds exponential around 2 ms
//	class batch                        # no reserve, no ceiling of its own
//	class-load batch callers 64 hold 200ms    # 64 callers back to back, each holding 200 ms
//	classes none                       # the pool gets no classes: one FIFO (on: it does)
//
// A class line names a class of callers and sets its reserve, ceiling
// and lend afresh (those not given are zero), keeping its load; a
// class-load line sets the load of a class named on an earlier line. With
// classes, the load is theirs alone: rate and hold are not used. Every
// class needs a load, and the reserves add up to size at most
// (pool.ValidateClasses); there are 64 classes at most. A caller of a
// population asks again as its call ends, or after its hold when the call
// failed (timed out, shed, a dial error). "classes none" keeps the callers and their
// classes' loads but gives the pool no classes, as a Keeper without
// Config.Classes (the comparison "classes=none").
//
// Idle follows size (a size line sets idle too) while the two are equal;
// an idle line sets it apart. Durations are Go durations ("250ms", "1m30s"); a bare number is seconds.
// An error names the line (a *LineError wrapping ErrScenario); Parse never
// panics.
func Parse(r io.Reader, base Scenario) (Scenario, error) {
	s := base
	s.Bursts = append([]Burst(nil), base.Bursts...)
	s.Slows = append([]Slow(nil), base.Slows...)
	s.Outages = append([]Outage(nil), base.Outages...)
	s.Breaks = append([]Outage(nil), base.Breaks...)
	s.Classes = append([]ClassLoad(nil), base.Classes...)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	n := 0
	classLine := make([]int, len(s.Classes)) // by class: the line that named it (0: base)
	for sc.Scan() {
		n++
		if err := s.set(sc.Text()); err != nil {
			return Scenario{}, &LineError{n, fmt.Errorf("%w: %v", ErrScenario, err)}
		}
		for len(classLine) < len(s.Classes) {
			classLine = append(classLine, n)
		}
	}
	if err := sc.Err(); err != nil {
		return Scenario{}, &LineError{n + 1, fmt.Errorf("%w: %v", ErrScenario, err)}
	}
	// A class's own errors (no load, a reserve past size) name the line
	// that named it, when one of these did.
	for i := range s.Classes {
		if err := s.validateClass(i); err != nil {
			err = fmt.Errorf("%w: %v", ErrScenario, err)
			if classLine[i] == 0 {
				return Scenario{}, err // a class of base's
			}
			return Scenario{}, &LineError{classLine[i], err}
		}
	}
	if err := s.Validate(); err != nil {
		return Scenario{}, fmt.Errorf("%w: %v", ErrScenario, err)
	}
	return s, nil
}

// Override applies settings written as "key=value" or "key value",
// separated by commas or semicolons ("size=16, ward=none"), to a copy of s:
// the way a comparison names its second configuration. Errors name the
// setting's position.
func Override(s Scenario, settings string) (Scenario, error) {
	var b strings.Builder
	for part := range strings.FieldsFuncSeq(settings, func(r rune) bool { return r == ',' || r == ';' }) {
		b.WriteString(strings.Replace(strings.TrimSpace(part), "=", " ", 1))
		b.WriteByte('\n')
	}
	return Parse(strings.NewReader(b.String()), s)
}

// set applies one line of a scenario file.
func (s *Scenario) set(line string) error {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	key, args := strings.ToLower(f[0]), f[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s takes one value, got %d", key, len(args))
		}
		return args[0], nil
	}
	var err error
	switch key {
	case "name", "note":
		if len(args) == 0 {
			return fmt.Errorf("%s needs text", key)
		}
		text := strings.Join(args, " ")
		if key == "name" {
			s.Name = text
		} else {
			s.Note = text
		}
	case "seconds":
		var v string
		if v, err = one(); err == nil {
			s.Seconds, err = count(v, 1, 30*24*3600)
		}
	case "seed":
		var v string
		if v, err = one(); err == nil {
			s.Seed, err = strconv.ParseUint(v, 10, 64)
		}
	case "rate":
		var v string
		if v, err = one(); err == nil {
			s.Rate, err = number(v, 1e7)
		}
	case "classify":
		var v string
		if v, err = one(); err == nil {
			switch v = strings.ToLower(v); v {
			case ClassifyReset, ClassifyDestroy, ClassifyNone:
				s.Classify = v
			default:
				err = fmt.Errorf("%q is not reset, destroy or none", v)
			}
		}
	case "full":
		var v string
		if v, err = one(); err == nil {
			switch v = strings.ToLower(v); v {
			case FullWait, FullFail:
				s.Full = v
			default:
				err = fmt.Errorf("%q is not wait or fail", v)
			}
		}
	case "server-max":
		var v string
		if v, err = one(); err == nil {
			s.ServerMax, err = count(v, 0, 1<<20)
		}
	case "hold", "dial", "keep", "life", "timeout", "failover", "rotate-at", "rotate-over", "hold-for", "hold-every":
		var v string
		var d time.Duration
		if v, err = one(); err == nil {
			d, err = duration(v)
		}
		switch key {
		case "hold":
			s.Hold = d
		case "dial":
			s.Dial = d
		case "keep":
			s.Limits.Keep = d
		case "life":
			s.Limits.Life = d
		case "timeout":
			s.Timeout = d
		case "failover":
			s.Failover = d
		case "rotate-at":
			s.RotateAt = d
		case "rotate-over":
			s.RotateOver = d
		case "hold-for":
			s.HoldFor = d
		case "hold-every":
			s.HoldEvery = d
		}
	case "size", "idle":
		var v string
		var n int
		if v, err = one(); err == nil {
			n, err = count(v, 0, 1<<20)
		}
		if key == "size" {
			if s.Limits.Idle == s.Limits.Size {
				s.Limits.Idle = n // idle follows size unless set apart
			}
			s.Limits.Size = n
		} else {
			s.Limits.Idle = n
		}
	case "burst":
		if len(args) != 3 {
			return fmt.Errorf("burst takes FROM TO xFACTOR, got %d values", len(args))
		}
		var b Burst
		if b.Span, err = span(args[0], args[1]); err == nil {
			b.Factor, err = factor(args[2])
		}
		s.Bursts = append(s.Bursts, b)
	case "slow":
		if len(args) < 4 || len(args)%2 != 0 {
			return errors.New("slow takes FROM TO and then dial xF, hold xF or both")
		}
		sl := Slow{Dial: 1, Hold: 1}
		sl.Span, err = span(args[0], args[1])
		for i := 2; err == nil && i < len(args); i += 2 {
			var v float64
			v, err = factor(args[i+1])
			switch strings.ToLower(args[i]) {
			case "dial":
				sl.Dial = v
			case "hold":
				sl.Hold = v
			default:
				err = fmt.Errorf("slow: %q is neither dial nor hold", args[i])
			}
		}
		if err == nil && (sl.Dial < 1 || sl.Hold < 1) {
			err = errors.New("slow factors are 1 or more (a slowdown)")
		}
		s.Slows = append(s.Slows, sl)
	case "outage", "break":
		if len(args) != 2 && len(args) != 3 {
			return fmt.Errorf("%s takes FROM TO [FRACTION], got %d values", key, len(args))
		}
		o := Outage{Fraction: 1}
		o.Span, err = span(args[0], args[1])
		if err == nil && len(args) == 3 {
			o.Fraction, err = number(args[2], 1)
		}
		if key == "outage" {
			s.Outages = append(s.Outages, o)
		} else {
			s.Breaks = append(s.Breaks, o)
		}
	case "ward":
		if len(args) == 0 {
			return errors.New("ward takes none, on, all, or guards among breaker, backoff, bucket, shedder, limiter")
		}
		s.Breaker, s.Backoff, s.Bucket, s.Shedder, s.Limiter = false, false, false, false, false
		for _, a := range args {
			for g := range strings.SplitSeq(a, "+") {
				switch strings.ToLower(g) {
				case "none", "off":
				case "on":
					s.Breaker, s.Backoff = true, true
				case "all":
					s.Breaker, s.Backoff, s.Bucket, s.Shedder, s.Limiter = true, true, true, true, true
				case "breaker":
					s.Breaker = true
				case "backoff":
					s.Backoff = true
				case "bucket":
					s.Bucket = true
				case "shedder":
					s.Shedder = true
				case "limiter":
					s.Limiter = true
				default:
					return fmt.Errorf("ward: unknown guard %q (none, on, all, breaker, backoff, bucket, shedder, limiter)", g)
				}
			}
		}
	case "bucket-rate", "bucket-burst", "shed-floor", "limit-backoff":
		var v string
		var x float64
		if v, err = one(); err == nil {
			x, err = number(v, 1e7)
		}
		switch key {
		case "bucket-rate":
			s.BucketRate = x
		case "bucket-burst":
			s.BucketBurst = x
		case "shed-floor":
			s.ShedFloor = x
		case "limit-backoff":
			s.Limit.Backoff = x
		}
	case "shed-cpu", "cpu-idle", "cpu-per-loan", "limit-initial", "limit-min", "limit-max":
		var v string
		var n int
		if v, err = one(); err == nil {
			hi := 1000
			if strings.HasPrefix(key, "limit-") {
				hi = 1 << 20
			}
			n, err = count(v, 0, hi)
		}
		switch key {
		case "shed-cpu":
			s.ShedCPU = n
		case "cpu-idle":
			s.CPUIdle = n
		case "cpu-per-loan":
			s.CPUPerLoan = n
		case "limit-initial":
			s.Limit.Initial = n
		case "limit-min":
			s.Limit.Min = n
		case "limit-max":
			s.Limit.Max = n
		}
	case "class":
		err = s.setClass(args)
	case "class-load":
		err = s.setClassLoad(args)
	case "classes":
		var v string
		if v, err = one(); err == nil {
			switch strings.ToLower(v) {
			case "none", "off":
				s.NoClasses = true
			case "on":
				s.NoClasses = false
			default:
				err = fmt.Errorf("%q is not none or on", v)
			}
		}
	case "limit-slow":
		var v string
		if v, err = one(); err == nil {
			s.Limit.Slow, err = duration(v)
		}
	default:
		return fmt.Errorf("unknown setting %q (want one of %s)", f[0], strings.Join(keys, ", "))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

var keys = func() []string {
	k := []string{"name", "note", "seconds", "seed", "rate", "hold", "dial", "size", "idle",
		"keep", "life", "timeout", "burst", "slow", "outage", "break", "ward", "failover", "classify", "hold-for", "hold-every", "rotate-at", "rotate-over",
		"server-max", "full", "bucket-rate", "bucket-burst", "shed-cpu", "shed-floor", "cpu-idle", "cpu-per-loan",
		"limit-initial", "limit-min", "limit-max", "limit-slow", "limit-backoff", "class", "class-load", "classes"}
	sort.Strings(k)
	return k
}()

// setClass applies a class line: NAME, then reserve R, ceiling C, lend D
// in any order.
func (s *Scenario) setClass(args []string) error {
	if len(args) == 0 || len(args)%2 != 1 {
		return errors.New("class takes NAME, then any of reserve R, ceiling C, lend D")
	}
	c := pool.Class{Name: args[0]}
	for i := 1; i < len(args); i += 2 {
		var err error
		switch v := args[i+1]; strings.ToLower(args[i]) {
		case "reserve":
			c.Reserve, err = count(v, 0, 1<<20)
		case "ceiling":
			c.Ceiling, err = count(v, 0, 1<<20)
		case "lend":
			if strings.EqualFold(v, "never") {
				c.Lend = -1
			} else {
				c.Lend, err = duration(v)
			}
		default:
			return fmt.Errorf("%q is none of reserve, ceiling, lend", args[i])
		}
		if err != nil {
			return fmt.Errorf("%s: %w", strings.ToLower(args[i]), err)
		}
	}
	for i := range s.Classes {
		if s.Classes[i].Name == c.Name {
			s.Classes[i].Class = c
			return nil
		}
	}
	if len(s.Classes) >= MaxClasses {
		return fmt.Errorf("%d classes at most", MaxClasses)
	}
	s.Classes = append(s.Classes, ClassLoad{Class: c})
	return nil
}

// setClassLoad applies a class-load line: NAME, then rate R or callers N,
// and hold D.
func (s *Scenario) setClassLoad(args []string) error {
	if len(args) != 5 {
		return errors.New("class-load takes NAME rate R hold D, or NAME callers N hold D")
	}
	i := slices.IndexFunc(s.Classes, func(c ClassLoad) bool { return c.Name == args[0] })
	if i < 0 {
		names := make([]string, len(s.Classes))
		for j, c := range s.Classes {
			names[j] = c.Name
		}
		return fmt.Errorf("no class %q (the classes are %q): name it on a class line first", args[0], names)
	}
	var rate float64
	var callers int
	var hold time.Duration
	seen := map[string]bool{}
	for j := 1; j < len(args); j += 2 {
		var err error
		k, v := strings.ToLower(args[j]), args[j+1]
		if seen[k] {
			return fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		switch k {
		case "rate":
			if rate, err = number(v, 1e7); err == nil && rate == 0 {
				err = errors.New("0: want more than 0")
			}
		case "callers":
			callers, err = count(v, 1, 1<<20)
		case "hold":
			if hold, err = duration(v); err == nil && hold == 0 {
				err = errors.New("0: want more than 0")
			}
		default:
			return fmt.Errorf("%q is none of rate, callers, hold", args[j])
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	if seen["rate"] == seen["callers"] || !seen["hold"] {
		return errors.New("class-load takes NAME rate R hold D, or NAME callers N hold D")
	}
	c := &s.Classes[i]
	c.Rate, c.Callers, c.Hold = rate, callers, hold
	return nil
}

func count(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
	}
	return n, nil
}

func number(v string, hi float64) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > hi {
		return 0, fmt.Errorf("%q is not a number from 0 to %g", v, hi)
	}
	return x, nil
}

func factor(v string) (float64, error) {
	if !strings.HasPrefix(v, "x") {
		return 0, fmt.Errorf("factor %q must be written x2, x0.5, …", v)
	}
	return number(v[1:], 1e4)
}

// maxSpan bounds durations in scenario files (a year) so that no sum of
// them can overflow.
const maxSpan = 365 * 24 * time.Hour

func duration(v string) (time.Duration, error) {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if !(x >= 0) || x > maxSpan.Seconds() {
			return 0, fmt.Errorf("%q is not a duration from 0 to a year", v)
		}
		return time.Duration(x * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxSpan {
		return 0, fmt.Errorf("%q is not a duration from 0 to a year (250ms, 2s, 1m30s)", v)
	}
	return d, nil
}

func span(from, to string) (Span, error) {
	a, err := duration(from)
	if err != nil {
		return Span{}, err
	}
	b, err := duration(to)
	if err != nil {
		return Span{}, err
	}
	if b <= a {
		return Span{}, fmt.Errorf("span %v to %v ends before it starts", a, b)
	}
	return Span{a, b}, nil
}
