package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/internal/testenv"
)

// These tests prove that the servers ./scripts/test starts are the ones it
// promises: reachable at the exported address, loopback only, password
// protected (PostgreSQL) and without persistence (Redis).

func TestPostgresDSNConnects(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect with %s: %v", testenv.PostgresDSNVar, err)
	}
	defer conn.Close(ctx)

	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v; want 1, nil", one, err)
	}
	host := conn.Config().Host
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("DSN host = %q; want a loopback address", host)
	}
}

func TestPostgresWrongPasswordFails(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", testenv.PostgresDSNVar, err)
	}
	cfg.Password += "-wrong"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password; want the server to refuse it")
	}
	// 28P01 is invalid_password; 28000 (invalid_authorization_specification)
	// is what a server answers when a pg_hba.conf line rejects the login.
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || (pgErr.Code != "28P01" && pgErr.Code != "28000") {
		t.Errorf("wrong password: %v; want a PostgreSQL authentication error (28P01)", err)
	}
}

func TestRedisAddrAnswers(t *testing.T) {
	addr := testenv.RedisAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()

	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s: %v", addr, err)
	}
	key := fmt.Sprintf("wardpool:testenv:%d", time.Now().UnixNano())
	defer rdb.Del(context.Background(), key)
	if err := rdb.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := rdb.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want \"v\", nil", got, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("%s host = %q; want a loopback address", testenv.RedisAddrVar, host)
	}
}

// TestThrowawayRedisKeepsNothing checks the settings scripts/test promises
// for a Redis it starts: no snapshots, no append-only file.
func TestThrowawayRedisKeepsNothing(t *testing.T) {
	addr := testenv.RedisAddr(t)
	if !testenv.RedisThrowaway() {
		t.Skipf("%s not 1: the Redis at %s was not started by ./scripts/test", testenv.RedisThrowawayVar, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()

	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatalf("CONFIG GET: %v", err)
	}
	if cfg["save"] != "" || cfg["appendonly"] != "no" || cfg["bind"] != "127.0.0.1" {
		t.Errorf("save=%q appendonly=%q bind=%q; want \"\", \"no\", \"127.0.0.1\"", cfg["save"], cfg["appendonly"], cfg["bind"])
	}
}

// TestThrowawayPostgresLoopbackOnly checks that a PostgreSQL scripts/test
// starts listens on 127.0.0.1 alone.
func TestThrowawayPostgresLoopbackOnly(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	if !testenv.PostgresThrowaway() {
		t.Skipf("%s not 1: the PostgreSQL in %s was not started by ./scripts/test", testenv.PostgresThrowawayVar, testenv.PostgresDSNVar)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var listen string
	if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil {
		t.Fatalf("SHOW listen_addresses: %v", err)
	}
	if listen != "127.0.0.1" {
		t.Errorf("listen_addresses = %q; want 127.0.0.1", listen)
	}
}
