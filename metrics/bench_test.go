package metrics

import (
	"context"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// constCollector exports the same series as Collector the usual way, with
// prometheus.MustNewConstMetric per series: the baseline for the benchmarks.
type constCollector struct {
	src   Source
	descs []*prometheus.Desc
	ret   *prometheus.Desc
}

func newConstCollector(src Source) *constCollector {
	c := &constCollector{src: src}
	for _, s := range table {
		c.descs = append(c.descs, prometheus.NewDesc("wardpool_"+s.prom, s.help, nil, prometheus.Labels{"pool": "a"}))
	}
	c.ret = prometheus.NewDesc("wardpool_"+retired.prom, retired.help, []string{"reason"}, prometheus.Labels{"pool": "a"})
	return c
}

func (c *constCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.ret
}

func (c *constCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.WardStats()
	for i, s := range table {
		t := prometheus.GaugeValue
		if s.kind == counter {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[i], t, s.float(s.field.of(&st)))
	}
	by := retiredBy(&st)
	for i, r := range reasons {
		ch <- prometheus.MustNewConstMetric(c.ret, prometheus.CounterValue, float64(by[i]), r)
	}
}

// keeperSource returns a Keeper with some history, as a Source.
func keeperSource(b *testing.B) Source {
	k := newKeeper(b, clocktest.New(clockStart), pool.Limits{Size: 8, Idle: 4}, 0, nil)
	var loans []wardpool.Loan[*conn]
	for range 6 {
		l, err := k.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		loans = append(loans, l)
	}
	for _, l := range loans[:4] {
		l.Release()
	}
	b.Cleanup(func() {
		for _, l := range loans[4:] {
			l.Release()
		}
	})
	return k
}

// BenchmarkCollect measures one Collect: the collector's own cost of a
// scrape, the registry's left out.
func BenchmarkCollect(b *testing.B) {
	run := func(b *testing.B, c prometheus.Collector) {
		ch := make(chan prometheus.Metric, 64)
		b.ReportAllocs()
		for b.Loop() {
			c.Collect(ch)
			for len(ch) > 0 {
				<-ch
			}
		}
	}
	b.Run("wardpool", func(b *testing.B) {
		run(b, NewCollector(keeperSource(b), Options{Labels: map[string]string{"pool": "a"}}))
	})
	b.Run("const", func(b *testing.B) { run(b, newConstCollector(keeperSource(b))) })
	b.Run("sql.DBStats", func(b *testing.B) { run(b, dbStatsCollector(b)) })
}

// BenchmarkGather measures a whole scrape of a registry holding one
// collector: collection, checks and the protobuf families, short of the
// text encoding.
func BenchmarkGather(b *testing.B) {
	run := func(b *testing.B, c prometheus.Collector) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("wardpool", func(b *testing.B) {
		run(b, NewCollector(keeperSource(b), Options{Labels: map[string]string{"pool": "a"}}))
	})
	b.Run("const", func(b *testing.B) { run(b, newConstCollector(keeperSource(b))) })
	b.Run("sql.DBStats", func(b *testing.B) { run(b, dbStatsCollector(b)) })
}

// dbStatsCollector is client_golang's collector for database/sql's pool,
// on a mock database: the peer's way of exporting a pool.
func dbStatsCollector(b *testing.B) prometheus.Collector {
	db, _, err := sqlmock.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return collectors.NewDBStatsCollector(db, "a")
}

// BenchmarkObserve measures one OpenTelemetry collection through the SDK's
// ManualReader.
func BenchmarkObserve(b *testing.B) {
	r, m := newMeter()
	if _, err := Observe(m, keeperSource(b), Options{Labels: map[string]string{"pool": "a"}}); err != nil {
		b.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(ctx, &rm); err != nil {
			b.Fatal(err)
		}
	}
}
