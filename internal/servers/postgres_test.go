package servers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardpool/wardpool/internal/testenv"
)

// TestPostgresPromotion holds what the failover harness relies on: a
// standby made with pg_basebackup -R replays the primary, refuses writes
// with 25006, and takes them once promoted; a stopped primary refuses
// connections.
func TestPostgresPromotion(t *testing.T) {
	if !testenv.Full() {
		t.Skipf("a failover on servers of its own, several seconds: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
	primary := StartPostgres(t)
	if err := primary.Exec("CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	standby := StartStandby(t, primary)
	if err := standby.WaitReplay(primary); err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if err := standby.Exec("INSERT INTO t VALUES (1)"); !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("write on the standby: %v, want SQLSTATE 25006", err)
	}
	primary.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, primary.DSN("connect_timeout=2")); err == nil {
		c.Close(ctx)
		t.Fatal("connected to a stopped primary")
	}
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("write on the promoted standby: %v", err)
	}
}
