// Package pgxward is a pool of pgx v5 connections run by wardpool's
// pool.Keeper: a drop-in for *pgxpool.Pool with a ward in front of the
// server and a leak watch behind it.
//
// The package lives in the folder drivers/pgx and is named pgxward, so that
// it never shadows pgx itself in a file that imports both:
//
//	import pgxward "github.com/wardpool/wardpool/drivers/pgx"
//
//	pool, err := pgxward.New(ctx, "postgres://app:secret@127.0.0.1:5432/app?pool_max_conns=8")
//	...
//	defer pool.Close()
//	var n int
//	err = pool.QueryRow(ctx, "SELECT 1").Scan(&n)
//
// Pool has the methods of *pgxpool.Pool (Acquire, AcquireAllIdle,
// AcquireFunc, Begin, BeginTx, Close, Config, CopyFrom, Exec, Ping, Query,
// QueryRow, Reset, SendBatch, Stat) and Conn those of *pgxpool.Conn.
// ParseConfig reads pgxpool's pool_* options with pgxpool's defaults, and
// Config has pgxpool's hooks with their meaning. Code written against the
// interfaces in this package (Querier, DB, Pooler, PooledConn), which both
// pools satisfy, moves from one to the other by changing the constructor.
//
// What it adds: Config.Ward (a Breaker that stops dialling a server that
// keeps refusing, a Bucket that spaces dials, a Shedder, a Limiter), and
// Config.LeakAfter, which reports connections held too long with the stack
// that took them: a QueryRow whose Row is never scanned, Rows never closed,
// a transaction never ended.
//
// As in pgxpool, Rows give their connection back when closed or read to the
// end, a Row when scanned, batch results when closed, a transaction when
// committed or rolled back. A connection that comes back closed, busy or
// inside a transaction is destroyed, not reused; an idle one is pinged
// before it is lent when it sat for more than a second, and one that fails
// the ping is replaced without the caller seeing an error.
package pgxward
