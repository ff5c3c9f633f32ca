package metrics

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdk "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// convSource is a Source as a driver's pool is: limits, a MinIdle and a
// name.
type convSource struct {
	fixedLimits
	minIdle int
	name    string
}

func (s convSource) MinIdle() int { return s.minIdle }
func (s convSource) Name() string { return s.name }

// convMetric is one instrument as the SDK exported it.
type convMetric struct {
	unit, kind string
	points     map[string]string // attributes ("k=v,…") → value (a histogram's: count/sum)
}

// collectConv reads every metric r holds, histograms included, by name.
func collectConv(t *testing.T, r *sdk.ManualReader) map[string]convMetric {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]convMetric{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			c := convMetric{unit: m.Unit, points: map[string]string{}}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				c.kind = sumKind(d.IsMonotonic)
				for _, dp := range d.DataPoints {
					c.points[attrString(dp.Attributes)] = attribute.Int64Value(dp.Value).String()
				}
			case metricdata.Sum[float64]:
				c.kind = sumKind(d.IsMonotonic)
			case metricdata.Gauge[float64]:
				c.kind = "gauge"
			case metricdata.Histogram[float64]:
				c.kind = "histogram"
				for _, dp := range d.DataPoints {
					c.points[attrString(dp.Attributes)] = attribute.Int64Value(int64(dp.Count)).String() + "/" + attribute.Float64Value(dp.Sum).String()
				}
			default:
				t.Fatalf("%s: unexpected aggregation %T", m.Name, m.Data)
			}
			out[m.Name] = c
		}
	}
	return out
}

// TestObserveFollowsTheConventions: Observe and NewTimings emit
// OpenTelemetry's db.client.connection.* instruments, read back through the
// SDK's ManualReader, with the names, units, kinds, attribute keys and
// state values of OpenTelemetry's semantic-conventions package (semconv
// v1.43.0 and its dbconv), and wardpool.* no longer carries what they
// name.
func TestObserveFollowsTheConventions(t *testing.T) {
	st := sampleStats()
	src := convSource{fixedLimits{&fixed{st: st}, pool.Limits{Size: 8, Idle: 3}}, 2, "orders"}
	r := sdk.NewManualReader()
	meter := sdk.NewMeterProvider(sdk.WithReader(r)).Meter("test")
	o := Options{Labels: map[string]string{"az": "b"}}
	if _, err := Observe(meter, src, o); err != nil {
		t.Fatal(err)
	}
	tm, err := NewTimings(meter, src, o)
	if err != nil {
		t.Fatal(err)
	}
	tm.Create(10 * time.Millisecond)
	tm.Wait(250 * time.Millisecond)
	tm.Wait(750 * time.Millisecond)
	tm.Use(2 * time.Second)
	got := collectConv(t, r)

	attrs := func(extra ...attribute.KeyValue) string {
		kvs := append([]attribute.KeyValue{semconv.DBClientConnectionPoolName("orders"), attribute.String("az", "b")}, extra...)
		return attrString(attribute.NewSet(kvs...))
	}
	base := attrs()
	type want struct {
		name, unit, kind string
		points           map[string]string
	}
	count := dbconv.ClientConnectionCountObservable{}
	mx, idleMax, idleMin := dbconv.ClientConnectionMaxObservable{}, dbconv.ClientConnectionIdleMaxObservable{}, dbconv.ClientConnectionIdleMinObservable{}
	pending, timeouts := dbconv.ClientConnectionPendingRequestsObservable{}, dbconv.ClientConnectionTimeoutsObservable{}
	create, wait, use := dbconv.ClientConnectionCreateTime{}, dbconv.ClientConnectionWaitTime{}, dbconv.ClientConnectionUseTime{}
	for _, w := range []want{
		{count.Name(), count.Unit(), "updown", map[string]string{
			attrs(semconv.DBClientConnectionStateIdle): "4",
			attrs(semconv.DBClientConnectionStateUsed): "5",
		}},
		{mx.Name(), mx.Unit(), "updown", map[string]string{base: "8"}},
		{idleMax.Name(), idleMax.Unit(), "updown", map[string]string{base: "3"}},
		{idleMin.Name(), idleMin.Unit(), "updown", map[string]string{base: "2"}},
		{pending.Name(), pending.Unit(), "updown", map[string]string{base: "8"}},
		{timeouts.Name(), timeouts.Unit(), "counter", map[string]string{base: "4"}},
		{create.Name(), create.Unit(), "histogram", map[string]string{base: "1/0.01"}},
		{wait.Name(), wait.Unit(), "histogram", map[string]string{base: "2/1"}},
		{use.Name(), use.Unit(), "histogram", map[string]string{base: "1/2"}},
	} {
		g, ok := got[w.name]
		if !ok {
			t.Errorf("%s was not exported", w.name)
			continue
		}
		if g.unit != w.unit || g.kind != w.kind {
			t.Errorf("%s: unit %q, kind %s; the conventions say %q, %s", w.name, g.unit, g.kind, w.unit, w.kind)
		}
		if len(g.points) != len(w.points) {
			t.Errorf("%s: points %v, want %v", w.name, g.points, w.points)
		}
		for a, v := range w.points {
			if g.points[a] != v {
				t.Errorf("%s{%s} = %q, want %q (points %v)", w.name, a, g.points[a], v, g.points)
			}
		}
	}
	// The histograms are in seconds, as the conventions say.
	for _, u := range []string{create.Unit(), wait.Unit(), use.Unit()} {
		if u != "s" {
			t.Errorf("a conventions histogram's unit is %q", u)
		}
	}
	// What the conventions name is not exported twice under wardpool.*;
	// what they do not name is.
	for _, gone := range []string{"wardpool.resources.live", "wardpool.resources.idle", "wardpool.resources.busy",
		"wardpool.acquires.waiting", "wardpool.acquires.canceled", "wardpool.resources.max", "wardpool.resources.idle.max"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s is still exported beside the conventions' instrument", gone)
		}
	}
	var kept []string
	for name := range got {
		if strings.HasPrefix(name, "wardpool.") {
			kept = append(kept, name)
		}
	}
	sort.Strings(kept)
	for _, want := range []string{"wardpool.made", "wardpool.shed", "wardpool.breaker.refusal", "wardpool.retired", "wardpool.leaks"} {
		if i := sort.SearchStrings(kept, want); i == len(kept) || kept[i] != want {
			t.Errorf("%s is missing; wardpool.* exported: %v", want, kept)
		}
	}
}

