package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Scenario is everything one run of the simulator needs besides its load:
// the synthetic load's shape (used only when no recorded load is given),
// the backend's behaviour (dial time, slowdowns, outages), the pool's limits
// and the ward in front of it. The zero Scenario is not runnable; start from
// a built-in (see Builtin) or from Parse.
type Scenario struct {
	// Name is a short label, written on the chart and the summary.
	Name string
	// Note is one line saying what the scenario shows, written on the chart.
	Note string
	// Seconds is how much virtual time the run covers, at least 1.
	Seconds int
	// Seed is the seed of every draw of the run: arrivals and holds (the
	// load), breaker rolls and backoff jitter (the pool), partial outages
	// (the backend). Each has its own stream, so two scenarios that differ
	// only in limits or ward see exactly the same load.
	Seed uint64
	// Rate is the synthetic load: callers a second, arriving as a Poisson
	// stream. Positive.
	Rate float64
	// Hold is the mean time a synthetic caller keeps its resource
	// (exponentially distributed). Positive.
	Hold time.Duration
	// Dial is how long making a resource takes, before any slowdown. Zero
	// or more.
	Dial time.Duration
	// Limits are the pool's limits.
	Limits pool.Limits
	// Timeout is how long a caller waits for a resource before giving up,
	// as a context deadline would make it; zero waits for ever.
	Timeout time.Duration
	// Bursts multiply the arrival rate over a span.
	Bursts []Burst
	// Slows make the backend slower over a span.
	Slows []Slow
	// Outages make dials fail over a span.
	Outages []Outage
	// Breaks make loans come home broken over a span: the caller drops
	// them (Pool.Drop) instead of giving them back.
	Breaks []Outage
	// Breaker puts ward.DefaultSre's breaker in front of the backend.
	Breaker bool
	// Backoff holds makes back after a failed one, by ward.DefaultBackoff.
	Backoff bool
	// Bucket spaces makes out with a token bucket (ward.Bucket) of
	// BucketRate tokens a second up to BucketBurst: a make it cannot pay
	// for is answered Later.
	Bucket                  bool
	BucketRate, BucketBurst float64
	// Shedder refuses callers while the host is hot and full
	// (ward.Shedder, DefaultShed with ShedCPU as its threshold and
	// ShedFloor as its floor), reading the CPU model below.
	Shedder   bool
	ShedCPU   int // thousandths
	ShedFloor float64
	// CPUIdle and CPUPerLoan are the host's CPU model, in thousandths: a
	// take at t reads CPUIdle plus CPUPerLoan for every resource busy
	// then (lent or being made), at most 1000. So the load drives the
	// CPU: a burst that keeps more resources busy heats the host.
	CPUIdle, CPUPerLoan int
	// Limiter leases every loan from an adaptive concurrency limiter
	// (ward.Limiter, AIMD): Limit holds its policy, its Initial held
	// between Min and Max. A take it has no lease for is answered Wait.
	Limiter bool
	Limit   ward.Aimd
	// Failover, when positive, moves the backend at that instant: every
	// resource whose dial began before it is on the old node, which turned
	// read-only, and every loan of one that ends at or after Failover
	// fails (the caller's write gets a read-only error, as a demoted
	// PostgreSQL's 25006 or Redis's READONLY). Dials begun after it reach
	// the new node. Zero: no failover.
	Failover time.Duration
	// Classify is what the caller's driver makes of that error, as its
	// classifier says (wardpool.Verdict): ClassifyReset, the drivers'
	// default, retires every resource of the failing one's generation
	// (Pool.ResetFor: once per generation); ClassifyDestroy drops the
	// failing resource alone; ClassifyNone keeps it, as pgxpool does. The
	// zero value is ClassifyReset.
	Classify string
	// HoldFor, when positive, holds the callers through the failover, as
	// the Keeper's Config.Hold does: the classifier's reset is
	// Pool.ResetFor with pool.Hold{For: HoldFor, Every: HoldEvery}, and
	// until the hold ends the pool starts at most one dial every HoldEvery
	// (zero: pool.DefaultHoldEvery) and has the other callers wait; a
	// caller whose dial fails goes back to the front of the queue. Zero:
	// no hold, every caller dials for itself.
	HoldFor, HoldEvery time.Duration
	// RotateAt, when positive, rotates the pool's resources at that
	// instant (credentials rotated, an endpoint moved): Pool.Reset(now,
	// RotateOver). RotateOver zero retires the whole generation at once
	// (idle ones now, lent ones on return); positive, at a bounded pace
	// over that window (one at once, one more every RotateOver/n). Zero
	// RotateAt: no rotation.
	RotateAt, RotateOver time.Duration
	// ServerMax, when positive, is how many connections the backend takes
	// from this pool at once (a role's CONNECTION LIMIT, Redis's
	// maxclients less the other clients): a dial that would open one more
	// is refused for want of room, as PostgreSQL's 53300 is, and the
	// drivers' classifiers call it wardpool.Full. Every connection made and
	// not yet closed counts, and every dial accepted and still in flight.
	// Zero: no limit.
	ServerMax int
	// Full is what the Keeper does with such a refusal: FullWait (the zero
	// value) tells the pool Unmade(…, ward.GuardFull), which with other
	// resources live has the caller wait for a return or the next dial
	// (one a second) instead; FullFail tells it a failed dial
	// (ward.GuardNone), and the caller gets the error, as pgxpool does.
	Full string
}

