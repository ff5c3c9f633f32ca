package pgxward

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The interfaces below are the ones pgx users write for themselves so that
// code can take a pool, a connection or a transaction (and a fake in tests).
// *Pool and *pgxpool.Pool satisfy the same ones, checked at compile time, so
// code written against them moves from pgxpool to this package by changing
// the constructor and nothing else.

// Querier runs statements. *Pool, *Conn, *pgxpool.Pool, *pgxpool.Conn,
// *pgx.Conn and pgx.Tx all satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
}

// DB is a Querier that also begins transactions and pings. *Pool, *Conn,
// *pgxpool.Pool, *pgxpool.Conn and *pgx.Conn satisfy it.
type DB interface {
	Querier
	Begin(ctx context.Context) (pgx.Tx, error)
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
	Ping(ctx context.Context) error
}

// Pooler is what a pool of connections offers beyond DB: closing and
// resetting. *Pool and *pgxpool.Pool satisfy it.
type Pooler interface {
	DB
	Close()
	Reset()
}

// PooledConn is one connection on loan from a pool. *Conn and
// *pgxpool.Conn satisfy it.
type PooledConn interface {
	DB
	Release()
	Hijack() *pgx.Conn
	Conn() *pgx.Conn
}

var (
	_ Querier    = (*Pool)(nil)
	_ Querier    = (*Conn)(nil)
	_ Querier    = (*pgx.Conn)(nil)
	_ Querier    = (pgx.Tx)(nil)
	_ Querier    = (*Tx)(nil)
	_ DB         = (*Pool)(nil)
	_ DB         = (*Conn)(nil)
	_ DB         = (*pgx.Conn)(nil)
	_ Pooler     = (*Pool)(nil)
	_ PooledConn = (*Conn)(nil)
	_ pgx.Tx     = (*Tx)(nil)
	_ pgx.Rows   = (*poolRows)(nil)
	_ pgx.Row    = (*poolRow)(nil)

	// The same interfaces are met by pgxpool's types: the two are
	// interchangeable behind them.
	_ Querier    = (*pgxpool.Pool)(nil)
	_ DB         = (*pgxpool.Pool)(nil)
	_ Pooler     = (*pgxpool.Pool)(nil)
	_ PooledConn = (*pgxpool.Conn)(nil)
)
