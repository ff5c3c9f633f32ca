// Package trace is the Go side of wardpool's conformance suite (the
// conformance directory): the step and recording formats, Replay, which runs
// a trace against [pool.Pool], the generator of traces, the model of
// SQLAlchemy's QueuePool rule and the tally that compares recordings.
//
// A trace is a policy and a list of steps (take, give, drop, evict) on a
// virtual clock counted in milliseconds. Each pool runs the trace and writes a
// recording: after every step, which resource was handed out (by creation
// index), whether the take was refused, what was closed, and how many are idle
// and live. Replay runs a trace against [pool.Pool]; the reference runners in
// scripts/reference run the same trace against the references. The formats
// are described in conformance/README.md.
//
// The package is internal: its users are the conformance tests and the
// commands under conformance/internal/cmd, not wardpool's users.
//
// Nothing in this package is safe for concurrent use unless stated; the
// values it returns are owned by the caller.
package trace

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The names of the references, as written on compare and ran lines.
const (
	SQLAlchemy  = "sqlalchemy"
	GenericPool = "generic-pool"
	CommonsPool = "commons-pool"
	// Wardpool is the name this package writes on its own ran lines.
	Wardpool = "wardpool"
)

// References lists the reference names in the order reports use.
var References = []string{SQLAlchemy, GenericPool, CommonsPool}

// Age says which age limit a trace's policy holds.
type Age uint8

// The ages a policy can hold: none, lifetime (since birth) or idle time
// (since the last give).
const (
	NoAge Age = iota
	LifeAge
	IdleAge
)

// String returns the word the formats use for a.
func (a Age) String() string {
	switch a {
	case LifeAge:
		return "life"
	case IdleAge:
		return "idle"
	}
	return "none"
}

// Policy is what a trace's pool holds itself to.
type Policy struct {
	// Size is the ceiling on live resources; at least 1.
	Size int
	// Idle is the ceiling on idle resources: a give that finds that many
	// idle already closes the resource given back. Zero means no ceiling.
	Idle int
	// Age is the kind of age limit, and AgeMS its length in milliseconds
	// (zero when Age is NoAge). A resource is past its age when its age is
	// greater than AgeMS; equal is not past.
	Age   Age
	AgeMS int64
}

func (p Policy) lines() []string {
	age := "age none"
	if p.Age != NoAge {
		age = fmt.Sprintf("age %s %d", p.Age, p.AgeMS)
	}
	if p.Idle > 0 {
		return []string{fmt.Sprintf("size %d", p.Size), fmt.Sprintf("idle %d", p.Idle), age}
	}
	return []string{fmt.Sprintf("size %d", p.Size), age}
}

// Verb is what a step does.
type Verb uint8

// The four steps.
const (
	Take  Verb = iota + 1 // the caller in a seat asks for a resource
	Give                  // the caller in a seat hands its resource back
	Drop                  // the caller in a seat reports its resource broken
	Evict                 // the owner retires idle resources past their age
)

var verbs = map[string]Verb{"take": Take, "give": Give, "drop": Drop, "evict": Evict}

var verbWords = [...]string{Take: "take", Give: "give", Drop: "drop", Evict: "evict"}

// String returns the word the formats use for v.
func (v Verb) String() string {
	if v >= Take && v <= Evict {
		return verbWords[v]
	}
	return "verb(" + strconv.Itoa(int(v)) + ")"
}

// Step is one move of a trace.
type Step struct {
	Verb Verb
	// Seat names the caller (1 and up); zero for Evict.
	Seat int
	// At is the virtual clock in milliseconds since the trace began.
	At int64
}

// String returns the step as a recording line starts it: the verb, the seat
// and the time, always written out.
func (s Step) String() string {
	if s.Verb == Evict {
		return fmt.Sprintf("evict at %d", s.At)
	}
	return fmt.Sprintf("%s %d at %d", s.Verb, s.Seat, s.At)
}

// Trace is a named policy, the references it is compared with, and its
// steps.
type Trace struct {
	Name    string
	Policy  Policy
	Compare []string
	Steps   []Step
}

// ComparedWith reports whether t's compare line names ref.
func (t Trace) ComparedWith(ref string) bool { return slices.Contains(t.Compare, ref) }

// Outcome is what a pool answered to one step.
type Outcome struct {
	// Closed lists the creation indices of the resources closed during the
	// step, ascending: a stale or recycled one at a take, the broken one at
	// a drop, the retired ones at an evict, one not kept at a give.
	Closed []int
	// Got is the creation index handed out by a take; zero when none was.
	Got int
	// Refused reports whether a take was refused at the ceiling.
	Refused bool
	// Idle and Live are the pool's counts after the step.
	Idle, Live int
}

// Entry is one step and what the pool answered.
type Entry struct {
	Step Step
	Outcome
}