// The values of Scenario.Full.
const (
	FullWait = "wait"
	FullFail = "fail"
)

// fullWait reports whether a dial the backend refuses for want of room has
// its caller wait (Scenario.Full).
func (s *Scenario) fullWait() bool { return s.Full != FullFail }

// The values of Scenario.Classify.
const (
	ClassifyReset   = "reset"
	ClassifyDestroy = "destroy"
	ClassifyNone    = "none"
)

// classify is s.Classify with its zero value read.
func (s *Scenario) classify() string {
	if s.Classify == "" {
		return ClassifyReset
	}
	return s.Classify
}

// Span is a stretch of virtual time, [From, To).
type Span struct{ From, To time.Duration }

// In reports whether t falls in the span.
func (s Span) In(t time.Duration) bool { return t >= s.From && t < s.To }

// Burst multiplies the arrival rate by Factor within its span.
type Burst struct {
	Span
	Factor float64
}

// Slow is a database slowdown: dial and hold times grow linearly from their
// usual length at From to Dial and Hold times it at To, then return to usual.
// A factor of 1 leaves that time alone.
type Slow struct {
	Span
	Dial, Hold float64
}

// Outage makes dials started within its span fail, a Fraction of them (1:
// all), after the dial time in force. As a break, it makes that fraction of
// the loans given back within its span come home broken.
type Outage struct {
	Span
	Fraction float64
}

// Ward reports whether the scenario has a ward.
func (s *Scenario) Ward() bool { return s.Breaker || s.Backoff || s.Bucket || s.Shedder || s.Limiter }

// Guards are the names of the guards a scenario can put in front of its
// pool, in the order Guards and the ward setting write them.
var Guards = []string{"breaker", "backoff", "bucket", "shedder", "limiter"}

// GuardsOn returns the names of s's guards, in the order of Guards.
func (s *Scenario) GuardsOn() []string {
	var on []string
	for i, b := range []bool{s.Breaker, s.Backoff, s.Bucket, s.Shedder, s.Limiter} {
		if b {
			on = append(on, Guards[i])
		}
	}
	return on
}

// The knobs' defaults, as every built-in has them: a bucket of 50 makes a
// second up to 10 at once; the shedder's threshold and floor and the
// limiter's policy as package ward's presets; a host at 20% CPU idle and
// 5% more for each busy resource (so 16 busy is 100%).
const (
	DefaultBucketRate  = 50
	DefaultBucketBurst = 10
	DefaultCPUIdle     = 200
	DefaultCPUPerLoan  = 50
)

// cpuAt is the CPU model's reading with busy resources busy.
func (s *Scenario) cpuAt(busy int) int {
	return min(s.CPUIdle+s.CPUPerLoan*busy, 1000)
}

// ward builds the scenario's guards, their clocks starting at origin.
func (s *Scenario) ward(origin time.Time) ward.Ward {
	var w ward.Ward
	if s.Breaker {
		w.Breaker = ward.NewBreaker(ward.DefaultSre, origin)
	}
	if s.Backoff {
		b := ward.DefaultBackoff
		w.Backoff = &b
	}
	if s.Bucket {
		w.Bucket = ward.NewBucket(s.BucketRate, s.BucketBurst, origin)
	}
	if s.Shedder {
		p := ward.DefaultShed
		p.CPU, p.Floor = s.ShedCPU, s.ShedFloor
		w.Shedder = ward.NewShedder(p, origin)
	}
	if s.Limiter {
		w.Limiter = ward.NewLimiter(s.Limit)
	}
	return w
}

