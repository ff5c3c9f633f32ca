package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// This file holds what the tests run on: a Source that answers a set
// reading and counts how often it is asked, a clock that moves only when
// told, and a Keeper of fake connections on that clock.

// fixed is a Source answering st, counting the readings.
type fixed struct {
	mu    sync.Mutex
	st    wardpool.Stats
	reads atomic.Int64
}

func (f *fixed) WardStats() wardpool.Stats {
	f.reads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fixed) set(st wardpool.Stats) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

// fixedLimits is a fixed Source with limits, as a Keeper has.
type fixedLimits struct {
	*fixed
	limits pool.Limits
}

func (f fixedLimits) Limits() pool.Limits { return f.limits }

// sampleStats returns a reading in which every figure differs from every
// other, so that a series reading the wrong field shows.
func sampleStats() wardpool.Stats {
	return wardpool.Stats{
		Books: pool.Books{
			Live: 9, Idle: 4, Busy: 5,
			Made: 31, Failed: 3, Loans: 101, Reused: 77,
			Retired: 19, IdleRetired: 7, LifeRetired: 5, Dropped: 2,
			Waited: 13, Deferred: 11, Shed: 6,
		},
		Waiting:        8,
		Dialing:        1,
		Acquires:       97,
		AcquireWait:    2750 * time.Millisecond,
		EmptyAcquires:  23,
		Canceled:       4,
		Checks:         41,
		CheckFailures:  17,
		Leaks:          10,
		DoubleReleases: 12,
		Panics:         14,
	}
}

// conn is a fake connection.
type conn struct{ id int }

// clockStart is where the tests' fake clocks start.
var clockStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newKeeper returns a Keeper of conns on clk with limits l and leak watch
// after leak (0: off), closed when the test ends.
func newKeeper(t testing.TB, clk *clocktest.Clock, l pool.Limits, leak time.Duration, onLeak func(wardpool.Leak[*conn])) *wardpool.Keeper[*conn] {
	t.Helper()
	var next atomic.Int64
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits:    l,
		Dial:      func(context.Context) (*conn, error) { return &conn{id: int(next.Add(1))}, nil },
		Close:     func(*conn) error { return nil },
		Clock:     clk,
		LeakAfter: leak,
		OnLeak:    onLeak,
		Rand:      func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return k
}
