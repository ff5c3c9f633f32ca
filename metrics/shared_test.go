package metrics

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward/shared"
)

// TestCollectorSharedGuards: a Keeper with a fleet budget exports the
// budget's and the store's series; one without exports none of them.
func TestCollectorSharedGuards(t *testing.T) {
	cfg := shared.DefaultBudget
	cfg.Slots = 4
	b := shared.NewBudget(shared.Link{Store: shared.NewMemStore(nil), Timeout: time.Minute}, "db", "one", cfg)
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits: pool.Limits{Size: 4},
		Dial:   func(context.Context) (*conn, error) { return &conn{}, nil },
		Close:  func(*conn) error { return nil },
		Shared: wardpool.Shared{Budget: b},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	l, err := k.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	got := gatherValues(t, NewCollector(k, Options{}))
	if got["wardpool_budget_slots_held"] != 1 || got["wardpool_shared_store_trips_total"] == 0 {
		t.Fatalf("shared series %v: want one slot held and the store's round trips counted", got)
	}
	if _, ok := got["wardpool_shared_breaker_state"]; !ok {
		t.Fatal("no wardpool_shared_breaker_state")
	}
	plain := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 1}, 0, nil)
	for name := range gatherValues(t, NewCollector(plain, Options{})) {
		if len(name) > 16 && (name[:16] == "wardpool_budget_" || name[:16] == "wardpool_shared_") {
			t.Errorf("a Keeper without shared guards exports %s", name)
		}
	}
}

// gatherValues registers c alone and returns each series' first value.
func gatherValues(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			out[mf.GetName()] = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			out[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestCollectorBudgetOutage: while the budget's store does not answer, the
// Keeper exports the safe-share gauge at 1, one outage, and the leases it
// decided alone.
func TestCollectorBudgetOutage(t *testing.T) {
	cfg := shared.DefaultBudget
	cfg.Slots, cfg.Floor = 4, 1
	b := shared.NewBudget(shared.Link{}, "db", "one", cfg) // no store: never answers
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits: pool.Limits{Size: 4},
		Dial:   func(context.Context) (*conn, error) { return &conn{}, nil },
		Close:  func(*conn) error { return nil },
		Shared: wardpool.Shared{Budget: b},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	l, err := k.Acquire(context.Background()) // within the Floor, decided alone
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	got := gatherValues(t, NewCollector(k, Options{}))
	if got["wardpool_budget_alone"] != 1 || got["wardpool_budget_store_outages_total"] != 1 || got["wardpool_budget_fallbacks_total"] < 1 {
		t.Fatalf("budget series in an outage: %v", got)
	}
}
