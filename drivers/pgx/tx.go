package pgxward

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is a transaction begun by Pool.Begin or Pool.BeginTx (or by a batch
// with Batch.BeginTx): Commit or Rollback ends it and gives its connection
// back. Both are safe to call again (defer tx.Rollback(ctx) is the usual
// pattern); later calls report pgx.ErrTxClosed.
type Tx struct {
	t pgx.Tx
	c *Conn // nil once given back
}

func (tx *Tx) release() {
	if c := tx.c; c != nil {
		tx.c = nil
		c.Release()
	}
}

// Commit commits and gives the connection back.
func (tx *Tx) Commit(ctx context.Context) error {
	err := tx.t.Commit(ctx)
	tx.release()
	return err
}

// Rollback rolls back and gives the connection back.
func (tx *Tx) Rollback(ctx context.Context) error {
	err := tx.t.Rollback(ctx)
	tx.release()
	return err
}

// Begin starts a nested transaction (a savepoint).
func (tx *Tx) Begin(ctx context.Context) (pgx.Tx, error) { return tx.t.Begin(ctx) }

func (tx *Tx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	return tx.t.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (tx *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return tx.t.SendBatch(ctx, b)
}

func (tx *Tx) LargeObjects() pgx.LargeObjects { return tx.t.LargeObjects() }

func (tx *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return tx.t.Prepare(ctx, name, sql)
}

func (tx *Tx) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	return tx.t.Exec(ctx, sql, arguments...)
}

func (tx *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return tx.t.Query(ctx, sql, args...)
}

func (tx *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return tx.t.QueryRow(ctx, sql, args...)
}

// Conn returns the connection the transaction runs on.
func (tx *Tx) Conn() *pgx.Conn { return tx.t.Conn() }

// poolBatch is the BatchResults of Pool.SendBatch: closing it gives the
// connection back, unless the batch began a transaction, which then owns
// the connection.
type poolBatch struct {
	br pgx.BatchResults
	c  *Conn // nil once given back, or when tx owns it
	tx *Tx
}

func (b *poolBatch) Exec() (pgconn.CommandTag, error) { return b.br.Exec() }
func (b *poolBatch) Query() (pgx.Rows, error)         { return b.br.Query() }
func (b *poolBatch) QueryRow() pgx.Row                { return b.br.QueryRow() }

func (b *poolBatch) Close() error {
	err := b.br.Close()
	if c := b.c; c != nil {
		b.c = nil
		c.Release()
	}
	return err
}

func (b *poolBatch) Tx() pgx.Tx {
	if b.tx == nil {
		return nil
	}
	return b.tx
}
