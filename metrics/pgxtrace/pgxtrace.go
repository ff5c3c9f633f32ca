// Package pgxtrace times every acquire of a pgxward pool (or a pgxpool) —
// Query's, QueryRow's and Begin's included, which the program never sees —
// with the metrics package: an OpenTelemetry span around each and the
// wait histogram. It is a pgx tracer: set it as the pool's
// ConnConfig.Tracer, and the pool calls it as pgxpool calls its tracers.
//
//	waits := metrics.NewWaitHistogram(metrics.Options{Labels: map[string]string{"pool": "main"}})
//	prometheus.MustRegister(waits)
//	cfg.ConnConfig.Tracer = &pgxtrace.Tracer{Spans: otel.Tracer("app"), Waits: waits}
//
// It lives apart from package metrics so that programs that export a pool
// without pgx do not link pgx.
package pgxtrace

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/metrics"
)

// Tracer is a pgx.QueryTracer, pgxpool.AcquireTracer and
// pgxpool.ReleaseTracer. Each acquire is timed as metrics.AcquireObserver
// times it: with Spans set, in a span named metrics.AcquireSpanName with
// its wait, outcome and (for a pgxward pool) the pool's figures; with Waits
// set, its wait in the histogram when it succeeds. Query, when set,
// receives the query tracing calls (pgx allows one tracer per connection).
// The zero Tracer does nothing. A Tracer is safe for concurrent use.
//
// With Timings set it feeds OpenTelemetry's three pool histograms: each
// successful acquire's wait (db.client.connection.wait_time), each
// connection pgx opened (create_time, as a pgx.ConnectTracer), and each
// loan from its acquire to its release (use_time; a connection hijacked
// from the pool is not counted).
type Tracer struct {
	Spans   trace.Tracer
	Waits   *metrics.WaitHistogram
	Timings *metrics.Timings
	Query   pgx.QueryTracer

	lent sync.Map // *pgx.Conn → time.Time its loan began, with Timings
}

var (
	_ pgx.QueryTracer       = (*Tracer)(nil)
	_ pgxpool.AcquireTracer = (*Tracer)(nil)
	_ pgxpool.ReleaseTracer = (*Tracer)(nil)
	_ pgx.ConnectTracer     = (*Tracer)(nil)
)

// endKey keys the function that ends an acquire's timing in its context.
type endKey struct{}

// TraceAcquireStart begins timing an acquire.
func (t *Tracer) TraceAcquireStart(ctx context.Context, pp *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	obs := metrics.AcquireObserver{Tracer: t.Spans, Waits: t.Waits, Timings: t.Timings}
	if p := pgxward.FromPgxpool(pp); p != nil {
		obs.Source = p
	}
	ctx, end := obs.Start(ctx)
	return context.WithValue(ctx, endKey{}, end)
}

// TraceAcquireEnd ends the timing TraceAcquireStart began with the
// acquire's error.
func (t *Tracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	if end, ok := ctx.Value(endKey{}).(func(error)); ok {
		end(data.Err)
	}
	if t.Timings != nil && data.Err == nil && data.Conn != nil {
		t.lent.Store(data.Conn, time.Now())
	}
}

// TraceRelease records the loan's length in Timings' use_time.
func (t *Tracer) TraceRelease(_ *pgxpool.Pool, data pgxpool.TraceReleaseData) {
	if t.Timings == nil || data.Conn == nil {
		return
	}
	if start, ok := t.lent.LoadAndDelete(data.Conn); ok {
		t.Timings.Use(time.Since(start.(time.Time)))
	}
}

// connectKey keys the start of a connect in its context.
type connectKey struct{}

// TraceConnectStart notes when pgx began opening a connection.
func (t *Tracer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	if t.Timings == nil {
		return ctx
	}
	return context.WithValue(ctx, connectKey{}, time.Now())
}

// TraceConnectEnd records a connection opened in Timings' create_time.
func (t *Tracer) TraceConnectEnd(ctx context.Context, data pgx.TraceConnectEndData) {
	if start, ok := ctx.Value(connectKey{}).(time.Time); ok && data.Err == nil {
		t.Timings.Create(time.Since(start))
	}
}

// TraceQueryStart passes the call to Query, when set.
func (t *Tracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.Query != nil {
		return t.Query.TraceQueryStart(ctx, conn, data)
	}
	return ctx
}

// TraceQueryEnd passes the call to Query, when set.
func (t *Tracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if t.Query != nil {
		t.Query.TraceQueryEnd(ctx, conn, data)
	}
}
