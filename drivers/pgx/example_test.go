package pgxward_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/ward"
)

// A connection string written for pgxpool means the same here.
func ExampleParseConfig() {
	c, err := pgxward.ParseConfig("postgres://app:secret@127.0.0.1:5432/app?sslmode=disable" +
		"&pool_max_conns=8&pool_max_conn_idle_time=5m&pool_max_conn_lifetime=1h")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.MaxConns, c.MaxConnIdleTime, c.MaxConnLifetime, c.ConnConfig.Database)

	_, err = pgxward.ParseConfig("postgres://app:secret@127.0.0.1:5432/app?pool_max_conns=none")
	fmt.Println(err != nil)
	// Output:
	// 8 5m0s 1h0m0s app
	// true
}

// countUsers is written against the interface both pools satisfy.
func countUsers(ctx context.Context, db pgxward.DB) (int, error) {
	var n int
	err := db.QueryRow(ctx, "SELECT count(*) FROM users").Scan(&n)
	return n, err
}

// Code written for pgxpool moves by changing the constructor; the pgxward
// pool adds a breaker in front of the server and a leak watch.
func ExampleNewWithConfig() {
	ctx := context.Background()
	dsn := "postgres://app:secret@127.0.0.1:5432/app?sslmode=disable&pool_max_conns=8"

	// Before: p, err := pgxpool.New(ctx, dsn)
	c, err := pgxward.ParseConfig(dsn)
	if err != nil {
		panic(err)
	}
	c.Ward = ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())}
	c.LeakAfter = 30 * time.Second
	p, err := pgxward.NewWithConfig(ctx, c)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	_, _ = countUsers(ctx, p) // the same function takes a *pgxpool.Pool
	var _ pgxward.DB = (*pgxpool.Pool)(nil)
}

// A Pool is a metrics source as it is (WardStats, Limits), and its errors say
// what went wrong. Nothing listens on port 1 of the loopback here, so the
// dial is refused at once: the error wraps pgx's *pgconn.ConnectError, and
// the books count the failed dial.
func ExamplePool_WardStats() {
	ctx := context.Background()
	p, err := pgxward.New(ctx, "postgres://app@127.0.0.1:1/app?sslmode=disable&pool_max_conns=8")
	if err != nil {
		panic(err)
	}
	defer p.Close()

	err = p.Ping(ctx)
	var ce *pgconn.ConnectError
	fmt.Println(errors.As(err, &ce), errors.Is(err, pgxward.ErrShed))
	s := p.WardStats()
	fmt.Println(s.Made, s.Failed, s.Live, p.Limits().Size)
	// Output:
	// true false
	// 0 1 0 8
}
