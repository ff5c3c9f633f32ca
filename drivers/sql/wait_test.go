package sqlward

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestAcquireTimeoutAndStallWatch: Config.AcquireTimeout and StallAfter
// reach the Keeper. With the one connection held on a *sql.Conn, a query
// waits: the stall watch reports it at StallAfter, and the pool's acquire
// timeout ends its wait, on the fake clock, with an error database/sql
// passes on as it is.
func TestAcquireTimeoutAndStallWatch(t *testing.T) {
	noLeftovers(t)
	clock := clocktest.New(time.Unix(1_000_000, 0))
	var log bytes.Buffer
	db, c, err := OpenDB(&fakeConnector{}, Config{
		Limits:         pool.Limits{Size: 1},
		Clock:          clock,
		AcquireTimeout: 5 * time.Second,
		StallAfter:     time.Second,
		StallSites:     true,
		Logger:         slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	held, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "X")
		errc <- err
	}()
	clocktest.Eventually(t, "the query to queue", func() bool { return c.WardStats().Waiting == 1 })
	clock.Advance(time.Second)
	if s := c.WardStats(); s.Stalls != 1 || !strings.Contains(log.String(), wardpool.StallMessage) {
		t.Fatalf("no stall report at StallAfter: %d stalls, log %q", s.Stalls, log.String())
	}
	clock.Advance(4 * time.Second)
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the query did not give up")
	}
	if !errors.Is(err, wardpool.ErrAcquireTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query = %v, want the pool's acquire timeout", err)
	}
	if s := c.WardStats(); s.AcquireTimeouts != 1 {
		t.Fatalf("%d acquire timeouts counted", s.AcquireTimeouts)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "X"); err != nil {
		t.Fatal(err)
	}
	honest(t, c)
}
