package pgxward

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A tracer on ConnConfig.Tracer is called around every Acquire (Query's,
// QueryRow's, Begin's, … included) and every Release, as pgxpool calls its
// own, in one of two forms. One written for this package, with the
// AcquireTracer and ReleaseTracer below, is given the *Pool itself. One
// written for pgxpool (pgxpool.AcquireTracer, pgxpool.ReleaseTracer, such
// as an OpenTelemetry instrumentation of pgx) is given a stand-in, as
// follows; a tracer with both forms is called in this package's.
//
// pgxpool's tracers take a *pgxpool.Pool, which this package cannot be. So
// that a tracer written for pgxpool (one that checks the pool is not nil,
// or reads wardpool.Config()) works unchanged, a Pool whose ConnConfig.Tracer
// is an AcquireTracer or a ReleaseTracer builds a stand-in *pgxpool.Pool
// from the same connection string and ConnConfig, with no minimum of
// connections: it never opens one, its Config() is this pool's, and its
// Stat() reads all zeros. Tracers that want this pool's figures find it
// with FromPgxpool:
//
//	func (t *myTracer) TraceAcquireEnd(ctx context.Context, pp *pgxpool.Pool, d pgxpool.TraceAcquireEndData) {
//		if p := pgxward.FromPgxpool(pp); p != nil {
//			_ = p.Stat().AcquiredConns()
//		}
//	}
//
// Without such a tracer nothing is built and tracing costs nothing.

// AcquireTracer is pgxpool.AcquireTracer for this package's Pool: its
// methods are given the *Pool. TraceAcquireStart is called at the start of
// every Acquire, and its context is the one the acquire uses and
// TraceAcquireEnd is given, with the connection or the error.
type AcquireTracer interface {
	TraceAcquireStart(ctx context.Context, pool *Pool, data TraceAcquireStartData) context.Context
	TraceAcquireEnd(ctx context.Context, pool *Pool, data TraceAcquireEndData)
}

// ReleaseTracer is pgxpool.ReleaseTracer for this package's Pool:
// TraceRelease is called at the start of every Release.
type ReleaseTracer interface {
	TraceRelease(pool *Pool, data TraceReleaseData)
}

// The data the tracers are given: pgxpool's types.
type (
	TraceAcquireStartData = pgxpool.TraceAcquireStartData
	TraceAcquireEndData   = pgxpool.TraceAcquireEndData
	TraceReleaseData      = pgxpool.TraceReleaseData
)

// stand maps each stand-in *pgxpool.Pool to its Pool.
var stand sync.Map // *pgxpool.Pool → *Pool

// FromPgxpool returns the Pool for which pp is the stand-in passed to
// pgxpool tracers, or nil when pp is not one (a real pgxpool.Pool, or a
// stand-in of a Pool already closed). It is safe for concurrent use.
func FromPgxpool(pp *pgxpool.Pool) *Pool {
	if v, ok := stand.Load(pp); ok {
		return v.(*Pool)
	}
	return nil
}

// traceWith picks up the tracers on config.ConnConfig.Tracer, in this
// package's form or else pgxpool's, and builds the stand-in pool for the
// latter.
func (p *Pool) traceWith(config *Config) error {
	tr := config.ConnConfig.Tracer
	if at, ok := tr.(AcquireTracer); ok {
		p.acquireTracer = poolAcquireTracer{at, p}
	}
	if rt, ok := tr.(ReleaseTracer); ok {
		p.releaseTracer = poolReleaseTracer{rt, p}
	}
	at, _ := tr.(pgxpool.AcquireTracer)
	rt, _ := tr.(pgxpool.ReleaseTracer)
	if (at == nil || p.acquireTracer != nil) && (rt == nil || p.releaseTracer != nil) {
		return nil
	}
	pc, err := pgxpool.ParseConfig(config.ConnString())
	if err != nil {
		return fmt.Errorf("pgxward: the tracers' stand-in pool: %w", err)
	}
	pc.ConnConfig = config.ConnConfig.Copy()
	pc.MinConns, pc.MinIdleConns = 0, 0
	pc.MaxConns = config.MaxConns
	pp, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return fmt.Errorf("pgxward: the tracers' stand-in pool: %w", err)
	}
	if p.acquireTracer == nil && at != nil {
		p.acquireTracer = at
	}
	if p.releaseTracer == nil && rt != nil {
		p.releaseTracer = rt
	}
	p.traced = pp
	stand.Store(pp, p)
	return nil
}

// poolAcquireTracer calls an AcquireTracer of this package's form through
// pgxpool's, giving it p.
type poolAcquireTracer struct {
	t AcquireTracer
	p *Pool
}

func (a poolAcquireTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, d TraceAcquireStartData) context.Context {
	return a.t.TraceAcquireStart(ctx, a.p, d)
}

func (a poolAcquireTracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, d TraceAcquireEndData) {
	a.t.TraceAcquireEnd(ctx, a.p, d)
}

// poolReleaseTracer calls a ReleaseTracer of this package's form through
// pgxpool's, giving it p.
type poolReleaseTracer struct {
	t ReleaseTracer
	p *Pool
}

func (r poolReleaseTracer) TraceRelease(_ *pgxpool.Pool, d TraceReleaseData) {
	r.t.TraceRelease(r.p, d)
}

// untrace closes the stand-in pool and forgets it.
func (p *Pool) untrace() {
	if p.traced != nil {
		stand.Delete(p.traced)
		p.traced.Close()
	}
}
