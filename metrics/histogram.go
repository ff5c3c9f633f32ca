package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// WaitHistogram is a Prometheus histogram of how long successful acquires
// took, named acquire_duration_seconds after the Options (with the
// defaults, wardpool_acquire_duration_seconds; the Keeper's total is
// wardpool_acquire_wait_seconds_total, and a histogram named
// acquire_wait_seconds would share that counter's OpenMetrics family). It
// is both a native histogram (exponential buckets, growth factor 1.1, for
// a registry and scraper that take them) and a classic one with buckets
// from 100 µs to 10 s for those that do not. It is a prometheus.Collector: register it as such.
//
// The Keeper has no hook of its own for each acquire's wait yet, so the
// histogram is fed by the acquires timed through AcquireObserver (or by
// Observe). It is safe for concurrent use.
type WaitHistogram struct {
	h prometheus.Histogram
}

// waitBuckets are the classic buckets, in seconds.
var waitBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// NewWaitHistogram returns a WaitHistogram named and labelled after o. It
// panics when o makes a name or label prometheus rejects, as NewCollector
// does.
func NewWaitHistogram(o Options) *WaitHistogram {
	ns, sub := o.Namespace, o.Subsystem
	if ns == "" {
		ns = "wardpool"
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace:   ns,
		Subsystem:   sub,
		Name:        "acquire_duration_seconds",
		Help:        "How long successful acquires took (queued, dialing, held back), in seconds.",
		ConstLabels: prometheus.Labels(o.Labels),
		Buckets:     waitBuckets,

		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	})
	// Registering on a scratch registry surfaces a bad name or label now.
	if err := prometheus.NewRegistry().Register(h); err != nil {
		panic("metrics: " + err.Error())
	}
	return &WaitHistogram{h: h}
}

// Observe records one successful acquire that took wait.
func (w *WaitHistogram) Observe(wait time.Duration) { w.h.Observe(wait.Seconds()) }

// Describe sends the histogram's descriptor.
func (w *WaitHistogram) Describe(ch chan<- *prometheus.Desc) { w.h.Describe(ch) }

// Collect sends the histogram.
func (w *WaitHistogram) Collect(ch chan<- prometheus.Metric) { w.h.Collect(ch) }

// AcquireObserver times acquires from Source: with Tracer set, each in an
// OpenTelemetry span (see StartAcquire); with Waits set, each successful
// one's wait in the Prometheus histogram; with Timings set, in
// OpenTelemetry's db.client.connection.wait_time. Any may be nil. The zero
// AcquireObserver observes nothing. It is safe for concurrent use.
type AcquireObserver struct {
	Tracer  trace.Tracer
	Waits   *WaitHistogram
	Source  Source
	Timings *Timings
}

// Start begins timing an acquire and returns the context to acquire with
// and the function to call with the acquire's error once it returns.
//
//	ctx, end := obs.Start(ctx)
//	c, err := p.Acquire(ctx)
//	end(err)
func (o AcquireObserver) Start(ctx context.Context) (context.Context, func(error)) {
	if o.Tracer == nil && o.Waits == nil && o.Timings == nil {
		return ctx, func(error) {}
	}
	start := time.Now()
	var endSpan func(error)
	if o.Tracer != nil {
		ctx, endSpan = startSpan(ctx, o.Tracer, o.Source, start)
	}
	return ctx, func(err error) {
		if err == nil && (o.Waits != nil || o.Timings != nil) {
			d := time.Since(start)
			if o.Waits != nil {
				o.Waits.Observe(d)
			}
			o.Timings.Wait(d)
		}
		if endSpan != nil {
			endSpan(err)
		}
	}
}
