package pgxtrace

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/metrics"
)

// TestTracerOnAPool: a QueryRow against a server that accepts and never
// answers times out; the tracer set on the config saw the acquire inside
// it, as a span with its outcome and the pool's figures, and the histogram
// counted nothing (no acquire succeeded). No PostgreSQL is needed.
func TestTracerOnAPool(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	waits := metrics.NewWaitHistogram(metrics.Options{})

	c, err := pgxward.ParseConfig("postgres://app@" + ln.Addr().String() + "/app?sslmode=disable&pool_max_conns=3&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	c.ConnConfig.Tracer = &Tracer{Spans: tp.Tracer("test"), Waits: waits}
	p, err := pgxward.NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var n int
	if err := p.QueryRow(ctx, "SELECT 1").Scan(&n); err == nil {
		t.Fatal("QueryRow against a silent server succeeded")
	}

	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != metrics.AcquireSpanName {
		t.Fatalf("spans %v", spans)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, a := range spans[0].Attributes() {
		got[a.Key] = a.Value
	}
	if got[metrics.AttrOutcome].AsString() != metrics.OutcomeTimeout || got[metrics.AttrMax].AsInt64() != 3 || got[metrics.AttrBusy].AsInt64() != 1 {
		t.Errorf("attributes %v", got)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(waits)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n := mfs[0].GetMetric()[0].GetHistogram().GetSampleCount(); n != 0 {
		t.Errorf("the histogram counted %d acquires, want 0", n)
	}
}

// TestZeroTracer: the zero Tracer passes contexts through and ends nothing.
func TestZeroTracer(t *testing.T) {
	var tr Tracer
	ctx := tr.TraceAcquireStart(context.Background(), nil, pgxpool.TraceAcquireStartData{})
	tr.TraceAcquireEnd(ctx, nil, pgxpool.TraceAcquireEndData{})
	if tr.TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{}) != ctx {
		t.Error("the zero Tracer changed the query's context")
	}
}

// TestTracerFeedsTimings: against PostgreSQL, a Tracer with Timings feeds
// OpenTelemetry's three pool histograms for a pgxward pool: one connect
// (create_time), and for each of two queries an acquire (wait_time) and a
// loan (use_time), each with db.client.connection.pool.name.
func TestTracerFeedsTimings(t *testing.T) {
	c, err := pgxward.ParseConfig(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	c.MaxConns = 1
	c.Name = "orders"
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	tr := &Tracer{}
	c.ConnConfig.Tracer = tr
	p, err := pgxward.NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if tr.Timings, err = metrics.NewTimings(meter, p, metrics.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		var n int
		if err := p.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			if v, _ := dp.Attributes.Value(semconv.DBClientConnectionPoolNameKey); v.AsString() != "orders" {
				t.Errorf("%s: attributes %v", m.Name, dp.Attributes)
			}
			counts[m.Name] += dp.Count
		}
	}
	want := map[string]uint64{
		dbconv.ClientConnectionCreateTime{}.Name(): 1,
		dbconv.ClientConnectionWaitTime{}.Name():   2,
		dbconv.ClientConnectionUseTime{}.Name():    2,
	}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("%s counted %d, want %d (all: %v)", name, counts[name], n, counts)
		}
	}
}

// TestREADMEServiceScrape: the README's PostgreSQL service, as wired there
// (one Options, a WaitHistogram fed by this Tracer, both registered): its
// first scrape has the acquire-wait histogram and
// wardpool_resets_total{cause="manual"} at 0, and after two queries the
// histogram has counted both acquires, so the p99 is one query away.
func TestREADMEServiceScrape(t *testing.T) {
	cfg, err := pgxward.ParseConfig(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	opts := metrics.Options{Labels: map[string]string{"pool": "main"}}
	waits := metrics.NewWaitHistogram(opts)
	cfg.ConnConfig.Tracer = &Tracer{Waits: waits}
	db, err := pgxward.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(db, opts), waits)
	scrape := func() (resets float64, hasResets bool, acquires uint64, hasHist bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "wardpool_resets_total":
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "cause" && l.GetValue() == "manual" {
							resets, hasResets = m.GetCounter().GetValue(), true
						}
					}
				}
			case "wardpool_acquire_duration_seconds":
				hasHist = true
				acquires = mf.GetMetric()[0].GetHistogram().GetSampleCount()
			}
		}
		return
	}
	if r, ok, n, h := scrape(); !ok || r != 0 || !h || n != 0 {
		t.Fatalf("first scrape: resets{cause=manual} %v (present %v), histogram present %v with %d acquires", r, ok, h, n)
	}
	for range 2 {
		var now time.Time
		if err := db.QueryRow(context.Background(), "SELECT now()").Scan(&now); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, n, _ := scrape(); n != 2 {
		t.Errorf("the histogram counted %d acquires after two queries, want 2", n)
	}
}
