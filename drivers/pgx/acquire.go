package pgxward

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool/internal/poolerr"
)

// errTooManyTries is Acquire's answer when PrepareConn refused every
// connection it was offered.
var errTooManyTries = errors.New("pgxward: PrepareConn refused every connection offered (MaxConns+1 tries)")

// Acquire lends a connection; Release it when done. It waits, bounded by
// ctx, when all MaxConns are lent. It fails with an *AcquireError that
// unwraps to ctx's error and says what the pool was doing, with ErrClosed
// after Close, with a *ShedError (errors.Is ErrShed) when the Ward
// refuses, or with the dial's error (wrapping pgx's) when a new connection
// could not be opened; each of these in a *PoolError that names the pool.
// PrepareConn's own errors and ctx's bare error are returned as they are. An idle connection that fails its liveness ping is
// replaced without the caller seeing the failure.
//
// When ConnConfig.Tracer is a pgxpool.AcquireTracer, its TraceAcquireStart
// and TraceAcquireEnd are called around it, as pgxpool calls them (see
// tracer.go for the pool they are given).
func (p *Pool) Acquire(ctx context.Context) (c *Conn, err error) {
	if p.acquireTracer == nil {
		return p.acquire(ctx)
	}
	ctx = p.acquireTracer.TraceAcquireStart(ctx, p.traced, pgxpool.TraceAcquireStartData{})
	c, err = p.acquire(ctx)
	end := pgxpool.TraceAcquireEndData{Err: err}
	if c != nil {
		end.Conn = c.r.conn
	}
	p.acquireTracer.TraceAcquireEnd(ctx, p.traced, end)
	return c, err
}

// acquire is Acquire without the tracer.
func (p *Pool) acquire(ctx context.Context) (*Conn, error) {
	for range p.tries {
		l, err := p.k.Acquire(ctx)
		if err != nil {
			return nil, poolerr.Wrap(p.name, err)
		}
		r := l.Value()
		if p.prepareConn == nil {
			return r.handle(l), nil
		}
		ok, err := p.prepareConn(ctx, r.conn)
		switch {
		case ok && err == nil:
			return r.handle(l), nil
		case ok:
			l.Release()
			return nil, err
		case err != nil:
			l.Destroy()
			return nil, err
		default:
			l.Destroy()
		}
	}
	return nil, poolerr.Wrap(p.name, errTooManyTries)
}

// AcquireFunc acquires a connection, calls f with it and releases it. ctx
// bounds the Acquire only. It returns the Acquire's error or f's.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*Conn) error) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return f(c)
}

// AcquireAllIdle lends every idle connection at once, for keep-alive or
// health work; PrepareConn runs on each and the ones it refuses are
// destroyed. Release each one.
func (p *Pool) AcquireAllIdle(ctx context.Context) []*Conn {
	loans := p.k.AcquireAllIdle(ctx)
	conns := make([]*Conn, 0, len(loans))
	for _, l := range loans {
		r := l.Value()
		if p.prepareConn != nil {
			if ok, err := p.prepareConn(ctx, r.conn); !ok || err != nil {
				l.Destroy()
				continue
			}
		}
		conns = append(conns, r.handle(l))
	}
	return conns
}