// String returns the entry as a recording line.
func (e Entry) String() string {
	var b strings.Builder
	b.WriteString(e.Step.String())
	b.WriteString(" =>")
	if len(e.Closed) > 0 {
		b.WriteString(" closed ")
		for i, c := range e.Closed {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(c))
		}
	}
	if e.Got > 0 {
		fmt.Fprintf(&b, " got %d", e.Got)
	}
	if e.Refused {
		b.WriteString(" refused")
	}
	fmt.Fprintf(&b, " idle %d live %d", e.Idle, e.Live)
	return b.String()
}

// Recording is what one pool answered to one trace.
type Recording struct {
	Name string
	// Ran names the pool and version that answered, e.g.
	// "sqlalchemy 1.4.46 on python 3.11.2". It is not compared.
	Ran     string
	Policy  Policy
	Entries []Entry
}

// Handouts returns how many takes in r handed out a resource and how many
// were refused.
func (r Recording) Handouts() (got, refused int) {
	for _, e := range r.Entries {
		if e.Got > 0 {
			got++
		}
		if e.Refused {
			refused++
		}
	}
	return got, refused
}

// Diff returns "" when want and got agree on everything but the ran line, or
// a description of the first place where they differ.
func Diff(want, got Recording) string {
	switch {
	case want.Name != got.Name:
		return fmt.Sprintf("trace %s: recorded as %s", want.Name, got.Name)
	case want.Policy != got.Policy:
		return fmt.Sprintf("trace %s: policy %v, got %v", want.Name, want.Policy.lines(), got.Policy.lines())
	}
	for i := range max(len(want.Entries), len(got.Entries)) {
		var w, g string
		if i < len(want.Entries) {
			w = want.Entries[i].String()
		}
		if i < len(got.Entries) {
			g = got.Entries[i].String()
		}
		if w != g {
			return fmt.Sprintf("trace %s step %d:\n\twant %s\n\tgot  %s", want.Name, i+1, w, g)
		}
	}
	return ""
}

// scanner reads the line-oriented formats: # starts a comment, blank lines
// are skipped, words are separated by white space.
type scanner struct {
	s    *bufio.Scanner
	name string
	line int
}

func (sc *scanner) next() ([]string, bool) {
	for sc.s.Scan() {
		sc.line++
		text, _, _ := strings.Cut(sc.s.Text(), "#")
		if words := strings.Fields(text); len(words) > 0 {
			return words, true
		}
	}
	return nil, false
}

func (sc *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", sc.name, sc.line, fmt.Sprintf(format, args...))
}

func (sc *scanner) policy(p *Policy, words []string) (bool, error) {
	switch words[0] {
	case "size":
		if len(words) != 2 {
			return true, sc.errorf("want: size N")
		}
		n, err := strconv.Atoi(words[1])
		if err != nil || n < 1 {
			return true, sc.errorf("size %q: want a whole number of at least 1", words[1])
		}
		p.Size = n
		return true, nil
	case "idle":
		if len(words) != 2 {
			return true, sc.errorf("want: idle N")
		}
		n, err := strconv.Atoi(words[1])
		if err != nil || n < 0 {
			return true, sc.errorf("idle %q: want a whole number (0: no ceiling)", words[1])
		}
		p.Idle = n
		return true, nil
	case "age":
		switch {
		case len(words) == 2 && words[1] == "none":
			p.Age, p.AgeMS = NoAge, 0
			return true, nil
		case len(words) == 3 && (words[1] == "life" || words[1] == "idle"):
			ms, err := strconv.ParseInt(words[2], 10, 64)
			if err != nil || ms < 1 {
				return true, sc.errorf("age %q: want milliseconds, at least 1", words[2])
			}
			p.Age, p.AgeMS = LifeAge, ms
			if words[1] == "idle" {
				p.Age = IdleAge
			}
			return true, nil
		}
		return true, sc.errorf("want: age none | age life MS | age idle MS")
	}
	return false, nil
}

