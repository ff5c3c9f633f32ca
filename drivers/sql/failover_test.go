package sqlward

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

// stateErr is a driver's error that tells its SQLSTATE by method, as
// pgx's *pgconn.PgError does.
type stateErr string

func (e stateErr) Error() string    { return "server: " + string(e) }
func (e stateErr) SQLState() string { return string(e) }

func TestDefaultClassify(t *testing.T) {
	for _, c := range []struct {
		err   error
		want  wardpool.Verdict
		cause string
	}{
		{stateErr("25006"), wardpool.Reset, "25006"},
		{stateErr("57P01"), wardpool.Reset, "57P01"},
		{stateErr("57P03"), wardpool.Reset, "57P03"},
		{stateErr("08006"), wardpool.Reset, "08006"},
		{fmt.Errorf("exec: %w", stateErr("25006")), wardpool.Reset, "25006"},
		{&pgconn.PgError{Code: "25006"}, wardpool.Reset, "25006"},
		{stateErr("53300"), wardpool.Full, "53300"},
		{stateErr("23505"), wardpool.Reuse, ""},
		{errors.New("25006"), wardpool.Reuse, ""}, // no SQLState method
		{driver.ErrBadConn, wardpool.Reuse, ""},
	} {
		v, cause := DefaultClassify(c.err)
		if v != c.want || cause != c.cause {
			t.Errorf("DefaultClassify(%v) = %v, %q; want %v, %q", c.err, v, cause, c.want, c.cause)
		}
	}
}

// TestMockReadOnlyResets: an error with SQLSTATE 25006 resets the pool on
// the default classifier; the caller gets the driver's error as it was.
func TestMockReadOnlyResets(t *testing.T) {
	cfg := one()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	db, c, mock, mc := newMock(t, cfg)
	ctx := ctxT(t)
	mock.ExpectExec("INSERT").WillReturnError(stateErr("25006"))
	mock.ExpectExec("INSERT").WillReturnResult(sqlmock.NewResult(1, 1))
	if _, err := db.ExecContext(ctx, "INSERT"); !errors.Is(err, stateErr("25006")) {
		t.Fatalf("Exec = %v, want the driver's 25006", err)
	}
	s := c.WardStats()
	if s.Resets != 1 || s.ResetCauses["25006"] != 1 || s.Live != 0 {
		t.Fatalf("resets %d %v, live %d; want one 25006 reset and the connection closed", s.Resets, s.ResetCauses, s.Live)
	}
	if _, err := db.ExecContext(ctx, "INSERT"); err != nil {
		t.Fatalf("Exec after the reset: %v", err)
	}
	if mc.dials.Load() != 2 {
		t.Fatalf("dials %d, want 2", mc.dials.Load())
	}
	honest(t, c)
}

// TestMockClassifyDestroyAndOff: a Destroy verdict drops the connection
// alone; wardpool.ReuseAll keeps it.
func TestMockClassifyDestroyAndOff(t *testing.T) {
	cfg := one()
	cfg.Classify = func(error) (wardpool.Verdict, string) { return wardpool.Destroy, "" }
	db, c, mock, _ := newMock(t, cfg)
	mock.ExpectExec("X").WillReturnError(stateErr("25006"))
	_, _ = db.ExecContext(ctxT(t), "X")
	{
		s := c.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Dropped: 1}, Resets: 0}, wardpool.Stats{Books: pool.Books{Dropped: s.Dropped}, Resets: s.Resets}); diff != "" {
			t.Fatalf("destroy verdict: dropped %d resets %d (-want +got):\n%s", s.Dropped, s.Resets, diff)
		}
	}
	cfg.Classify = wardpool.ReuseAll
	db, c, mock, _ = newMock(t, cfg)
	mock.ExpectExec("X").WillReturnError(stateErr("25006"))
	_, _ = db.ExecContext(ctxT(t), "X")
	{
		s := c.WardStats()
		if diff := cmp.Diff(wardpool.Stats{Books: pool.Books{Dropped: 0, Idle: 1}, Resets: 0}, wardpool.Stats{Books: pool.Books{Dropped: s.Dropped, Idle: s.Idle}, Resets: s.Resets}); diff != "" {
			t.Fatalf("ReuseAll (-want +got):\n%s", diff)
		}
	}
}

// TestPGReadOnlyResets: pgx's stdlib on the real server, connections made
// read-only while ro is set: the first write's 25006 resets, and once the
// server "moved" the next write succeeds.
func TestPGReadOnlyResets(t *testing.T) {
	cc, err := pgx.ParseConfig(testenv.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	var ro atomic.Bool
	ro.Store(true)
	conn := stdlib.GetConnector(*cc, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error {
		if ro.Load() {
			_, err := c.Exec(ctx, "SET default_transaction_read_only = on")
			return err
		}
		return nil
	}))
	cfg := sized(4)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	db, c, err := OpenDB(conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	ro.Store(false)
	_, err = db.ExecContext(ctx, "CREATE TABLE sqlward_ro_never (id int)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" {
		t.Fatalf("write on a read-only connection: %v, want 25006", err)
	}
	if s := c.WardStats(); s.Resets != 1 || s.ResetCauses["25006"] != 1 {
		t.Fatalf("resets %d %v, want one 25006", s.Resets, s.ResetCauses)
	}
	// A temporary table: refused read-only, and gone with its session.
	if _, err := db.ExecContext(ctx, "CREATE TEMP TABLE sqlward_ro (id int)"); err != nil {
		t.Fatalf("write after the reset: %v", err)
	}
}
