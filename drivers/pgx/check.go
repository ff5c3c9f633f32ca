package pgxward

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// errUnusable is check's answer for a connection pgx has closed, or one
// left busy or inside a transaction: what Conn.Release destroys.
var errUnusable = errors.New("pgxward: connection closed, busy or inside a transaction")

// unusable reports whether conn must not be lent again: Conn.Release's
// test, which check runs too.
func unusable(conn *pgx.Conn) bool {
	pc := conn.PgConn()
	return pc.IsClosed() || pc.IsBusy() || pc.TxStatus() != 'I'
}

// check runs before an idle connection is lent: a ping when it sat idle
// longer than DefaultPingIdle or when ShouldPing says so. An error makes the
// Keeper destroy it and lend another, so the caller never sees it.
//
// It first applies Conn.Release's test, without a ping: a connection pgx
// has closed is never kept on ShouldPing's word.
//
// As in pgxpool, the ping runs on a context of its own, bounded by the
// caller's deadline and PingTimeout but not cut by the caller's cancel: pgx
// closes a connection whose query it interrupts, and a healthy connection
// should not be lost because one caller gave up. When the caller's context
// ends first, check returns its error at once and leaves the ping running;
// the Keeper then checks the connection again in the background, and that
// check waits for the ping (see awaitPing).
func (p *Pool) check(ctx context.Context, r *res) error {
	if r.ping != nil {
		return r.awaitPing(ctx)
	}
	if unusable(r.conn) {
		return errUnusable
	}
	if p.shouldPing != nil {
		idle := time.Duration(0)
		if !r.idleSince.IsZero() {
			idle = time.Since(r.idleSince)
		}
		if !p.shouldPing(ctx, ShouldPingParams{Conn: r.conn, IdleDuration: idle}) {
			return nil
		}
	}
	if ctx.Done() == nil {
		return p.ping(ctx, r.conn) // nothing can cut it short
	}
	var pctx context.Context
	var cancel context.CancelFunc
	if d, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), d)
	} else {
		pctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	done := make(chan error, 1)
	go func() { done <- p.ping(pctx, r.conn) }()
	select {
	case err := <-done:
		cancel()
		return err
	case <-ctx.Done():
		r.ping = &pendingPing{done: done, cancel: cancel}
		return ctx.Err()
	}
}

// ping pings conn, within PingTimeout when it is set.
func (p *Pool) ping(ctx context.Context, conn *pgx.Conn) error {
	if p.pingTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.pingTimeout)
		defer cancel()
	}
	return conn.Ping(ctx)
}

// pendingPing is a ping check left running when its caller gave up.
type pendingPing struct {
	done   <-chan error
	cancel context.CancelFunc
}

// awaitPing waits, within ctx, for the ping a cancelled check left running,
// and reports its outcome; when ctx ends first it cuts the ping short (pgx
// then closes the connection) and reports failure. Either way the ping has
// ended when it returns, so the connection is never used by two
// goroutines at once.
func (r *res) awaitPing(ctx context.Context) error {
	pp := r.ping
	r.ping = nil
	var err error
	select {
	case err = <-pp.done:
	case <-ctx.Done():
		pp.cancel()
		if err = <-pp.done; err == nil {
			err = ctx.Err()
		}
	}
	pp.cancel()
	if err == nil && unusable(r.conn) {
		err = errUnusable
	}
	return err
}

// errAfterRelease tells the Keeper to destroy a connection AfterRelease
// refused.
var errAfterRelease = errors.New("pgxward: AfterRelease refused the connection")

// reset runs as a connection goes back: it notes when (for ShouldPing) and
// asks AfterRelease.
func (p *Pool) reset(_ context.Context, r *res) error {
	if p.afterRelease != nil && !p.afterRelease(r.conn) {
		return errAfterRelease
	}
	if p.shouldPing != nil {
		r.idleSince = time.Now()
	}
	return nil
}
