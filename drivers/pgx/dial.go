package pgxward

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// dial opens one connection: BeforeConnect, pgx.ConnectConfig, AfterConnect.
// Errors wrap pgx's own (*pgconn.ConnectError for a server that cannot be
// reached or refuses the login).
func (p *Pool) dial(ctx context.Context) (*res, error) {
	p.newConns.Add(1)
	if p.values != nil {
		ctx = valuesCtx{Context: ctx, fallback: p.values}
	}
	cc := p.config.ConnConfig.Copy()
	// The dial goes on when the Acquire that started it gives up, so that
	// the connection is not wasted; it must not hang for ever (pgxpool's
	// bound).
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = 2 * time.Minute
	}
	if h := p.config.BeforeConnect; h != nil {
		if err := h(ctx, cc); err != nil {
			return nil, fmt.Errorf("pgxward: BeforeConnect: %w", err)
		}
	}
	r := &res{p: p}
	cc.OnPgError = p.onPgError(r, cc.OnPgError)
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("pgxward: connect: %w", err)
	}
	if h := p.config.AfterConnect; h != nil {
		if err := h(ctx, conn); err != nil {
			closeConn(conn)
			return nil, fmt.Errorf("pgxward: AfterConnect: %w", err)
		}
	}
	r.conn = conn // from now on the server's errors are classified
	return r, nil
}

// valuesCtx is a dial's context (its deadline and cancellation) whose
// values fall back to those of the context NewWithConfig was given.
type valuesCtx struct {
	context.Context
	fallback context.Context
}

// Value returns the dial context's value for key, or else the fallback's.
func (c valuesCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.fallback.Value(key)
}
