package metrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	sdk "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/metrics"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// Conn stands for a connection to some backend.
type Conn struct{ PID int }

// newKeeper returns a pool of up to four Conns.
func newKeeper() *wardpool.Keeper[*Conn] {
	pid := 100
	k, err := wardpool.NewKeeper(wardpool.Config[*Conn]{
		Limits: pool.Limits{Size: 4, Idle: 4},
		Dial: func(context.Context) (*Conn, error) {
			pid++ // dials run one at a time in this example
			return &Conn{PID: pid}, nil
		},
		Close: func(*Conn) error { return nil },
	})
	if err != nil {
		panic(err)
	}
	return k
}

// use borrows n Conns at once and gives them back.
func use(k *wardpool.Keeper[*Conn], n int) {
	var loans []wardpool.Loan[*Conn]
	for range n {
		l, err := k.Acquire(context.Background())
		if err != nil {
			panic(err)
		}
		loans = append(loans, l)
	}
	for _, l := range loans {
		l.Release()
	}
}

// A Keeper exported to Prometheus: register one Collector per pool, with a
// label to tell the pools apart, and serve the registry as usual
// (promhttp.HandlerFor).
func ExampleNewCollector() {
	k := newKeeper()
	defer k.Close(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(k, metrics.Options{
		Labels: map[string]string{"pool": "orders"},
	}))

	use(k, 1) // one Conn made
	use(k, 2) // one reused, one more made

	text, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain,
		"wardpool_idle_resources", "wardpool_made_total", "wardpool_reused_loans_total", "wardpool_max_resources")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # HELP wardpool_idle_resources Resources sitting in the pool now, ready to lend.
	// # TYPE wardpool_idle_resources gauge
	// wardpool_idle_resources{pool="orders"} 2
	// # HELP wardpool_made_total Resources made (dialed) and taken into the pool.
	// # TYPE wardpool_made_total counter
	// wardpool_made_total{pool="orders"} 2
	// # HELP wardpool_max_resources The most resources the pool may hold (Limits.Size).
	// # TYPE wardpool_max_resources gauge
	// wardpool_max_resources{pool="orders"} 4
	// # HELP wardpool_reused_loans_total Loans of a resource that was sitting idle (loans minus reused loans is the cold-start cost).
	// # TYPE wardpool_reused_loans_total counter
	// wardpool_reused_loans_total{pool="orders"} 1
}

// A pool.Pool run by hand (as a simulation does) exported to Prometheus:
// the books under the caller's own lock, without the Keeper's series.
func ExampleFromBooks() {
	var mu sync.Mutex
	p, _ := pool.New[int](pool.Limits{Size: 2}, ward.Ward{})
	src := metrics.FromBooks(func() pool.Books {
		mu.Lock()
		defer mu.Unlock()
		return p.Books()
	})
	c := metrics.NewCollector(src, metrics.Options{Subsystem: "sim"})

	mu.Lock()
	now := time.Unix(0, 0)
	for id := 1; id <= 2; id++ {
		p.Take(now, 0, 0) // Make
		p.Made(id, 0, now, 0)
	}
	p.Take(now, 0, 0) // Wait: both are out
	p.Give(1, now)
	mu.Unlock()

	text, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain,
		"wardpool_sim_live_resources", "wardpool_sim_idle_resources", "wardpool_sim_waited_total", "wardpool_sim_acquires_total")
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(text), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			fmt.Println(line)
		}
	}
	// Output:
	// wardpool_sim_idle_resources 1
	// wardpool_sim_live_resources 2
	// wardpool_sim_waited_total 1
}

// A Keeper exported to OpenTelemetry. A real program passes the Meter of
// its MeterProvider; this one reads the figures back with a ManualReader.
func ExampleObserve() {
	k := newKeeper()
	defer k.Close(context.Background())

	reader := sdk.NewManualReader()
	meter := sdk.NewMeterProvider(sdk.WithReader(reader)).Meter("orders")
	reg, err := metrics.Observe(meter, k, metrics.Options{Labels: map[string]string{"pool": "orders"}})
	if err != nil {
		panic(err)
	}
	defer reg.Unregister() // when the pool goes away

	use(k, 3)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch m.Name {
		case "wardpool.made":
			dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			pool, _ := dp.Attributes.Value("pool")
			fmt.Printf("%s{pool=%s} = %d %s\n", m.Name, pool.AsString(), dp.Value, m.Unit)
		case "db.client.connection.count": // OpenTelemetry's conventions
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				pool, _ := dp.Attributes.Value("db.client.connection.pool.name")
				state, _ := dp.Attributes.Value("db.client.connection.state")
				fmt.Printf("%s{pool.name=%s,state=%s} = %d %s\n", m.Name, pool.AsString(), state.AsString(), dp.Value, m.Unit)
			}
		}
	}
	// Unordered output:
	// db.client.connection.count{pool.name=orders,state=idle} = 3 {connection}
	// db.client.connection.count{pool.name=orders,state=used} = 0 {connection}
	// wardpool.made{pool=orders} = 3 {resource}
}

// A leak handler for a Keeper. The Keeper calls it when a loan has been out
// longer than LeakAfter, and again when that loan comes back; here it is
// called by hand with such reports.
func ExampleLeakLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	}))
	onLeak := metrics.LeakLog[*Conn]{
		Logger: logger,
		Item:   func(c *Conn) slog.Value { return slog.IntValue(c.PID) },
		Attrs:  []slog.Attr{slog.String("pool", "orders")},
	}.Handler()

	_ = wardpool.Config[*Conn]{
		// Dial, Close, …
		LeakAfter: time.Minute,
		OnLeak:    onLeak,
	}

	c := &Conn{PID: 4242}
	stack := []byte("example.com/shop.(*Server).checkout\n\tshop/server.go:118\n")
	onLeak(wardpool.Leak[*Conn]{Item: c, Held: time.Minute, Stack: stack})
	onLeak(wardpool.Leak[*Conn]{Item: c, Held: 95 * time.Second, Stack: stack, Returned: true})
	// Output:
	// level=WARN msg="wardpool: a loan is held longer than LeakAfter" held=1m0s stack="example.com/shop.(*Server).checkout\n\tshop/server.go:118\n" item=4242 pool=orders
	// level=WARN msg="wardpool: a loan reported as held too long came back" held=1m35s stack="example.com/shop.(*Server).checkout\n\tshop/server.go:118\n" item=4242 pool=orders
}
