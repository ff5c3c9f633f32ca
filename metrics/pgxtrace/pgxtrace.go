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
type Tracer struct {
	Spans trace.Tracer
	Waits *metrics.WaitHistogram
	Query pgx.QueryTracer
}

var (
	_ pgx.QueryTracer       = (*Tracer)(nil)
	_ pgxpool.AcquireTracer = (*Tracer)(nil)
	_ pgxpool.ReleaseTracer = (*Tracer)(nil)
)

// endKey keys the function that ends an acquire's timing in its context.
type endKey struct{}

// TraceAcquireStart begins timing an acquire.
func (t *Tracer) TraceAcquireStart(ctx context.Context, pp *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	obs := metrics.AcquireObserver{Tracer: t.Spans, Waits: t.Waits}
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
}

// TraceRelease does nothing: the loan's length is the leak watch's.
func (t *Tracer) TraceRelease(*pgxpool.Pool, pgxpool.TraceReleaseData) {}

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
