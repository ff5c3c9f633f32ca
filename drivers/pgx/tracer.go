package pgxward

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgxpool's tracers take a *pgxpool.Pool, which this package cannot be. So
// that a tracer written for pgxpool (one that checks the pool is not nil,
// or reads pool.Config()) works unchanged, a Pool whose ConnConfig.Tracer
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

// traceWith picks up the pgxpool tracers on config.ConnConfig.Tracer and
// builds their stand-in pool.
func (p *Pool) traceWith(config *Config) error {
	tr := config.ConnConfig.Tracer
	at, _ := tr.(pgxpool.AcquireTracer)
	rt, _ := tr.(pgxpool.ReleaseTracer)
	if at == nil && rt == nil {
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
	p.acquireTracer, p.releaseTracer, p.traced = at, rt, pp
	stand.Store(pp, p)
	return nil
}

// untrace closes the stand-in pool and forgets it.
func (p *Pool) untrace() {
	if p.traced != nil {
		stand.Delete(p.traced)
		p.traced.Close()
	}
}
