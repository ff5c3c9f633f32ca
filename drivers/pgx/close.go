package pgxward

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// canceledCtx is a context ended already.
var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// closeTimeout bounds how long closing one connection may take.
const closeTimeout = 15 * time.Second

// close closes one connection for the Keeper, after BeforeClose.
func (p *Pool) close(r *res) error {
	if r.ping != nil { // not expected: the Keeper checks again first
		_ = r.awaitPing(canceledCtx)
	}
	if p.beforeClose != nil {
		p.beforeClose(r.conn)
	}
	closeConn(r.conn)
	return nil
}

// closeConn closes conn politely and waits, bounded, for its socket to be
// let go.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = conn.Close(ctx) // the error of a goodbye to a dead server says nothing
	select {
	case <-conn.PgConn().CleanupDone():
	case <-ctx.Done():
	}
}

// Close refuses new Acquires (they fail with wardpool.ErrClosed), closes the
// idle connections and waits until every lent connection has come back and
// been closed. It is safe to call more than once.
func (p *Pool) Close() { _ = p.CloseContext(context.Background()) }

// CloseContext is Close that stops waiting for lent connections when ctx
// ends, returning ctx's error; the pool is closed either way and each
// connection still out is closed when it comes back.
func (p *Pool) CloseContext(ctx context.Context) error {
	p.untrace() // the stand-in holds no connection: returns at once
	return p.k.Close(ctx)
}

// Reset closes every idle connection now and every lent one when it comes
// back, and keeps the pool open: for when something (a failover, a network
// cut) has spoiled all connections at once.
func (p *Pool) Reset() { p.k.Reset() }

// Rotate replaces every connection over the window over, at a bounded
// pace, instead of all at once: after rotating the role's password (have
// Config.BeforeConnect, or the connection string's password function, give
// the new one), or moving to a new endpoint. One old connection is closed
// at once and one more every over/n, idle ones by the timer and lent ones
// when they come back; new connections use whatever BeforeConnect gives
// them. The runtime's Stats.Rotating counts the old ones left. See
// wardpool.Keeper.Rotate.
func (p *Pool) Rotate(over time.Duration) { p.k.Rotate(over) }