// TestTimingsOnAKeeper: TimeDial, AcquireObserver and Release feed a
// Keeper's three histograms; a nil *Timings records nothing and does not
// panic.
func TestTimingsOnAKeeper(t *testing.T) {
	clk := clocktest.New(clockStart)
	r := sdk.NewManualReader()
	meter := sdk.NewMeterProvider(sdk.WithReader(r)).Meter("test")
	var tm *Timings
	tm.Wait(time.Second) // nil: nothing
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Name:   "jobs",
		Limits: pool.Limits{Size: 2},
		Dial:   TimeDial(tm, func(context.Context) (*conn, error) { return &conn{}, nil }), // nil Timings: untimed
		Close:  func(*conn) error { return nil },
		Clock:  clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	if tm, err = NewTimings(meter, k, Options{}); err != nil {
		t.Fatal(err)
	}
	k2, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Name:   "jobs",
		Limits: pool.Limits{Size: 2},
		Dial:   TimeDial(tm, func(context.Context) (*conn, error) { return &conn{}, nil }),
		Close:  func(*conn) error { return nil },
		Clock:  clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close(context.Background())
	obs := AcquireObserver{Source: k2, Timings: tm}
	ctx, end := obs.Start(context.Background())
	l, err := k2.Acquire(ctx)
	end(err)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second) // the loan's length, on the Keeper's clock
	Release(tm, l)
	got := collectConv(t, r)
	base := attrString(attribute.NewSet(semconv.DBClientConnectionPoolName("jobs")))
	for _, name := range []string{dbconv.ClientConnectionCreateTime{}.Name(), dbconv.ClientConnectionWaitTime{}.Name()} {
		if v := got[name].points[base]; !strings.HasPrefix(v, "1/") {
			t.Errorf("%s{%s} = %q, want one measurement (got %v)", name, base, v, got[name].points)
		}
	}
	if v := got[dbconv.ClientConnectionUseTime{}.Name()].points[base]; v != "1/3" {
		t.Errorf("use_time = %q, want one loan of 3 s", v)
	}
}
