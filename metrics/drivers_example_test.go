package metrics_test

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	redisward "github.com/wardpool/wardpool/drivers/redis"
	sqlward "github.com/wardpool/wardpool/drivers/sql"
	"github.com/wardpool/wardpool/metrics"
	"github.com/wardpool/wardpool/pool"
)

// mockConnector is a driver.Connector over a go-sqlmock database.
type mockConnector struct{ drv driver.Driver }

func (c mockConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open("drivers") }
func (c mockConnector) Driver() driver.Driver                        { return c.drv }

// Every driver's pool is a Source as it is, max gauge included, and takes
// the same leak handler. No server is needed here: the pgx and Redis pools
// connect to nothing until asked, and database/sql runs on go-sqlmock.
func ExampleNewCollector_drivers() {
	ctx := context.Background()

	pc, err := pgxward.ParseConfig("postgres://app@127.0.0.1:5432/app?pool_max_conns=8")
	if err != nil {
		panic(err)
	}
	pc.OnLeak = metrics.OnLeak[*pgx.Conn](nil)
	pg, err := pgxward.NewWithConfig(ctx, pc)
	if err != nil {
		panic(err)
	}
	defer pg.Close()

	mdb, _, err := sqlmock.NewWithDSN("drivers")
	if err != nil {
		panic(err)
	}
	defer mdb.Close()
	db, conns, err := sqlward.OpenDB(mockConnector{mdb.Driver()}, sqlward.Config{
		Limits: pool.Limits{Size: 4},
		OnLeak: metrics.OnLeak[driver.Conn](nil),
	})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	rc := redisward.FromOptions(&redis.Options{Addr: "127.0.0.1:6379", PoolSize: 16})
	rc.Lazy = true
	rc.OnLeak = metrics.OnLeak[*redis.Client](nil)
	rd, err := redisward.New(ctx, rc)
	if err != nil {
		panic(err)
	}
	defer rd.Close(ctx)

	reg := prometheus.NewRegistry()
	for name, src := range map[string]metrics.Source{"pg": pg, "sql": conns, "redis": rd} {
		reg.MustRegister(metrics.NewCollector(src, metrics.Options{Labels: map[string]string{"pool": name}}))
	}
	text, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, "wardpool_max_resources")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(text))
	// Output:
	// # HELP wardpool_max_resources The most resources the pool may hold (Limits.Size).
	// # TYPE wardpool_max_resources gauge
	// wardpool_max_resources{pool="pg"} 8
	// wardpool_max_resources{pool="redis"} 16
	// wardpool_max_resources{pool="sql"} 4
}
