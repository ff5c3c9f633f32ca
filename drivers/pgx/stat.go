package pgxward

import (
	"time"

	"github.com/wardpool/wardpool"
)

// Stat is one reading of a Pool's books, with the methods of pgxpool.Stat.
// Counters only rise; the gauges are what held at the reading.
type Stat struct {
	s        wardpool.Stats
	max      int32
	newConns int64
}

// AcquireCount is how many acquires succeeded. Unlike pgxpool's, it counts
// the connections AcquireAllIdle lent too.
func (s *Stat) AcquireCount() int64 { return int64(s.s.Acquires) }

// AcquireDuration is the total time successful acquires took.
func (s *Stat) AcquireDuration() time.Duration { return s.s.AcquireWait }

// AcquiredConns is how many connections are lent now.
func (s *Stat) AcquiredConns() int32 {
	return int32(max(s.s.Live-s.s.Idle-s.s.Dialing, 0))
}

// CanceledAcquireCount is how many acquires ended by their context before
// getting a connection.
func (s *Stat) CanceledAcquireCount() int64 { return int64(s.s.Canceled) }

// ConstructingConns is how many connections are being dialled now.
func (s *Stat) ConstructingConns() int32 { return int32(s.s.Dialing) }

// EmptyAcquireCount is how many successful acquires found no idle
// connection and had to wait for one to come back or be dialled.
func (s *Stat) EmptyAcquireCount() int64 { return int64(s.s.EmptyAcquires) }

// EmptyAcquireWaitTime is the total time successful acquires spent waiting
// for a connection to come back or be dialled. An acquire that found one
// idle adds nothing, so this is the Keeper's AcquireWait, the same figure
// as AcquireDuration here (pgxpool's AcquireDuration also counts the
// microseconds of acquires that did not wait).
func (s *Stat) EmptyAcquireWaitTime() time.Duration { return s.s.AcquireWait }

// IdleConns is how many connections sit idle now.
func (s *Stat) IdleConns() int32 { return int32(s.s.Idle) }

// MaxConns is the pool's size limit.
func (s *Stat) MaxConns() int32 { return s.max }

// TotalConns is how many connections exist now: idle, lent and being
// dialled.
func (s *Stat) TotalConns() int32 { return int32(s.s.Live) }

// NewConnsCount is how many dials were started (pgxpool counts the same).
func (s *Stat) NewConnsCount() int64 { return s.newConns }

// MaxLifetimeDestroyCount is how many connections were closed for passing
// MaxConnLifetime.
func (s *Stat) MaxLifetimeDestroyCount() int64 { return int64(s.s.LifeRetired) }

// MaxIdleDestroyCount is how many connections were closed for sitting idle
// past MaxConnIdleTime.
func (s *Stat) MaxIdleDestroyCount() int64 { return int64(s.s.IdleRetired) }

// WardStats returns every figure the wardpool runtime keeps, beyond
// pgxpool's: sheds, failed dials, checks, leaks, double releases. It is
// the reading Pool.WardStats returns, taken with this Stat.
func (s *Stat) WardStats() wardpool.Stats { return s.s }