// Builtins lists the built-in scenarios by name.
var Builtins = []string{"burst", "steady", "slowdown", "outage", "failover"}

// Builtin returns the built-in scenario called name, or false. "burst" is
// the simulator's default: the load doubles between seconds 8 and 16.
func Builtin(name string) (Scenario, bool) {
	s := Scenario{
		Name: name, Seconds: 24, Seed: 1, Rate: 100,
		Hold: 40 * time.Millisecond, Dial: 20 * time.Millisecond,
		Limits:     pool.Limits{Size: 12, Idle: 12, Keep: 2 * time.Second},
		BucketRate: DefaultBucketRate, BucketBurst: DefaultBucketBurst,
		ShedCPU: ward.DefaultShed.CPU, ShedFloor: ward.DefaultShed.Floor,
		CPUIdle: DefaultCPUIdle, CPUPerLoan: DefaultCPUPerLoan,
		Limit: ward.DefaultAimd,
	}
	switch name {
	case "burst":
		s.Note = "load doubles from second 8 to 16"
		s.Bursts = []Burst{{Span{8 * time.Second, 16 * time.Second}, 2}}
	case "steady":
		s.Note = "a steady Poisson load"
	case "slowdown":
		s.Note = "the database slows: dials to 10x and holds to 3x from second 8 to 16"
		s.Seconds = 30
		s.Timeout = 2 * time.Second
		s.Slows = []Slow{{Span{8 * time.Second, 16 * time.Second}, 10, 3}}
	case "outage":
		s.Note = "from second 8 to 16 every dial fails and every loan comes home broken"
		s.Seconds = 30
		s.Timeout = time.Second
		s.Limits.Keep = 500 * time.Millisecond
		s.Outages = []Outage{{Span{8 * time.Second, 16 * time.Second}, 1}}
		s.Breaks = []Outage{{Span{8 * time.Second, 16 * time.Second}, 1}}
		s.Breaker, s.Backoff = true, true
	case "failover":
		s.Note = "a burst from second 2 to 4 grows the pool; at second 8 the primary moves and the old one answers read-only"
		s.Seconds = 20
		s.Rate = 300
		s.Hold = 20 * time.Millisecond
		s.Limits = pool.Limits{Size: 32, Idle: 32, Keep: 30 * time.Second}
		s.Timeout = time.Second
		s.Bursts = []Burst{{Span{2 * time.Second, 4 * time.Second}, 4}}
		s.Failover = 8 * time.Second
	default:
		return Scenario{}, false
	}
	return s, true
}