// step parses a step's words; now is the time of the step before.
func (sc *scanner) step(words []string, now int64) (Step, error) {
	v, ok := verbs[words[0]]
	if !ok {
		return Step{}, sc.errorf("unknown directive %q", words[0])
	}
	s := Step{Verb: v, At: now}
	rest := words[1:]
	if v != Evict {
		if len(rest) == 0 {
			return s, sc.errorf("%s needs a seat", v)
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 1 {
			return s, sc.errorf("seat %q: want a whole number of at least 1", rest[0])
		}
		s.Seat, rest = n, rest[1:]
	}
	if len(rest) > 0 {
		if len(rest) != 2 || rest[0] != "at" {
			return s, sc.errorf("want: %s [SEAT] [at MS]", v)
		}
		at, err := strconv.ParseInt(rest[1], 10, 64)
		if err != nil {
			return s, sc.errorf("time %q: want milliseconds", rest[1])
		}
		s.At = at
	}
	if s.At < now {
		return s, sc.errorf("time goes back from %d to %d", now, s.At)
	}
	return s, nil
}

// ParseSteps reads a step file; name is used in error messages. It checks the
// syntax, the policy and that time never goes back. Whether a seat holds a
// resource depends on the answers, so that is checked by whoever runs the
// trace.
func ParseSteps(r io.Reader, name string) ([]Trace, error) {
	sc := &scanner{s: bufio.NewScanner(r), name: name}
	var out []Trace
	for {
		words, ok := sc.next()
		if !ok {
			return out, sc.s.Err()
		}
		if words[0] != "trace" || len(words) != 2 {
			return nil, sc.errorf("want: trace NAME")
		}
		t := Trace{Name: words[1]}
		var now int64
		for {
			words, ok = sc.next()
			if !ok {
				return nil, sc.errorf("trace %s has no end", t.Name)
			}
			if words[0] == "end" {
				break
			}
			if words[0] == "compare" {
				t.Compare = append([]string(nil), words[1:]...)
				continue
			}
			if isPolicy, err := sc.policy(&t.Policy, words); isPolicy {
				if err != nil {
					return nil, err
				}
				continue
			}
			s, err := sc.step(words, now)
			if err != nil {
				return nil, err
			}
			now = s.At
			t.Steps = append(t.Steps, s)
		}
		if t.Policy.Size == 0 {
			return nil, sc.errorf("trace %s has no size", t.Name)
		}
		out = append(out, t)
	}
}

// WriteSteps writes traces in the step format. A step's time is written
// only when it differs from the step before (the first step's when it is not
// zero), so clockless traces read as plain moves.
func WriteSteps(w io.Writer, traces []Trace) error {
	bw := bufio.NewWriter(w)
	for _, t := range traces {
		fmt.Fprintf(bw, "trace %s\n", t.Name)
		for _, l := range t.Policy.lines() {
			fmt.Fprintln(bw, l)
		}
		fmt.Fprintf(bw, "compare %s\n", strings.Join(t.Compare, " "))
		var now int64
		for _, s := range t.Steps {
			bw.WriteString(s.Verb.String())
			if s.Verb != Evict {
				fmt.Fprintf(bw, " %d", s.Seat)
			}
			if s.At != now {
				fmt.Fprintf(bw, " at %d", s.At)
				now = s.At
			}
			bw.WriteByte('\n')
		}
		fmt.Fprintln(bw, "end")
	}
	return bw.Flush()
}

// ParseRecording reads a recording file. name is used in error messages.
func ParseRecording(r io.Reader, name string) ([]Recording, error) {
	sc := &scanner{s: bufio.NewScanner(r), name: name}
	var out []Recording
	for {
		words, ok := sc.next()
		if !ok {
			return out, sc.s.Err()
		}
		if words[0] != "trace" || len(words) != 2 {
			return nil, sc.errorf("want: trace NAME")
		}
		rec := Recording{Name: words[1]}
		var now int64
		for {
			words, ok = sc.next()
			if !ok {
				return nil, sc.errorf("trace %s has no end", rec.Name)
			}
			if words[0] == "end" {
				break
			}
			if words[0] == "ran" {
				rec.Ran = strings.Join(words[1:], " ")
				continue
			}
			if isPolicy, err := sc.policy(&rec.Policy, words); isPolicy {
				if err != nil {
					return nil, err
				}
				continue
			}
			e, err := sc.entry(words, now)
			if err != nil {
				return nil, err
			}
			now = e.Step.At
			rec.Entries = append(rec.Entries, e)
		}
		out = append(out, rec)
	}
}

func (sc *scanner) entry(words []string, now int64) (Entry, error) {
	i := slices.Index(words, "=>")
	if i < 0 {
		return Entry{}, sc.errorf("want: STEP => OUTCOME")
	}
	s, err := sc.step(words[:i], now)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Step: s}
	rest := words[i+1:]
	num := func(w string) (int, error) {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			return 0, sc.errorf("%q: want a whole number", w)
		}
		return n, nil
	}
	for len(rest) > 0 {
		switch {
		case rest[0] == "refused":
			e.Refused, rest = true, rest[1:]
			continue
		case len(rest) < 2:
			return e, sc.errorf("%q needs a value", rest[0])
		}
		switch rest[0] {
		case "closed":
			for _, c := range strings.Split(rest[1], ",") {
				n, err := num(c)
				if err != nil {
					return e, err
				}
				e.Closed = append(e.Closed, n)
			}
		case "got":
			e.Got, err = num(rest[1])
		case "idle":
			e.Idle, err = num(rest[1])
		case "live":
			e.Live, err = num(rest[1])
		default:
			return e, sc.errorf("unknown outcome %q", rest[0])
		}
		if err != nil {
			return e, err
		}
		rest = rest[2:]
	}
	return e, nil
}

// WriteRecording writes recordings in the recording format.
func WriteRecording(w io.Writer, recs []Recording) error {
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		fmt.Fprintf(bw, "trace %s\nran %s\n", r.Name, r.Ran)
		for _, l := range r.Policy.lines() {
			fmt.Fprintln(bw, l)
		}
		for _, e := range r.Entries {
			fmt.Fprintln(bw, e.String())
		}
		fmt.Fprintln(bw, "end")
	}
	return bw.Flush()
}
