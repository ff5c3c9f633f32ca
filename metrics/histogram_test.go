package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

func TestWaitHistogram(t *testing.T) {
	w := NewWaitHistogram(Options{Labels: map[string]string{"pool": "orders"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(w)
	for _, d := range []time.Duration{50 * time.Microsecond, 3 * time.Millisecond, 2 * time.Second} {
		w.Observe(d)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "wardpool_acquire_duration_seconds" {
		t.Fatalf("families %v", mfs)
	}
	h := mfs[0].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() < 2 || len(h.GetBucket()) != len(waitBuckets) {
		t.Errorf("classic part: count %d, sum %v, %d buckets", h.GetSampleCount(), h.GetSampleSum(), len(h.GetBucket()))
	}
	if h.Schema == nil || len(h.GetPositiveSpan()) == 0 {
		t.Errorf("no native part: schema %v, spans %v", h.Schema, h.GetPositiveSpan())
	}
	if got := h.GetBucket()[0].GetCumulativeCount(); got != 1 { // 50 µs <= 100 µs
		t.Errorf("first bucket holds %d, want 1", got)
	}
	if lp := mfs[0].GetMetric()[0].GetLabel(); len(lp) != 1 || lp[0].GetValue() != "orders" {
		t.Errorf("labels %v", lp)
	}
}

func TestWaitHistogramBadName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a label named le did not panic")
		}
	}()
	NewWaitHistogram(Options{Labels: map[string]string{"le": "x"}}) // the buckets' own label
}

// TestAcquireObserver: the histogram counts successful acquires only, the
// tracer gets a span for each, and the zero observer does nothing.
func TestAcquireObserver(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	k := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 1}, 0, nil)
	w := NewWaitHistogram(Options{})
	obs := AcquireObserver{Tracer: tp.Tracer("test"), Waits: w, Source: k}

	ctx, end := obs.Start(context.Background())
	l, err := k.Acquire(ctx)
	end(err)
	if err != nil {
		t.Fatal(err)
	}
	_, end = obs.Start(context.Background())
	end(errors.New("dial failed"))
	l.Release()

	reg := prometheus.NewRegistry()
	reg.MustRegister(w)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n := mfs[0].GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("histogram counted %d acquires, want the 1 that succeeded", n)
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
	ctx0 := context.Background()
	got, end0 := AcquireObserver{}.Start(ctx0)
	end0(nil)
	if got != ctx0 {
		t.Error("the zero observer changed the context")
	}
}
