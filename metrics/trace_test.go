package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

func TestAcquireSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tracer := tp.Tracer("test")

	clk := clocktest.New(clockStart)
	k := newKeeper(t, clk, pool.Limits{Size: 1}, 0, nil)
	l, err := Acquire(context.Background(), tracer, k)
	if err != nil {
		t.Fatal(err)
	}
	// The pool is full: the next acquire times out.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, tracer, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire: %v, want DeadlineExceeded", err)
	}
	l.Release()

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	want := []struct {
		outcome string
		busy    int64
		status  codes.Code
	}{{OutcomeOK, 1, codes.Unset}, {OutcomeTimeout, 1, codes.Error}}
	for i, s := range spans {
		if s.Name() != AcquireSpanName {
			t.Errorf("span %d named %q", i, s.Name())
		}
		got := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			got[a.Key] = a.Value
		}
		if got[AttrOutcome].AsString() != want[i].outcome || got[AttrBusy].AsInt64() != want[i].busy ||
			got[AttrMax].AsInt64() != 1 || got[AttrLive].AsInt64() != 1 || s.Status().Code != want[i].status {
			t.Errorf("span %d: status %v, attributes %v", i, s.Status(), got)
		}
		if _, ok := got[AttrWait]; !ok {
			t.Errorf("span %d has no %s", i, AttrWait)
		}
	}
}

func TestOutcome(t *testing.T) {
	for err, want := range map[error]string{
		nil:                      OutcomeOK,
		context.DeadlineExceeded: OutcomeTimeout,
		context.Canceled:         OutcomeCanceled,
		&wardpool.ShedError{Guard: ward.GuardBreaker}: OutcomeShed,
		wardpool.ErrClosed:                            OutcomeClosed,
		errors.New("dial: no"):                        OutcomeError,
		// A shed whose cause is a dial that timed out is a shed.
		&wardpool.ShedError{Guard: ward.GuardBreaker, Cause: fmt.Errorf("connect: %w", context.DeadlineExceeded)}: OutcomeShed,
		// A canceled acquire whose last dial timed out was canceled.
		&wardpool.AcquireError{Err: context.Canceled, LastDialError: fmt.Errorf("connect: %w", context.DeadlineExceeded)}: OutcomeCanceled,
	} {
		if got := Outcome(err); got != want {
			t.Errorf("Outcome(%v) = %q, want %q", err, got, want)
		}
	}
}
