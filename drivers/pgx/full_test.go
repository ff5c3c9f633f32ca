package pgxward

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The server with no room (issue 34, item 2): a pool whose MaxConns is
// above what the server lets it open. The role here has CONNECTION LIMIT
// fullRoom, and the pool MaxConns 2×fullRoom, so every dial past the
// fourth connection is refused with 53300 (too many connections for
// role), the error max_connections gives too.

const (
	fullRoom    = 4
	fullWorkers = 16
	fullQueries = 40 // each worker's, sleeping fullHold each
	fullHold    = 5 * time.Millisecond
)

// fullLoad runs the workers' queries through query and counts the failed
// ones, and of them the 53300s.
func fullLoad(query func(ctx context.Context) error) (failed, noRoom int64, took time.Duration) {
	var wg sync.WaitGroup
	var f, n atomic.Int64
	start := time.Now()
	for range fullWorkers {
		wg.Go(func() {
			for range fullQueries {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := query(ctx)
				cancel()
				if err != nil {
					f.Add(1)
					var pe *pgconn.PgError
					if errors.As(err, &pe) && pe.Code == "53300" {
						n.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	return f.Load(), n.Load(), time.Since(start)
}

// TestFullServerBesidePgxpool: with the server refusing connections past
// its room, no query through pgxward fails, and the pool does not keep
// dialing the full server: one refused dial a second at most once it
// knows, beyond the first burst. Measured: 0 of 640 failed, 4 dials
// refused, 4 connections made; pgxpool 171–178 of 640 failed with 53300
// and made 175–182 connections (three runs). pgxpool, with the same role and load,
// fails an Acquire for every refused dial: its figures are logged beside.
func TestFullServerBesidePgxpool(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two pools under load against a role with a connection limit")
	}
	r := newRotRole(t)
	pw := secret(t)
	r.setPassword(t, pw)
	if _, err := r.admin.Exec(ctxT(t), fmt.Sprintf("ALTER ROLE %s CONNECTION LIMIT %d", r.ident(), fullRoom)); err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT pg_sleep($1)"
	hold := fullHold.Seconds()

	c, err := ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	c.ConnConfig = r.connConfig(t, "wardpool-full-pgxward")
	c.ConnConfig.Password = pw
	c.MaxConns = 2 * fullRoom
	c.Logger = quiet()
	p, err := NewWithConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	failed, noRoom, took := fullLoad(func(ctx context.Context) error {
		_, err := p.Exec(ctx, sql, hold)
		return err
	})
	s := p.WardStats()
	p.Close()
	t.Logf("pgxward: %d of %d queries failed (%d with 53300) in %v; %d dials refused, %d connections made",
		failed, fullWorkers*fullQueries, noRoom, took.Round(time.Millisecond), s.Failed, s.Made)
	if failed != 0 {
		t.Errorf("pgxward: %d queries failed against a full server (%d with 53300), want none: %v", failed, noRoom, s.LastDialError)
	}
	// The first burst sends every dial MaxConns allows at once, and those
	// past the room are refused; after that, one a second while callers
	// wait.
	if limit := uint64(fullRoom) + uint64(took/time.Second) + 1; s.Failed > limit { // one a second after the burst
		t.Errorf("pgxward: %d dials refused in %v, want at most %d: the pool kept dialing a full server", s.Failed, took, limit)
	}

	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig = r.connConfig(t, "wardpool-full-pgxpool")
	pc.ConnConfig.Password = pw
	pc.MaxConns = 2 * fullRoom
	pp, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	failed, noRoom, took = fullLoad(func(ctx context.Context) error {
		_, err := pp.Exec(ctx, sql, hold)
		return err
	})
	st := pp.Stat()
	pp.Close()
	t.Logf("pgxpool: %d of %d queries failed (%d with 53300) in %v; %d connections made",
		failed, fullWorkers*fullQueries, noRoom, took.Round(time.Millisecond), st.NewConnsCount())
}
