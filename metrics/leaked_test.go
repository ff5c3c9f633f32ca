package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdk "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardpool/wardpool"
)

// leakySource is a Source with a Leaked method, as the drivers' pools are.
type leakySource struct {
	fixed
	leaked int
}

func (l *leakySource) Leaked() int { return l.leaked }

// TestLeakedGauge: a Source with Leaked exports the leaked-now gauge, read
// at each scrape, to Prometheus and OpenTelemetry; one without does not.
func TestLeakedGauge(t *testing.T) {
	src := &leakySource{leaked: 2}
	src.set(wardpool.Stats{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src, Options{}))
	want := "# HELP wardpool_leaked_loans " + leaked.help + "\n# TYPE wardpool_leaked_loans gauge\nwardpool_leaked_loans 2\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "wardpool_leaked_loans"); err != nil {
		t.Error(err)
	}
	src.leaked = 0
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(want, " 2\n", " 0\n", 1)), "wardpool_leaked_loans"); err != nil {
		t.Error(err)
	}

	plain := prometheus.NewRegistry()
	plain.MustRegister(NewCollector(&src.fixed, Options{}))
	if n, err := testutil.GatherAndCount(plain, "wardpool_leaked_loans"); err != nil || n != 0 {
		t.Errorf("a Source without Leaked exported %d leaked series (%v)", n, err)
	}

	rd := sdk.NewManualReader()
	mp := sdk.NewMeterProvider(sdk.WithReader(rd))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	src.leaked = 3
	if _, err := Observe(mp.Meter("test"), src, Options{}); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "wardpool.loans.leaked" {
			found = true
			if v := m.Data.(metricdata.Sum[int64]).DataPoints[0].Value; v != 3 {
				t.Errorf("wardpool.loans.leaked = %d, want 3", v)
			}
		}
	}
	if !found {
		t.Error("no wardpool.loans.leaked")
	}
}
