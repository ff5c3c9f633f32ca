package pgxward

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Exec runs sql on a connection it acquires and releases before returning.
func (p *Pool) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.r.conn.Exec(ctx, sql, arguments...)
}

// Query runs sql on a connection it acquires; the connection goes back when
// the Rows are closed or read to the end. On error the Rows returned carry
// the error too (as pgxpool's do), so either may be checked.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return errRows{err: err}, err
	}
	rows, err := c.r.conn.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return errRows{err: err}, err
	}
	c.rows = poolRows{r: rows, c: c}
	return &c.rows, nil
}

// QueryRow runs sql on a connection it acquires; the connection goes back
// when the Row's Scan is called. A Row never scanned keeps its connection
// for ever: with LeakAfter set, the leak watch reports it with the stack
// that called QueryRow. Errors, including the Acquire's, come from Scan.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := p.Acquire(ctx)
	if err != nil {
		return errRow{err: err}
	}
	c.row = poolRow{r: c.r.conn.QueryRow(ctx, sql, args...), c: c}
	return &c.row
}

// SendBatch sends b on a connection it acquires. The connection goes back
// when the results are closed or, for a batch begun with Batch.BeginTx,
// when the transaction from BatchResults.Tx is committed or rolled back.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := p.Acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	br := c.r.conn.SendBatch(ctx, b)
	if t := br.Tx(); t != nil {
		return &poolBatch{br: br, tx: &Tx{t: t, c: c}}
	}
	return &poolBatch{br: br, c: c}
}

// Begin acquires a connection and begins a transaction on it; Commit or
// Rollback ends it and gives the connection back. ctx affects the BEGIN
// only.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with options.
func (p *Pool) BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t, err := c.r.conn.BeginTx(ctx, txOptions)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &Tx{t: t, c: c}, nil
}

// CopyFrom runs a COPY FROM on a connection it acquires and releases
// before returning.
func (p *Pool) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	return c.r.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

// Ping acquires a connection and pings the server on it.
func (p *Pool) Ping(ctx context.Context) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.r.conn.Ping(ctx)
}
