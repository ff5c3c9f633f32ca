package engine

import (
	"fmt"
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
	// Classes are classes of callers (pool.Class: a reserve, a ceiling, a
	// lend), each with its own load; with any, the synthetic load is
	// theirs alone (Rate and Hold are not used). The pool is given the
	// classes (Pool.SetClasses), one queue each, served in the order
	// Pool.Serve says, as a Keeper with Config.Classes.
	Classes []ClassLoad
	// NoClasses gives the pool no classes: the same callers, with their
	// classes' loads and counted by class, queue in one FIFO, first come
	// first served, as a Keeper without Config.Classes.
	NoClasses bool
	// Full is what the Keeper does with such a refusal: FullWait (the zero
	// value) tells the pool Unmade(…, ward.GuardFull), which with other
	// resources live has the caller wait for a return or the next dial
	// (one a second) instead; FullFail tells it a failed dial
	// (ward.GuardNone), and the caller gets the error, as pgxpool does.
	Full string
}

// ClassLoad is a class of callers and its load: either Rate callers a
// second, arriving as a Poisson stream (times any burst in force), holding
// for an exponentially distributed time around Hold, or a population of
// Callers, each asking again as soon as its call ends and holding for Hold
// exactly (a batch job's workers); a call that fails (timed out, shed, a
// dial error) asks again after Hold.
type ClassLoad struct {
	pool.Class
	Rate    float64
	Callers int
	Hold    time.Duration
}

// MaxClasses bounds Scenario.Classes.
const MaxClasses = 64

// poolClasses are the classes the pool is given: none with NoClasses.
func (s *Scenario) poolClasses() []pool.Class {
	if s.NoClasses || len(s.Classes) == 0 {
		return nil
	}
	cs := make([]pool.Class, len(s.Classes))
	for i, c := range s.Classes {
		cs[i] = c.Class
	}
	return cs
}

// validateClass reports what is wrong with class i of s (its load, and
// the classes up to it as pool.ValidateClasses sees them), or nil.
func (s *Scenario) validateClass(i int) error {
	c := s.Classes[i]
	switch {
	case c.Callers > 0 && c.Rate > 0 || c.Callers == 0 && !(c.Rate > 0):
		return fmt.Errorf("class %q has no load: want class-load %s rate R hold D, or callers N hold D", c.Name, c.Name)
	case c.Rate > 1e7 || c.Callers < 0 || c.Callers > 1<<20:
		return fmt.Errorf("class %q: rate %v and callers %d, want a rate up to 1e7 or up to 1048576 callers", c.Name, c.Rate, c.Callers)
	case c.Hold <= 0:
		return fmt.Errorf("class %q: hold is %v, want more than 0", c.Name, c.Hold)
	}
	cs := make([]pool.Class, i+1)
	for j := range cs {
		cs[j] = s.Classes[j].Class
	}
	return pool.ValidateClasses(cs, s.Limits.Size)
}

// callers is an upper bound on the callers of s's synthetic load: its
// rates at the height of the bursts times its seconds, and each caller of
// a population asking at most once a hold.
func (s *Scenario) callers() float64 {
	peak := 1.0
	for _, b := range s.Bursts {
		peak *= max(b.Factor, 1)
	}
	if len(s.Classes) == 0 {
		return s.Rate * peak * float64(s.Seconds)
	}
	n := 0.0
	for _, c := range s.Classes {
		if c.Callers > 0 {
			n += float64(c.Callers) * (1 + float64(s.Seconds)*float64(time.Second)/float64(c.Hold))
		} else {
			n += c.Rate * peak * float64(s.Seconds)
		}
	}
	return n
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
	if len(s.Classes) > MaxClasses {
		return fmt.Errorf("%d classes, want %d at most", len(s.Classes), MaxClasses)
	}
	for i := range s.Classes {
		if err := s.validateClass(i); err != nil {
			return err
		}
	}
	peak := s.Rate
	for _, b := range s.Bursts {
		peak *= max(b.Factor, 1)
	}
	if n := s.callers(); n > MaxCallers {
		if len(s.Classes) > 0 {
			return fmt.Errorf("the classes' loads for %d s are up to %g callers, more than %g", s.Seconds, n, float64(MaxCallers))
		}
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
