package metrics

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardpool/wardpool"
)

// AcquireSpanName is the name of the span StartAcquire and Acquire open.
const AcquireSpanName = "wardpool.acquire"

// The attributes of an acquire span.
const (
	// AttrWait is how long the acquire took, in seconds (a float64).
	AttrWait = attribute.Key("wardpool.acquire.wait")
	// AttrOutcome is how it ended: one of the Outcome… values.
	AttrOutcome = attribute.Key("wardpool.acquire.outcome")
	// AttrLive, AttrIdle, AttrBusy and AttrWaiting are the pool's figures
	// as the acquire ended (live, idle, busy resources; queued callers),
	// and AttrMax its Limits.Size when the Source has Limits and it is set.
	AttrLive    = attribute.Key("wardpool.resources.live")
	AttrIdle    = attribute.Key("wardpool.resources.idle")
	AttrBusy    = attribute.Key("wardpool.resources.busy")
	AttrWaiting = attribute.Key("wardpool.acquires.waiting")
	AttrMax     = attribute.Key("wardpool.resources.max")
)

// The values of AttrOutcome.
const (
	OutcomeOK       = "ok"       // a resource was lent
	OutcomeTimeout  = "timeout"  // the context's deadline passed first
	OutcomeCanceled = "canceled" // the context was canceled first
	OutcomeShed     = "shed"     // the ward refused (wardpool.ErrShed)
	OutcomeClosed   = "closed"   // the pool was closed (wardpool.ErrClosed)
	OutcomeError    = "error"    // any other error, such as a failed dial
)

// Outcome names how an acquire that returned err ended, as AttrOutcome
// records it. The pool's own answers are looked at first: a shed or an
// acquire that gave up may also unwrap to the last dial's error, which can
// itself be a context.DeadlineExceeded (a connect timeout), and that is not
// the caller's deadline.
func Outcome(err error) string {
	var ae *wardpool.AcquireError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, wardpool.ErrShed):
		return OutcomeShed
	case errors.Is(err, wardpool.ErrClosed):
		return OutcomeClosed
	case errors.As(err, &ae):
		err = ae.Err // the caller's context's error, not the dial's
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	}
	return OutcomeError
}

// StartAcquire opens a span named AcquireSpanName on tracer, a child of
// ctx's span, for an acquire from src about to begin, and returns the
// context to acquire with and the function that ends the span with the
// acquire's error: it records AttrWait, AttrOutcome and, only when the span
// is recording, the pool's figures (one src.WardStats reading, so one lock
// acquisition per sampled acquire), and sets the span's status to Error
// with err when err is not nil. For any pool, including the drivers':
//
//	ctx, end := metrics.StartAcquire(ctx, tracer, p)
//	c, err := p.Acquire(ctx)
//	end(err)
//
// A span that is not sampled costs a clock read and the tracer's no-op.
func StartAcquire(ctx context.Context, tracer trace.Tracer, src Source) (context.Context, func(error)) {
	return startSpan(ctx, tracer, src, time.Now())
}

// startSpan is StartAcquire for an acquire that began at start.
func startSpan(ctx context.Context, tracer trace.Tracer, src Source, start time.Time) (context.Context, func(error)) {
	ctx, span := tracer.Start(ctx, AcquireSpanName, trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, func(err error) {
		attrs := []attribute.KeyValue{
			AttrWait.Float64(time.Since(start).Seconds()),
			AttrOutcome.String(Outcome(err)),
		}
		if span.IsRecording() && src != nil {
			s := src.WardStats()
			attrs = append(attrs, AttrLive.Int(s.Live), AttrIdle.Int(s.Idle),
				AttrBusy.Int(s.Busy), AttrWaiting.Int(s.Waiting))
			if l, ok := src.(limited); ok && l.Limits().Size > 0 {
				attrs = append(attrs, AttrMax.Int(l.Limits().Size))
			}
		}
		span.SetAttributes(attrs...)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// Acquire is k.Acquire inside an acquire span (see StartAcquire).
func Acquire[T comparable](ctx context.Context, tracer trace.Tracer, k *wardpool.Keeper[T]) (wardpool.Loan[T], error) {
	ctx, end := StartAcquire(ctx, tracer, k)
	l, err := k.Acquire(ctx)
	end(err)
	return l, err
}
