package metrics

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdk "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// point is one observed value, flattened for comparison.
type point struct {
	name, unit string
	kind       string // "counter" (monotonic sum), "updown" (non-monotonic sum)
	attrs      string // sorted k=v pairs
	value      string
}

func (p point) String() string {
	return fmt.Sprintf("%s[%s] %s {%s} = %s", p.name, p.unit, p.kind, p.attrs, p.value)
}

// collect reads every data point r holds.
func collect(t *testing.T, r *sdk.ManualReader) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{m.Name, m.Unit, sumKind(d.IsMonotonic), attrString(dp.Attributes), fmt.Sprint(dp.Value)})
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{m.Name, m.Unit, sumKind(d.IsMonotonic), attrString(dp.Attributes), fmt.Sprint(dp.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					out = append(out, point{m.Name, m.Unit, "gauge", attrString(dp.Attributes), fmt.Sprint(dp.Value)})
				}
			default:
				t.Errorf("%s: unexpected aggregation %T", m.Name, m.Data)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func sumKind(monotonic bool) string {
	if monotonic {
		return "counter"
	}
	return "updown"
}

func attrString(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(parts, ",")
}

// wantPoints lists what Observe must report for st, written out here
// rather than derived from the package's table, and the conventions'
// instruments named, united and attributed after OpenTelemetry's
// semantic-conventions package, not strings of ours. attrs are the labels
// (sorted "k=v" joined by ","); runtime false leaves out the Keeper's own
// series.
func wantPoints(prefix, attrs string, st wardpool.Stats, runtime bool) []point {
	with := func(extra string) string {
		if attrs == "" {
			return extra
		}
		if extra == "" {
			return attrs
		}
		// Both sets here are small; keep the order attribute.Set gives.
		all := append(strings.Split(attrs, ","), extra)
		sort.Strings(all)
		return strings.Join(all, ",")
	}
	p := func(name, unit, kind string, v any) point {
		return point{prefix + "." + name, unit, kind, with(""), fmt.Sprint(v)}
	}
	r := func(reason string, v uint64) point {
		return point{prefix + ".retired", "{resource}", "counter", with("reason=" + reason), fmt.Sprint(v)}
	}
	stalled, holding := 0, 0
	if st.Holding {
		holding = 1
	}
	if st.Stalled {
		stalled = 1
	}
	count := dbconv.ClientConnectionCountObservable{}
	state := string(semconv.DBClientConnectionStateKey) + "="
	w := []point{
		convPoint(prefix, attrs, count.Name(), count.Unit(), "updown", state+string(dbconv.ClientConnectionStateIdle), st.Idle),
		convPoint(prefix, attrs, count.Name(), count.Unit(), "updown", state+string(dbconv.ClientConnectionStateUsed), st.Busy),
		p("made", "{resource}", "counter", st.Made),
		p("make.failures", "{resource}", "counter", st.Failed),
		p("loans", "{loan}", "counter", st.Loans),
		p("loans.reused", "{loan}", "counter", st.Reused),
		p("dropped", "{resource}", "counter", st.Dropped),
		p("waited", "{acquire}", "counter", st.Waited),
		p("deferred", "{acquire}", "counter", st.Deferred),
		p("shed", "{acquire}", "counter", st.Shed),
		r("idle", st.IdleRetired),
		r("life", st.LifeRetired),
		r("other", st.Retired-st.IdleRetired-st.LifeRetired),
	}
	if runtime {
		pending, timeouts := dbconv.ClientConnectionPendingRequestsObservable{}, dbconv.ClientConnectionTimeoutsObservable{}
		w = append(w,
			convPoint(prefix, attrs, pending.Name(), pending.Unit(), "updown", "", st.Waiting),
			convPoint(prefix, attrs, timeouts.Name(), timeouts.Unit(), "counter", "", st.Canceled),
			p("resources.dialing", "{resource}", "updown", st.Dialing),
			p("acquires", "{acquire}", "counter", st.Acquires),
			p("acquire.wait", "s", "counter", st.AcquireWait.Seconds()),
			p("acquires.empty", "{acquire}", "counter", st.EmptyAcquires),
			p("checks", "{check}", "counter", st.Checks),
			p("check.failures", "{check}", "counter", st.CheckFailures),
			p("leaks", "{loan}", "counter", st.Leaks),
			p("double_releases", "{call}", "counter", st.DoubleReleases),
			p("panics", "{panic}", "counter", st.Panics),
			p("resources.closing", "{resource}", "updown", st.Closing),
			p("closed", "{resource}", "counter", st.Closed),
			p("dial.timeouts", "{dial}", "counter", st.DialTimeouts),
			p("acquire.timeouts", "{acquire}", "counter", st.AcquireTimeouts),
			p("stalls", "{stall}", "counter", st.Stalls),
			p("resources.rotating", "{resource}", "updown", st.Rotating),
			p("holding", "1", "updown", holding),
			p("stalled", "1", "updown", stalled),
			point{prefix + ".resets", "{reset}", "counter", with("cause=manual"), "0"}, // known before any reset
			p("breaker.refusal", "1", "gauge", st.Refusal),
		)
	}
	sort.Slice(w, func(i, j int) bool { return w[i].String() < w[j].String() })
	return w
}

// convPoint is a point of one of the conventions' instruments for a pool
// exported under prefix with labels attrs: the pool label becomes
// db.client.connection.pool.name (the prefix without one), the rest stay,
// and extra ("k=v") is added.
func convPoint(prefix, attrs, name, unit, kind, extra string, v any) point {
	poolName := prefix
	var all []string
	for _, kv := range strings.Split(attrs, ",") {
		switch {
		case kv == "":
		case strings.HasPrefix(kv, PoolLabel+"="):
			poolName = strings.TrimPrefix(kv, PoolLabel+"=")
		default:
			all = append(all, kv)
		}
	}
	all = append(all, string(semconv.DBClientConnectionPoolNameKey)+"="+poolName)
	if extra != "" {
		all = append(all, extra)
	}
	sort.Strings(all)
	return point{name, unit, kind, strings.Join(all, ","), fmt.Sprint(v)}
}

func diffPoints(t *testing.T, got, want []point) {
	t.Helper()
	g, w := make([]string, len(got)), make([]string, len(want))
	for i := range got {
		g[i] = got[i].String()
	}
	for i := range want {
		w[i] = want[i].String()
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func newMeter() (*sdk.ManualReader, metric.Meter) {
	r := sdk.NewManualReader()
	return r, sdk.NewMeterProvider(sdk.WithReader(r)).Meter("test")
}

func TestObserveEveryFigure(t *testing.T) {
	st := sampleStats()
	src := &fixed{st: st}
	r, m := newMeter()
	if _, err := Observe(m, src, Options{}); err != nil {
		t.Fatal(err)
	}
	diffPoints(t, collect(t, r), wantPoints("wardpool", "", st, true))
	if n := src.reads.Load(); n != 1 {
		t.Errorf("one collection read the source %d times, want 1", n)
	}
	// The next collection reads afresh.
	st.Made, st.Idle, st.AcquireWait = 500, 1, 3*time.Second
	src.set(st)
	diffPoints(t, collect(t, r), wantPoints("wardpool", "", st, true))
	if n := src.reads.Load(); n != 2 {
		t.Errorf("two collections read the source %d times, want 2", n)
	}
}

func TestObserveNamesAndLabels(t *testing.T) {
	st := sampleStats()
	r, m := newMeter()
	o := Options{Namespace: "shop", Subsystem: "orders", Labels: map[string]string{"pool": "primary", "az": "b"}}
	if _, err := Observe(m, &fixed{st: st}, o); err != nil {
		t.Fatal(err)
	}
	diffPoints(t, collect(t, r), wantPoints("shop.orders", "az=b,pool=primary", st, true))
}

func TestObserveLimits(t *testing.T) {
	st := sampleStats()
	r, m := newMeter()
	src := fixedLimits{&fixed{st: st}, pool.Limits{Size: 8, Idle: 3}}
	if _, err := Observe(m, src, Options{Labels: map[string]string{"pool": "a"}}); err != nil {
		t.Fatal(err)
	}
	mx, idleMax := dbconv.ClientConnectionMaxObservable{}, dbconv.ClientConnectionIdleMaxObservable{}
	want := append(wantPoints("wardpool", "pool=a", st, true),
		convPoint("wardpool", "pool=a", mx.Name(), mx.Unit(), "updown", "", 8),
		convPoint("wardpool", "pool=a", idleMax.Name(), idleMax.Unit(), "updown", "", 3))
	sort.Slice(want, func(i, j int) bool { return want[i].String() < want[j].String() })
	diffPoints(t, collect(t, r), want)
}

func TestObserveFromBooks(t *testing.T) {
	b := sampleStats().Books
	r, m := newMeter()
	if _, err := Observe(m, FromBooks(func() pool.Books { return b }), Options{}); err != nil {
		t.Fatal(err)
	}
	diffPoints(t, collect(t, r), wantPoints("wardpool", "", wardpool.Stats{Books: b}, false))
}

func TestObserveUnregister(t *testing.T) {
	src := &fixed{st: sampleStats()}
	r, m := newMeter()
	reg, err := Observe(m, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(collect(t, r)) == 0 {
		t.Fatal("nothing observed while registered")
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	reads := src.reads.Load()
	if got := collect(t, r); len(got) != 0 {
		t.Errorf("after Unregister %d points were observed", len(got))
	}
	if src.reads.Load() != reads {
		t.Error("the source was read after Unregister")
	}
}

func TestObserveKeeper(t *testing.T) {
	k := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 2}, 0, nil)
	l, err := k.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	r, m := newMeter()
	if _, err := Observe(m, k, Options{}); err != nil {
		t.Fatal(err)
	}
	st := k.Stats()
	if st.Busy != 1 || st.Made != 1 || st.Acquires != 1 {
		t.Fatalf("the scenario did not go as planned: %+v", st)
	}
	// A bare Keeper is named too (Config.Name, "wardpool-N" by default),
	// and that is its default pool label.
	label := "pool=" + k.Name()
	// Limits{Size: 2}: idle.max is the Size, as Idle 0 lets every
	// connection sit idle; a bare Keeper has no MinIdle method, so no
	// idle.min.
	mx, idleMax := dbconv.ClientConnectionMaxObservable{}, dbconv.ClientConnectionIdleMaxObservable{}
	want := append(wantPoints("wardpool", label, st, true),
		convPoint("wardpool", label, mx.Name(), mx.Unit(), "updown", "", 2),
		convPoint("wardpool", label, idleMax.Name(), idleMax.Unit(), "updown", "", 2),
		point{"wardpool.loans.leaked", "{loan}", "updown", label, "0"})
	sort.Slice(want, func(i, j int) bool { return want[i].String() < want[j].String() })
	diffPoints(t, collect(t, r), want)
}

// refusing is a Meter that refuses the instrument named bad, or the
// callback when bad is "callback".
type refusing struct {
	noop.Meter
	bad string
}

var errRefused = errors.New("refused")

func (m refusing) Int64ObservableCounter(name string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	if name == m.bad {
		return nil, errRefused
	}
	return m.Meter.Int64ObservableCounter(name, o...)
}

func (m refusing) Float64ObservableCounter(name string, o ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	if name == m.bad {
		return nil, errRefused
	}
	return m.Meter.Float64ObservableCounter(name, o...)
}

func (m refusing) Int64ObservableUpDownCounter(name string, o ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	if name == m.bad {
		return nil, errRefused
	}
	return m.Meter.Int64ObservableUpDownCounter(name, o...)
}

func (m refusing) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if m.bad == "callback" {
		return nil, errRefused
	}
	return m.Meter.RegisterCallback(f, insts...)
}

func TestObserveErrors(t *testing.T) {
	src := fixedLimits{&fixed{}, pool.Limits{Size: 1}}
	for _, bad := range []string{"wardpool.made", "wardpool.acquire.wait", dbconv.ClientConnectionCountObservable{}.Name(), "wardpool.retired",
		dbconv.ClientConnectionMaxObservable{}.Name(), dbconv.ClientConnectionTimeoutsObservable{}.Name(), "callback"} {
		reg, err := Observe(refusing{bad: bad}, src, Options{})
		if !errors.Is(err, errRefused) || reg != nil {
			t.Errorf("refusing %s: Observe = %v, %v; want nil and the meter's error", bad, reg, err)
		}
		if err != nil && bad != "callback" && !strings.Contains(err.Error(), bad) {
			t.Errorf("refusing %s: the error %q does not name the instrument", bad, err)
		}
	}
	if _, err := Observe(refusing{}, src, Options{}); err != nil {
		t.Errorf("a meter refusing nothing: %v", err)
	}
	// The SDK refuses a name with a space (and hands back a working
	// instrument anyway); Observe passes the refusal on.
	_, m := newMeter()
	if reg, err := Observe(m, src, Options{Namespace: "my pool"}); err == nil || reg != nil {
		t.Errorf("Observe with an invalid name = %v, %v; want an error", reg, err)
	}
	// A reason label would be overwritten on retired.
	if reg, err := Observe(refusing{}, src, Options{Labels: map[string]string{"reason": "x"}}); err == nil || reg != nil {
		t.Errorf("Observe with a reason label = %v, %v; want an error", reg, err)
	}
}

func TestObserveCallbackAllocations(t *testing.T) {
	// The callback itself: one reading, no allocation. The SDK's own
	// bookkeeping (aggregation, export) is measured by the benchmark.
	_, m := newMeter()
	var cb metric.Callback
	capture := capturing{Meter: m, cb: &cb}
	if _, err := Observe(capture, &fixed{st: sampleStats()}, Options{Labels: map[string]string{"pool": "a"}}); err != nil {
		t.Fatal(err)
	}
	var obs countingObserver
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() { _ = cb(ctx, &obs) })
	if allocs != 0 {
		t.Errorf("the callback allocated %v times per collection, want 0", allocs)
	}
	// idle and used, pending_requests and timeouts, resets{cause=manual}:
	// five more.
	if want := 101 * (len(otelChosen(&fixed{})) + len(reasons) + 5); obs.n != want {
		t.Errorf("the callback made %d observations in 101 runs, want %d", obs.n, want)
	}
}

// capturing is a Meter that keeps the callback registered with it.
type capturing struct {
	metric.Meter
	cb *metric.Callback
}

func (m capturing) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	*m.cb = f
	return m.Meter.RegisterCallback(f, insts...)
}

// countingObserver counts observations.
type countingObserver struct {
	noop.Observer
	n int
}

func (o *countingObserver) ObserveInt64(metric.Int64Observable, int64, ...metric.ObserveOption) {
	o.n++
}

func (o *countingObserver) ObserveFloat64(metric.Float64Observable, float64, ...metric.ObserveOption) {
	o.n++
}