// Validate reports what makes s unrunnable, or nil.
func (s *Scenario) Validate() error {
	switch {
	case s.Seconds < 1 || s.Seconds > 30*24*3600:
		return fmt.Errorf("seconds is %d, want 1 to 2592000 (30 days)", s.Seconds)
	case !(s.Rate > 0) || s.Rate > 1e7:
		return fmt.Errorf("rate is %v, want more than 0 and at most 1e7 a second", s.Rate)
	case s.Hold <= 0:
		return fmt.Errorf("hold is %v, want more than 0", s.Hold)
	case s.Dial < 0:
		return fmt.Errorf("dial is %v, want 0 or more", s.Dial)
	case s.Timeout < 0:
		return fmt.Errorf("timeout is %v, want 0 (none) or more", s.Timeout)
	case s.Failover < 0:
		return fmt.Errorf("failover is %v, want 0 (none) or more", s.Failover)
	case s.RotateAt < 0 || s.RotateOver < 0:
		return fmt.Errorf("rotate-at %v and rotate-over %v, want 0 or more", s.RotateAt, s.RotateOver)
	case s.HoldFor < 0 || s.HoldEvery < 0:
		return fmt.Errorf("hold-for %v and hold-every %v, want 0 or more", s.HoldFor, s.HoldEvery)
	case s.ServerMax < 0 || s.ServerMax > 1<<20:
		return fmt.Errorf("server-max is %d, want 0 (no limit) to 1048576", s.ServerMax)
	}
	// A guard's knobs are held only while it is on: a scenario built by
	// hand without them runs as it did before there were any.
	switch {
	case s.Bucket && (!(s.BucketRate >= 0) || s.BucketRate > 1e7 || !(s.BucketBurst >= 0) || s.BucketBurst > 1e7):
		return fmt.Errorf("bucket rate %v and burst %v, want 0 to 1e7", s.BucketRate, s.BucketBurst)
	case s.Shedder && (s.ShedCPU < 0 || s.ShedCPU > 1000 || !(s.ShedFloor >= 0 && s.ShedFloor <= 1)):
		return fmt.Errorf("shed cpu %d and floor %v, want 0 to 1000 and 0 to 1", s.ShedCPU, s.ShedFloor)
	case s.CPUIdle < 0 || s.CPUIdle > 1000 || s.CPUPerLoan < 0 || s.CPUPerLoan > 1000:
		return fmt.Errorf("cpu idle %d and per loan %d, want 0 to 1000 (thousandths)", s.CPUIdle, s.CPUPerLoan)
	case s.Limiter && (s.Limit.Min < 1 || s.Limit.Max < s.Limit.Min || s.Limit.Max > 1<<20):
		return fmt.Errorf("limit min %d, max %d: want 1 <= min <= max <= 1048576 (initial is held between them)", s.Limit.Min, s.Limit.Max)
	case s.Limiter && (s.Limit.Slow < 0 || !(s.Limit.Backoff > 0 && s.Limit.Backoff < 1)):
		return fmt.Errorf("limit slow %v and backoff %v, want 0 or more and between 0 and 1", s.Limit.Slow, s.Limit.Backoff)
	}
	switch s.Classify {
	case "", ClassifyReset, ClassifyDestroy, ClassifyNone:
	default:
		return fmt.Errorf("classify is %q, want reset, destroy or none", s.Classify)
	}
	switch s.Full {
	case "", FullWait, FullFail:
	default:
		return fmt.Errorf("full is %q, want wait or fail", s.Full)
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	for _, b := range s.Bursts {
		if !(b.Factor >= 0) || b.Factor > 1e4 {
			return fmt.Errorf("burst factor %v, want 0 to 10000", b.Factor)
		}
	}
	for _, sl := range s.Slows {
		if !(sl.Dial >= 1) || !(sl.Hold >= 1) || sl.Dial > 1e4 || sl.Hold > 1e4 {
			return fmt.Errorf("slow factors dial x%v hold x%v, want 1 to 10000", sl.Dial, sl.Hold)
		}
	}
	for _, o := range append(s.Outages[:len(s.Outages):len(s.Outages)], s.Breaks...) {
		if !(o.Fraction >= 0 && o.Fraction <= 1) {
			return fmt.Errorf("outage or break fraction %v, want 0 to 1", o.Fraction)
		}
	}
	peak := s.Rate
	for _, b := range s.Bursts {
		peak *= max(b.Factor, 1)
	}
	if peak*float64(s.Seconds) > MaxCallers {
		return fmt.Errorf("rate %g a second (%g at the height of the bursts) for %d s is more than %g callers", s.Rate, peak, s.Seconds, float64(MaxCallers))
	}
	return nil
}

// MaxCallers bounds the synthetic load of one run (rate at the height of
// its bursts times seconds), so that every run ends in reasonable time.
const MaxCallers = 500_000_000

// rateAt is the arrival rate in force at t.
func (s *Scenario) rateAt(t time.Duration) float64 {
	r := s.Rate
	for _, b := range s.Bursts {
		if b.In(t) {
			r *= b.Factor
		}
	}
	return r
}

// slowAt returns the dial and hold factors in force at t.
func (s *Scenario) slowAt(t time.Duration) (dial, hold float64) {
	dial, hold = 1, 1
	for _, sl := range s.Slows {
		if !sl.In(t) {
			continue
		}
		f := float64(t-sl.From) / float64(sl.To-sl.From)
		dial *= 1 + (sl.Dial-1)*f
		hold *= 1 + (sl.Hold-1)*f
	}
	return dial, hold
}

// failAt returns the share of dials started at t that fail.
func (s *Scenario) failAt(t time.Duration) float64 { return share(s.Outages, t) }

// breakAt returns the share of loans given back at t that are broken.
func (s *Scenario) breakAt(t time.Duration) float64 { return share(s.Breaks, t) }

func share(spans []Outage, t time.Duration) float64 {
	f := 0.0
	for _, o := range spans {
		if o.In(t) {
			f = max(f, o.Fraction)
		}
	}
	return f
}

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
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := s.set(sc.Text()); err != nil {
			return Scenario{}, &LineError{n, fmt.Errorf("%w: %v", ErrScenario, err)}
		}
	}
	if err := sc.Err(); err != nil {
		return Scenario{}, &LineError{n + 1, fmt.Errorf("%w: %v", ErrScenario, err)}
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
		"limit-initial", "limit-min", "limit-max", "limit-slow", "limit-backoff"}
	sort.Strings(k)
	return k
}()

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
