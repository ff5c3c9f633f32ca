package metrics

import (
	"sort"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// Source is what the exporters read: anything that answers one reading
// of the wardpool runtime's figures, WardStats, such as a
// *wardpool.Keeper of any type or a driver's pool (*pgxward.Pool,
// *redisward.Pool, *sqlward.Connector). An exporter calls WardStats once
// per scrape or collection, never once per series, so a Keeper's mutex is
// taken once each time. WardStats must be safe for concurrent use.
type Source interface {
	WardStats() wardpool.Stats
}

// limited is an optional part of a Source: the limits it holds itself to.
// *wardpool.Keeper and every driver's pool have it.
type limited interface {
	Limits() pool.Limits
}

// sharing is an optional part of a Source: whether it has guards shared
// with other replicas (wardpool.Config.Shared). Only then are the shared series
// exported. *wardpool.Keeper has it.
type sharing interface {
	Sharing() bool
}

// leaky is an optional part of a Source: how many loans are out now past
// the leak watch's threshold. *wardpool.Keeper and the drivers' pools have it.
type leaky interface {
	Leaked() int
}

// named is an optional part of a Source: the pool's name, its default
// pool label. *sqlward.Connector has it (Config.Name).
type named interface {
	Name() string
}

// PoolLabel is the label that tells pools apart: Options.Labels may set
// it, and a Source with a Name method gets it by default.
const PoolLabel = "pool"

// FromBooks returns a Source for a pool.Pool run by the caller's own code
// (a Pool has no lock of its own). books is called once per reading, from
// the exporter's goroutine, so it must take whatever lock guards the Pool,
// for example:
//
//	metrics.FromBooks(func() pool.Books { mu.Lock(); defer mu.Unlock(); return sim.Books() })
//
// Only the series of pool.Books are exported for such a Source; the
// runtime's (waiting, dialing, acquires, checks, leaks, …) belong to a
// Keeper and are left out rather than reported as zeros.
func FromBooks(books func() pool.Books) Source { return booksSource(books) }

// booksSource is the Source FromBooks returns.
type booksSource func() pool.Books

// WardStats returns the books in a Stats with the runtime's figures zero.
func (f booksSource) WardStats() wardpool.Stats { return wardpool.Stats{Books: f()} }

// Options say how the exported series are named and labelled. The zero
// Options name every series under the namespace "wardpool" with no labels.
type Options struct {
	// Namespace is the first part of every series name: "wardpool" when
	// empty. Prometheus joins the parts with "_", OpenTelemetry with ".".
	Namespace string
	// Subsystem, when set, is the second part of every series name, e.g.
	// the pool's role ("primary", "cache").
	Subsystem string
	// Labels are added to every series: constant labels in Prometheus,
	// attributes in OpenTelemetry. Use them to tell pools apart, e.g.
	// {"pool": "orders"}. Without a "pool" label here, a Source with a
	// Name method (a driver's pool, named by its Config.Name) gets
	// pool=<its name>. The exporters copy the map.
	Labels map[string]string
}

// forSource returns o with the pool label set to src's name when src has
// one and o.Labels has no pool label; o itself otherwise.
func (o Options) forSource(src Source) Options {
	n, ok := src.(named)
	if !ok {
		return o
	}
	if _, set := o.Labels[PoolLabel]; set {
		return o
	}
	name := n.Name()
	if name == "" {
		return o
	}
	labels := make(map[string]string, len(o.Labels)+1)
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[PoolLabel] = name
	o.Labels = labels
	return o
}

// prefix returns the namespace and subsystem joined by sep.
func (o Options) prefix(sep string) string {
	ns := o.Namespace
	if ns == "" {
		ns = "wardpool"
	}
	if o.Subsystem != "" {
		return ns + sep + o.Subsystem
	}
	return ns
}

// labelKeys returns the keys of o.Labels in order.
func (o Options) labelKeys() []string {
	keys := make([]string, 0, len(o.Labels))
	for k := range o.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kind is how a series behaves.
type kind uint8

const (
	gauge   kind = iota // goes up and down: a count of things now
	counter             // only rises: a count of events since the start
)

// series is one exported figure. The same table drives Prometheus and
// OpenTelemetry, so the two always export the same figures.
type series struct {
	prom    string // Prometheus name after the prefix, with _total for counters
	otel    string // OpenTelemetry name after the prefix
	unit    string // OpenTelemetry unit (UCUM): "s" or a {annotation}
	help    string
	kind    kind
	runtime bool  // a Keeper figure, not in pool.Books
	shared  bool  // a figure of the shared guards (Stats.Shared)
	seconds bool  // value is a time.Duration, exported in seconds
	ratio   bool  // value is in millionths, exported as a fraction
	field   field // the figure
}

// field names one figure of a Stats. (A switch rather than a func value per
// series: a reading passed to a func value escapes to the heap.)
type field uint8

const (
	fLive field = iota + 1
	fIdle
	fBusy
	fWaiting
	fDialing
	fMade
	fFailed
	fLoans
	fReused
	fDropped
	fWaited
	fDeferred
	fShed
	fAcquires
	fAcquireWait
	fEmptyAcquires
	fCanceled
	fChecks
	fCheckFailures
	fLeaks
	fDoubleReleases
	fPanics
	fClosing
	fClosed
	fDialTimeouts
	fRefusal
	fBudgetHeld
	fBudgetShare
	fBudgetWaits
	fSharedTrips
	fSharedStoreErrors
	fSharedFallbacks
	fSharedBreakerState
	fSharedBreakerRefused
	fBudgetOutages
	fBudgetFallbacks
	fBudgetAlone
	fAcquireTimeouts
	fStalls
	fStalled
	fRotating
	fHolding
)

// of returns the figure f of s; a Duration in nanoseconds.
func (f field) of(s *wardpool.Stats) int64 {
	switch f {
	case fLive:
		return int64(s.Live)
	case fIdle:
		return int64(s.Idle)
	case fBusy:
		return int64(s.Busy)
	case fWaiting:
		return int64(s.Waiting)
	case fDialing:
		return int64(s.Dialing)
	case fMade:
		return int64(s.Made)
	case fFailed:
		return int64(s.Failed)
	case fLoans:
		return int64(s.Loans)
	case fReused:
		return int64(s.Reused)
	case fDropped:
		return int64(s.Dropped)
	case fWaited:
		return int64(s.Waited)
	case fDeferred:
		return int64(s.Deferred)
	case fShed:
		return int64(s.Shed)
	case fAcquires:
		return int64(s.Acquires)
	case fAcquireWait:
		return int64(s.AcquireWait)
	case fEmptyAcquires:
		return int64(s.EmptyAcquires)
	case fCanceled:
		return int64(s.Canceled)
	case fChecks:
		return int64(s.Checks)
	case fCheckFailures:
		return int64(s.CheckFailures)
	case fLeaks:
		return int64(s.Leaks)
	case fDoubleReleases:
		return int64(s.DoubleReleases)
	case fPanics:
		return int64(s.Panics)
	case fClosing:
		return int64(s.Closing)
	case fClosed:
		return int64(s.Closed)
	case fDialTimeouts:
		return int64(s.DialTimeouts)
	case fRefusal:
		return int64(s.Refusal * 1e6)
	case fBudgetHeld:
		return int64(s.Shared.Budget.Held)
	case fBudgetShare:
		return int64(s.Shared.Budget.Share)
	case fBudgetWaits:
		return int64(s.Shared.BudgetWaits)
	case fSharedTrips:
		sh := &s.Shared
		return int64(sh.Budget.Trips + sh.Breaker.Trips + sh.Dials.Trips)
	case fSharedStoreErrors:
		sh := &s.Shared
		return int64(sh.Budget.StoreErrors + sh.Breaker.StoreErrors + sh.Dials.StoreErrors)
	case fSharedFallbacks:
		sh := &s.Shared
		return int64(sh.Budget.Fallbacks + sh.Breaker.Fallbacks + sh.Dials.Fallbacks)
	case fSharedBreakerState:
		return int64(s.Shared.BreakerState)
	case fSharedBreakerRefused:
		return int64(s.Shared.BreakerRefused)
	case fBudgetOutages:
		return int64(s.Shared.Budget.Outages)
	case fBudgetFallbacks:
		return int64(s.Shared.Budget.Fallbacks)
	case fBudgetAlone:
		if s.Shared.Budget.Alone {
			return 1
		}
		return 0
	case fAcquireTimeouts:
		return int64(s.AcquireTimeouts)
	case fStalls:
		return int64(s.Stalls)
	case fStalled:
		if s.Stalled {
			return 1
		}
		return 0
	case fRotating:
		return int64(s.Rotating)
	case fHolding:
		if s.Holding {
			return 1
		}
		return 0
	}
	panic("metrics: unknown field")
}

// The retired series carries a reason label; its three values are these.
const (
	reasonIdle  = "idle"  // sat idle longer than Limits.Keep
	reasonLife  = "life"  // lived longer than Limits.Life
	reasonOther = "other" // every other retirement: Close, Reset, Idle ceiling, a bad give
)

// reasons are the retired series' label values, in exposition order.
var reasons = [...]string{reasonIdle, reasonLife, reasonOther}

// retiredBy splits the retired count by reason; the three add up to Retired.
func retiredBy(s *wardpool.Stats) [len(reasons)]int64 {
	idle, life := s.IdleRetired, s.LifeRetired
	other := s.Retired - idle - life
	if idle+life > s.Retired { // never, with honest books; don't wrap around
		other = 0
	}
	return [...]int64{int64(idle), int64(life), int64(other)}
}

// retired describes the retired series; its value comes from retiredBy.
var retired = series{
	prom: "retired_total", otel: "retired", unit: "{resource}", kind: counter,
	help: "Resources the pool let go of and closed, by reason: idle (sat idle past Keep), life (lived past Life), other (Close, Reset, the Idle ceiling, a resource given back to a closed pool).",
}

// resets describes the resets series: one sample per cause the Keeper has
// counted a reset under (Stats.ResetCauses: at most wardpool.MaxCauses of
// them), and cause="manual" (wardpool.CauseManual, Keeper.Reset's) from
// the start, at 0 until the first manual reset, so that a query or an
// alert on it has a series to read before anything happened.
var resets = series{
	prom: "resets_total", otel: "resets", unit: "{reset}", kind: counter, runtime: true,
	help: "Resets of the pool, by cause: every resource made before one was retired, after an error its driver's classifier judged a failover (cause: the SQLSTATE or reply, e.g. 25006, READONLY) or a Reset called by hand (cause manual).",
}

// causeLabel is the label of the resets series.
const causeLabel = "cause"

// causesOf returns the causes of s's resets, sorted, and their counts;
// wardpool.CauseManual is always among them, at 0 when there was none.
func causesOf(s *wardpool.Stats) ([]string, []int64) {
	keys := make([]string, 0, len(s.ResetCauses)+1)
	for k := range s.ResetCauses {
		keys = append(keys, k)
	}
	if _, ok := s.ResetCauses[wardpool.CauseManual]; !ok {
		keys = append(keys, wardpool.CauseManual)
	}
	sort.Strings(keys)
	vals := make([]int64, len(keys))
	for i, k := range keys {
		vals[i] = int64(s.ResetCauses[k])
	}
	return keys, vals
}

// table lists every series but retired and the limits, in exposition order.
var table = []series{
	{prom: "live_resources", otel: "resources.live", unit: "{resource}", kind: gauge,
		help:  "Resources that exist now: idle, lent, and being made (live = idle + busy).",
		field: fLive},
	{prom: "idle_resources", otel: "resources.idle", unit: "{resource}", kind: gauge,
		help:  "Resources sitting in the pool now, ready to lend.",
		field: fIdle},
	{prom: "busy_resources", otel: "resources.busy", unit: "{resource}", kind: gauge,
		help:  "Resources lent or being made now.",
		field: fBusy},
	{prom: "waiting_acquires", otel: "acquires.waiting", unit: "{acquire}", kind: gauge, runtime: true,
		help:  "Callers queued for a resource now.",
		field: fWaiting},
	{prom: "dialing_resources", otel: "resources.dialing", unit: "{resource}", kind: gauge, runtime: true,
		help:  "Dials in flight now.",
		field: fDialing},

	{prom: "made_total", otel: "made", unit: "{resource}", kind: counter,
		help:  "Resources made (dialed) and taken into the pool.",
		field: fMade},
	{prom: "make_failures_total", otel: "make.failures", unit: "{resource}", kind: counter,
		help:  "Makes (dials) that failed.",
		field: fFailed},
	{prom: "loans_total", otel: "loans", unit: "{loan}", kind: counter,
		help:  "Resources lent to callers, fresh or reused.",
		field: fLoans},
	{prom: "reused_loans_total", otel: "loans.reused", unit: "{loan}", kind: counter,
		help:  "Loans of a resource that was sitting idle (loans minus reused loans is the cold-start cost).",
		field: fReused},
	{prom: "dropped_total", otel: "dropped", unit: "{resource}", kind: counter,
		help:  "Resources taken off the books without being retired: destroyed (by the borrower, or after a failed Check or Reset) or hijacked.",
		field: fDropped},
	{prom: "waited_total", otel: "waited", unit: "{acquire}", kind: counter,
		help:  "Acquires that found the pool full and had to wait for a return.",
		field: fWaited},
	{prom: "deferred_total", otel: "deferred", unit: "{acquire}", kind: counter,
		help:  "Acquires the ward told to try again later (backoff, rate limit).",
		field: fDeferred},
	{prom: "shed_total", otel: "shed", unit: "{acquire}", kind: counter,
		help:  "Acquires the ward refused at once (breaker, shedder).",
		field: fShed},

	{prom: "acquires_total", otel: "acquires", unit: "{acquire}", kind: counter, runtime: true,
		help:  "Successful acquires.",
		field: fAcquires},
	{prom: "acquire_wait_seconds_total", otel: "acquire.wait", unit: "s", kind: counter, runtime: true, seconds: true,
		help:  "Total time successful acquires spent waiting (queued, dialing, held back), in seconds.",
		field: fAcquireWait},
	{prom: "empty_acquires_total", otel: "acquires.empty", unit: "{acquire}", kind: counter, runtime: true,
		help:  "Successful acquires that found nothing idle and had to wait or dial (never more than acquires_total).",
		field: fEmptyAcquires},
	{prom: "canceled_acquires_total", otel: "acquires.canceled", unit: "{acquire}", kind: counter, runtime: true,
		help:  "Acquires that ended with their context, or the pool's acquire timeout, before getting a resource.",
		field: fCanceled},
	{prom: "checks_total", otel: "checks", unit: "{check}", kind: counter, runtime: true,
		help:  "Health checks run on resources about to be lent after sitting idle.",
		field: fChecks},
	{prom: "check_failures_total", otel: "check.failures", unit: "{check}", kind: counter, runtime: true,
		help:  "Health checks that failed; the resource was closed and replaced unseen by the caller.",
		field: fCheckFailures},
	{prom: "leaks_total", otel: "leaks", unit: "{loan}", kind: counter, runtime: true,
		help:  "Loans held longer than LeakAfter.",
		field: fLeaks},
	{prom: "double_releases_total", otel: "double_releases", unit: "{call}", kind: counter, runtime: true,
		help:  "Release, Destroy or Hijack calls on a loan that had already ended (ignored).",
		field: fDoubleReleases},
	{prom: "panics_total", otel: "panics", unit: "{panic}", kind: counter, runtime: true,
		help:  "Panics recovered in the Dial, Close, Check, BeforeReuse and Classify hooks.",
		field: fPanics},
	{prom: "closing_resources", otel: "resources.closing", unit: "{resource}", kind: gauge, runtime: true,
		help:  "Resources waiting to be closed, or being closed, now (closing runs in the background).",
		field: fClosing},
	{prom: "closed_total", otel: "closed", unit: "{resource}", kind: counter, runtime: true,
		help:  "Closes done.",
		field: fClosed},
	{prom: "dial_timeouts_total", otel: "dial.timeouts", unit: "{dial}", kind: counter, runtime: true,
		help:  "Dials cut short by the dial timeout (counted in make_failures_total too).",
		field: fDialTimeouts},
	{prom: "acquire_timeouts_total", otel: "acquire.timeouts", unit: "{acquire}", kind: counter, runtime: true,
		help:  "Acquires the pool's acquire timeout (AcquireTimeout) ended before their context did (counted in canceled_acquires_total too).",
		field: fAcquireTimeouts},
	{prom: "stalls_total", otel: "stalls", unit: "{stall}", kind: counter, runtime: true,
		help:  "Stalls reported: callers waited longer than StallAfter and no loan came back for as long (the log names the holders).",
		field: fStalls},
	{prom: "rotating_resources", otel: "resources.rotating", unit: "{resource}", kind: gauge, runtime: true,
		help:  "Resources of a generation being replaced over a window (Rotate) still live: 0 once it is done.",
		field: fRotating},
	{prom: "holding", otel: "holding", unit: "1", kind: gauge, runtime: true,
		help:  "1 while the pool holds its callers through a failover (HoldOnFailover, Config.Hold): one dial at a time looks for the new node while they wait; else 0.",
		field: fHolding},
	{prom: "stalled", otel: "stalled", unit: "1", kind: gauge, runtime: true,
		help:  "1 while a reported stall lasts (callers wait, no loan has come back since the report), else 0.",
		field: fStalled},
	{prom: "breaker_refusal_ratio", otel: "breaker.refusal", unit: "1", kind: gauge, runtime: true, ratio: true,
		help:  "The share of new connections the ward's breaker refuses now, from 0 to 1 (0 without a breaker).",
		field: fRefusal},

	{prom: "budget_slots_held", otel: "budget.held", unit: "{slot}", kind: gauge, runtime: true, shared: true,
		help:  "Slots of the fleet's connection budget this replica holds now.",
		field: fBudgetHeld},
	{prom: "budget_slots_share", otel: "budget.share", unit: "{slot}", kind: gauge, runtime: true, shared: true,
		help:  "This replica's fair share of the fleet's connection budget (the budget over the live replicas).",
		field: fBudgetShare},
	{prom: "budget_waits_total", otel: "budget.waits", unit: "{lease}", kind: counter, runtime: true, shared: true,
		help:  "Leases the fleet's budget refused while callers waited at this replica's ceiling.",
		field: fBudgetWaits},
	{prom: "budget_store_outages_total", otel: "budget.store_outages", unit: "{outage}", kind: counter, runtime: true, shared: true,
		help:  "Outages of the budget's store this replica met: each began with a failed call after one that succeeded.",
		field: fBudgetOutages},
	{prom: "budget_fallbacks_total", otel: "budget.fallbacks", unit: "{decision}", kind: counter, runtime: true, shared: true,
		help:  "Leases this replica decided alone, within its safe share, because the budget's store did not answer.",
		field: fBudgetFallbacks},
	{prom: "budget_alone", otel: "budget.alone", unit: "1", kind: gauge, runtime: true, shared: true,
		help:  "1 while the budget's store does not answer and this replica keeps its safe share alone, else 0.",
		field: fBudgetAlone},
	{prom: "shared_store_trips_total", otel: "shared.trips", unit: "{trip}", kind: counter, runtime: true, shared: true,
		help:  "Round trips of the shared guards to their store.",
		field: fSharedTrips},
	{prom: "shared_store_errors_total", otel: "shared.store_errors", unit: "{trip}", kind: counter, runtime: true, shared: true,
		help:  "Round trips of the shared guards that failed or ran out of time.",
		field: fSharedStoreErrors},
	{prom: "shared_fallbacks_total", otel: "shared.fallbacks", unit: "{decision}", kind: counter, runtime: true, shared: true,
		help:  "Decisions the shared guards made locally because the store did not answer.",
		field: fSharedFallbacks},
	{prom: "shared_breaker_state", otel: "shared.breaker.state", unit: "1", kind: gauge, runtime: true, shared: true,
		help:  "The shared breaker's state as last seen: 0 closed, 1 open, 2 half-open.",
		field: fSharedBreakerState},
	{prom: "shared_breaker_refused_total", otel: "shared.breaker.refused", unit: "{dial}", kind: counter, runtime: true, shared: true,
		help:  "Dials the shared breaker refused.",
		field: fSharedBreakerRefused},
}

// The limit series, exported only when the Source has a Limits method and
// the limit is set (a limit of zero means none, and a ratio to it would be
// meaningless). They are read at every scrape: a limit changed at run time
// (Keeper.SetLimits) shows at the next.
var (
	maxResources = series{prom: "max_resources", otel: "resources.max", unit: "{resource}", kind: gauge,
		help: "The most resources the pool may hold (Limits.Size)."}
	maxIdle = series{prom: "max_idle_resources", otel: "resources.idle.max", unit: "{resource}", kind: gauge,
		help: "The most idle resources the pool keeps (Limits.Idle)."}
)

// leaked is the leaked-now gauge, exported only when the Source has a
// Leaked method; it is read at every scrape.
var leaked = series{prom: "leaked_loans", otel: "loans.leaked", unit: "{loan}", kind: gauge,
	help: "Loans out now for longer than LeakAfter (the leak watch's threshold)."}

// limitSeries are the limit series, in the order limitValues gives them.
var limitSeries = [...]series{maxResources, maxIdle}

// limitsOf returns src's Limits method, or nil when it has none.
func limitsOf(src Source) limited {
	l, _ := src.(limited)
	return l
}

// limitValues is lim as the limit series' values, read at every scrape, so
// that a Keeper's SetLimits shows at the next one. A value of zero means no
// limit: that series is left out of the scrape.
func limitValues(lim pool.Limits) [len(limitSeries)]int64 {
	return [...]int64{int64(lim.Size), int64(lim.Idle)}
}

// chosen returns the series of table to export for src.
func chosen(src Source) []series {
	_, booksOnly := src.(booksSource)
	sh, ok := src.(sharing)
	shared := ok && sh.Sharing()
	out := make([]series, 0, len(table))
	for _, s := range table {
		if (s.runtime && booksOnly) || (s.shared && !shared) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// float is v as exported: seconds for a duration, itself otherwise.
func (s *series) float(v int64) float64 {
	if s.seconds {
		return time.Duration(v).Seconds()
	}
	if s.ratio {
		return float64(v) / 1e6
	}
	return float64(v)
}
