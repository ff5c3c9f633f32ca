package metrics

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	"github.com/wardpool/wardpool"
)

// convFields are the figures OpenTelemetry's conventions name
// (db.client.connection.*): Observe emits them under those names and not
// again under wardpool.*. Prometheus keeps its own names for them.
var convFields = map[field]bool{fLive: true, fIdle: true, fBusy: true, fWaiting: true, fCanceled: true}

// otelChosen returns the series of table that Observe emits under
// wardpool.*: those chosen for src that the conventions have no name for.
func otelChosen(src Source) []series {
	list := chosen(src)
	out := list[:0]
	for _, s := range list {
		if !convFields[s.field] {
			out = append(out, s)
		}
	}
	return out
}

// minIdler is an optional part of a Source: how many idle resources it
// keeps open (Config.MinIdle). Every driver's pool has it.
type minIdler interface {
	MinIdle() int
}

// convPoolName is the value of db.client.connection.pool.name for a pool
// exported with o (after Options.forSource): its pool label, or the
// namespace ("wardpool") when it has none.
func convPoolName(o Options) string {
	if n := o.Labels[PoolLabel]; n != "" {
		return n
	}
	return o.prefix(".")
}

// convAttrs returns the attributes of the conventions' instruments:
// db.client.connection.pool.name, then o.Labels but the pool label, then
// extra.
func convAttrs(o Options, extra ...attribute.KeyValue) attribute.Set {
	kvs := []attribute.KeyValue{semconv.DBClientConnectionPoolName(convPoolName(o))}
	for _, k := range o.labelKeys() {
		if k != PoolLabel {
			kvs = append(kvs, attribute.String(k, o.Labels[k]))
		}
	}
	return attribute.NewSet(append(kvs, extra...)...)
}

// convInstruments are the conventions' observable instruments of one
// Observe, and the attribute sets they are observed with.
type convInstruments struct {
	count                 dbconv.ClientConnectionCountObservable
	max, idleMax, idleMin metric.Int64Observable
	pending, timeouts     metric.Int64Observable
	minIdle               minIdler
	base, idle, used      []metric.ObserveOption
	insts                 []metric.Observable
}

// newConvInstruments creates the conventions' instruments for src on
// meter: count always, the limits when src has them, pending_requests
// and timeouts for a Source with the runtime's figures.
func newConvInstruments(meter metric.Meter, src Source, o Options) (*convInstruments, error) {
	c := &convInstruments{
		base: []metric.ObserveOption{metric.WithAttributeSet(convAttrs(o))},
		idle: []metric.ObserveOption{metric.WithAttributeSet(convAttrs(o, semconv.DBClientConnectionStateIdle))},
		used: []metric.ObserveOption{metric.WithAttributeSet(convAttrs(o, semconv.DBClientConnectionStateUsed))},
	}
	wrap := func(name string, err error) error {
		return fmt.Errorf("metrics: instrument %s: %w", name, err)
	}
	var err error
	if c.count, err = dbconv.NewClientConnectionCountObservable(meter); err != nil {
		return nil, wrap(c.count.Name(), err)
	}
	c.insts = append(c.insts, c.count.Inst())
	if limitsOf(src) != nil {
		m, err := dbconv.NewClientConnectionMaxObservable(meter)
		if err != nil {
			return nil, wrap(m.Name(), err)
		}
		im, err := dbconv.NewClientConnectionIdleMaxObservable(meter)
		if err != nil {
			return nil, wrap(im.Name(), err)
		}
		c.max, c.idleMax = m.Inst(), im.Inst()
		c.insts = append(c.insts, c.max, c.idleMax)
	}
	if mi, ok := src.(minIdler); ok {
		in, err := dbconv.NewClientConnectionIdleMinObservable(meter)
		if err != nil {
			return nil, wrap(in.Name(), err)
		}
		c.idleMin, c.minIdle = in.Inst(), mi
		c.insts = append(c.insts, c.idleMin)
	}
	if _, booksOnly := src.(booksSource); !booksOnly {
		p, err := dbconv.NewClientConnectionPendingRequestsObservable(meter)
		if err != nil {
			return nil, wrap(p.Name(), err)
		}
		to, err := dbconv.NewClientConnectionTimeoutsObservable(meter)
		if err != nil {
			return nil, wrap(to.Name(), err)
		}
		c.pending, c.timeouts = p.Inst(), to.Inst()
		c.insts = append(c.insts, c.pending, c.timeouts)
	}
	return c, nil
}

