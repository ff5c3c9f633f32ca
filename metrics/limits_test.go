package metrics

import (
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"

	"testing"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestLimitsChangeShows applies new limits to a running Keeper
// (Keeper.SetLimits) and reads both exporters again: the limit series
// follow at the next scrape, and a limit set to zero (none) leaves its
// series out.
func TestLimitsChangeShows(t *testing.T) {
	k := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 4, Idle: 2}, 0, nil)
	c := NewCollector(k, Options{})
	r, m := newMeter()
	if _, err := Observe(m, k, Options{}); err != nil {
		t.Fatal(err)
	}
	read := func() (prom map[string]float64, otel map[string]string) {
		prom = gatherValues(t, c)
		otel = map[string]string{}
		for _, p := range collect(t, r) {
			otel[p.name] = p.value
		}
		return prom, otel
	}
	prom, otel := read()
	if prom["wardpool_max_resources"] != 4 || prom["wardpool_max_idle_resources"] != 2 ||
		otel[dbconv.ClientConnectionMaxObservable{}.Name()] != "4" || otel[dbconv.ClientConnectionIdleMaxObservable{}.Name()] != "2" {
		t.Fatalf("before: prometheus %v, otel %v", prom, otel)
	}
	if err := k.SetLimits(pool.Limits{Size: 9}); err != nil {
		t.Fatal(err)
	}
	prom, otel = read()
	if prom["wardpool_max_resources"] != 9 || otel[dbconv.ClientConnectionMaxObservable{}.Name()] != "9" {
		t.Fatalf("after SetLimits(Size 9): prometheus max %v, otel %v", prom["wardpool_max_resources"], otel)
	}
	if _, ok := prom["wardpool_max_idle_resources"]; ok {
		t.Fatal("prometheus still exports max_idle_resources after Idle was set to none")
	}
	// The conventions' idle.max is how many may sit idle: with no Idle
	// limit, every one of Size.
	if v := otel[dbconv.ClientConnectionIdleMaxObservable{}.Name()]; v != "9" {
		t.Fatalf("otel idle.max = %q after Idle was set to none, want the Size, 9", v)
	}
}
