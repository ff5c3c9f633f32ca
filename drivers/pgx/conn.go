package pgxward

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
)

// Conn is a connection on loan from a Pool. Give it back with Release (or
// take it for good with Hijack); after that no other method may be called.
// A Conn is for one goroutine at a time, like the *pgx.Conn inside it.
type Conn struct {
	r    *res // nil once released or hijacked
	loan wardpool.Loan[*res]

	// The Row and Rows Pool.QueryRow and Pool.Query hand out live here, so
	// that they cost no allocation of their own.
	row  poolRow
	rows poolRows
}

// Release gives the connection back. One that is closed, still busy with a
// query, or inside a transaction is destroyed instead, and so is one that
// AfterRelease refuses. When the server answered an error during the loan
// that Config.Classify judges, the worst verdict decides: Destroy destroys
// the connection, Reset retires every connection of its generation (see
// wardpool.Loan.Reset) and closes this one. Calling Release again does
// nothing.
func (c *Conn) Release() {
	r := c.r
	if r == nil {
		return
	}
	c.r = nil
	if t := r.p.releaseTracer; t != nil {
		t.TraceRelease(r.p.traced, pgxpool.TraceReleaseData{Conn: r.conn})
	}
	f := r.fail
	r.fail = failure{}
	switch {
	case f.v == wardpool.Reset && !ownReadOnly(r.conn, f.err):
		c.loan.Reset(f.cause, f.err)
	case f.v == wardpool.Destroy || unusable(r.conn):
		c.loan.Destroy()
	default: // Reuse, or a 25006 of the application's own (ownReadOnly)
		c.loan.Release()
	}
}

// Hijack takes the connection out of the pool for good: the pool forgets
// it, and the caller closes it. It panics when the Conn was already released
// or hijacked.
func (c *Conn) Hijack() *pgx.Conn {
	if c.r == nil {
		panic("pgxward: Hijack of a released or hijacked connection")
	}
	c.r = nil
	return c.loan.Hijack().conn
}

// Conn returns the pgx connection. It belongs to the pool: do not close it
// or keep it past Release.
func (c *Conn) Conn() *pgx.Conn { return c.r.conn }

// Exec runs sql on the connection.
func (c *Conn) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	return c.r.conn.Exec(ctx, sql, arguments...)
}

// Query runs sql on the connection. Close the Rows before Release.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.r.conn.Query(ctx, sql, args...)
}

// QueryRow runs sql on the connection; errors come from Scan.
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.r.conn.QueryRow(ctx, sql, args...)
}

// SendBatch sends b on the connection. Close the results before Release.
func (c *Conn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return c.r.conn.SendBatch(ctx, b)
}

// CopyFrom runs a COPY FROM on the connection.
func (c *Conn) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	return c.r.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

// Begin begins a transaction on the connection. Ending it leaves the
// connection on loan.
func (c *Conn) Begin(ctx context.Context) (pgx.Tx, error) { return c.r.conn.Begin(ctx) }

// BeginTx is Begin with options.
func (c *Conn) BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error) {
	return c.r.conn.BeginTx(ctx, txOptions)
}

// Ping pings the server on the connection.
func (c *Conn) Ping(ctx context.Context) error { return c.r.conn.Ping(ctx) }