// observe observes one reading st (and lsrc's limits, when lsrc is not nil).
func (c *convInstruments) observe(obs metric.Observer, st *wardpool.Stats, lsrc limited) {
	obs.ObserveInt64(c.count.Inst(), int64(st.Idle), c.idle...)
	obs.ObserveInt64(c.count.Inst(), int64(st.Busy), c.used...)
	if lsrc != nil && c.max != nil {
		l := lsrc.Limits()
		if l.Size > 0 {
			obs.ObserveInt64(c.max, int64(l.Size), c.base...)
		}
		idle := l.Idle
		if idle <= 0 || (l.Size > 0 && idle > l.Size) {
			idle = l.Size
		}
		if idle > 0 {
			obs.ObserveInt64(c.idleMax, int64(idle), c.base...)
		}
	}
	if c.minIdle != nil {
		if n := c.minIdle.MinIdle(); n > 0 {
			obs.ObserveInt64(c.idleMin, int64(n), c.base...)
		}
	}
	if c.pending != nil {
		obs.ObserveInt64(c.pending, int64(st.Waiting), c.base...)
		obs.ObserveInt64(c.timeouts, int64(st.Canceled), c.base...)
	}
}

// Timings records OpenTelemetry's three histograms of a database client's
// pool, in seconds, with db.client.connection.pool.name:
// db.client.connection.create_time (a dial that opened a connection),
// db.client.connection.wait_time (an acquire that got one) and
// db.client.connection.use_time (a loan, from its acquire to its release).
//
// A reading of Stats has totals, not one figure per event, and the
// Keeper has no hook of its own that reports each event's length yet; so
// a Timings is fed by whoever times the events:
//
//   - wait_time: AcquireObserver (its Timings field), hence pgxtrace.Tracer
//     for every acquire of a pgxward pool, Query's included;
//   - create_time: TimeDial around a Keeper's Config.Dial, and pgxtrace's
//     connect tracing for pgxward;
//   - use_time: Timings.Release for a Keeper's loans, and pgxtrace for
//     pgxward's.
//
// redisward's and sqlward's dials and loans are not reached by any of
// these (metrics/README.md says so). The zero Timings and a nil *Timings
// record nothing. It is safe for concurrent use.
type Timings struct {
	create dbconv.ClientConnectionCreateTime
	wait   dbconv.ClientConnectionWaitTime
	use    dbconv.ClientConnectionUseTime
	set    metric.MeasurementOption
	on     bool
}

// NewTimings creates the three histograms on meter for the pool src,
// labelled after o as Observe labels the conventions' instruments. It
// fails when meter refuses an instrument.
func NewTimings(meter metric.Meter, src Source, o Options) (*Timings, error) {
	o = o.forSource(src)
	t := &Timings{set: metric.WithAttributeSet(convAttrs(o)), on: true}
	var err error
	if t.create, err = dbconv.NewClientConnectionCreateTime(meter); err != nil {
		return nil, fmt.Errorf("metrics: instrument %s: %w", t.create.Name(), err)
	}
	if t.wait, err = dbconv.NewClientConnectionWaitTime(meter); err != nil {
		return nil, fmt.Errorf("metrics: instrument %s: %w", t.wait.Name(), err)
	}
	if t.use, err = dbconv.NewClientConnectionUseTime(meter); err != nil {
		return nil, fmt.Errorf("metrics: instrument %s: %w", t.use.Name(), err)
	}
	return t, nil
}

// Create records a dial that took d and opened a connection.
func (t *Timings) Create(d time.Duration) {
	if t != nil && t.on {
		t.create.Inst().Record(context.Background(), d.Seconds(), t.set)
	}
}

// Wait records an acquire that took d and got a connection.
func (t *Timings) Wait(d time.Duration) {
	if t != nil && t.on {
		t.wait.Inst().Record(context.Background(), d.Seconds(), t.set)
	}
}

// Use records a loan that lasted d.
func (t *Timings) Use(d time.Duration) {
	if t != nil && t.on {
		t.use.Inst().Record(context.Background(), d.Seconds(), t.set)
	}
}

// TimeDial returns dial timed into t's create_time: set it as a Keeper's
// Config.Dial. Only dials that return no error are recorded.
func TimeDial[T any](t *Timings, dial func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		start := time.Now()
		v, err := dial(ctx)
		if err == nil {
			t.Create(time.Since(start))
		}
		return v, err
	}
}

// Release records l's length in t's use_time and releases it.
func Release[T comparable](t *Timings, l wardpool.Loan[T]) {
	t.Use(l.Held())
	l.Release()
}
