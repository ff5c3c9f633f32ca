// Package pgxward is a pool of pgx v5 connections run by wardpool's
// wardpool.Keeper: a drop-in for *pgxpool.Pool with a ward in front of the
// server and a leak watch behind it.
//
// The package lives in the folder drivers/pgx and is named pgxward, so that
// it never shadows pgx itself in a file that imports both:
//
//	import pgxward "github.com/wardpool/wardpool/drivers/pgx"
//
//	pool, err := pgxward.New(ctx, "postgres://app:secret@127.0.0.1:5432/app?pool_max_conns=8")
//	if err != nil {
//		return err
//	}
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
// a transaction never ended; Config.AcquireTimeout, a bound on the wait
// for a connection apart from the query's context (pgx PR #2350 asks it of
// pgxpool); and the stall watch (Config.StallAfter, on by default), which
// says once, with where each holder acquired, when callers have waited
// that long while no connection came back: the pool a handler deadlocks by
// querying it while it holds a transaction (pgx#713, pgx#2499).
//
// As in pgxpool, Rows give their connection back when closed or read to the
// end, a Row when scanned, batch results when closed, a transaction when
// committed or rolled back. A connection that comes back closed, busy or
// inside a transaction is destroyed, not reused; an idle one is pinged
// before it is lent when it sat for more than a second, and one that fails
// the ping is replaced without the caller seeing an error.
//
// # Failover
//
// Every error the server sends on a pooled connection is read by
// Config.Classify, whichever method sent the query. By default
// (DefaultClassify) 25006 read_only_sql_transaction, 57P01
// admin_shutdown, 57P02, 57P03 and class 08 say that every connection to
// the server is wrong now: when the connection comes back, the pool's
// generation is retired (wardpool.Loan.Reset), idle connections at once
// and lent ones as they come back, so after a failover no connection to
// the demoted primary is lent again, and the next callers dial afresh
// (with a host list and target_session_attrs=read-write, to the new
// primary). A reset is tied to the failing connection's generation: when
// many connections get 25006 at once, the first reset retires them all
// and the others reset nothing, so the connections dialled since are
// kept. Resets are counted by cause in WardStats().ResetCauses and by the
// metrics package (wardpool_resets_total{cause}), and each is logged once
// at warning level. Set Classify to change the list (wardpool.Destroy
// closes the failing connection alone), or to wardpool.ReuseAll to keep
// every connection, as pgxpool does:
//
//	c.Classify = func(err error) (wardpool.Verdict, string) {
//		if v, cause := pgxward.DefaultClassify(err); cause != "57P01" {
//			return v, cause
//		}
//		return wardpool.Destroy, "" // a backend killed alone: close it, keep the rest
//	}
//
// # A server that vanishes
//
// A server whose host is gone, or behind a link or firewall that drops
// packets without a reset, answers nothing, and the kernel alone decides
// when its connections are dead: with pgx's dialer, after about 15
// minutes of retransmissions for a query in flight, and Go's keepalive
// (15 s of quiet, then 9 probes 15 s apart) for an idle one. ParseConfig
// dials with DeadPeerDialer(DefaultDeadPeerTimeout) instead: the kernel
// closes such a connection at most 5 s after the server's last packet,
// plus a second (TCP_USER_TIMEOUT on Linux for a query in flight and for a
// dial's SYN; keepalive probes from 2 s of quiet, 1 s apart, for an idle
// one). The ping before an idle connection is lent then fails at once and
// the connection is replaced unseen; a caller without a deadline is held
// at most that long by a query on it. A server that is alive acknowledges
// every packet, so a long query is not cut. Set ConnConfig.DialFunc to
// DeadPeerDialer(d) for another bound, or to DeadPeerDialer(0) for pgx's.
//
// Measured in internal/failover (TestSilentLinkPG: the server in a network
// namespace whose link goes silent for 10 s under 16 writers with 500 ms
// deadlines): every connection open at the silence was closed within about
// 6 s, pgxpool's and those of pgxward with pgx's dialer all stayed open
// through it; no caller of either pool went past its deadline by more than
// a few tens of milliseconds; after the link returned pgxward's first write
// succeeded within about 0.1 s, pgxpool's after about 3 s, as its dials
// still waited on SYN retransmissions (the figures are in that package's
// doc).
//
// # Where it differs from pgxpool
//
//   - A connection that answers 25006, 57P01, 57P02, 57P03 or a class 08
//     error resets the pool when it comes back (see Failover above);
//     pgxpool keeps it, and writes fail on it until it ages out.
//   - Errors: Acquire on a closed pool fails with ErrClosed; one the Ward
//     refuses fails at once with a *wardpool.ShedError (errors.Is ErrShed); a
//     failed dial's error reads "pgxward: connect: …" and wraps pgx's
//     *pgconn.ConnectError; one whose context ends is an *AcquireError (the
//     Keeper's) that unwraps to ctx's error and says how many connections
//     were busy, how many callers waited, how many loans were past
//     LeakAfter and the last dial error; a breaker's *ShedError carries the
//     dial error behind it.
//   - Close blocks until every loan is back, as pgxpool's does;
//     CloseContext bounds the wait.
//   - MaxConnIdleTime and MaxConnLifetime of zero mean no limit (pgxpool
//     closes every idle connection at each health check when the idle
//     time is zero). Idle and lifetime retirement happen when a connection
//     passes its age, not at the next HealthCheckPeriod, which is unused.
//   - MinConns keeps that many connections open, idle or acquired, and
//     MinIdleConns that many idle, both dialled in the background as in
//     pgxpool. One difference: an idle connection past MaxConnIdleTime is
//     closed even when that leaves fewer than MinConns, and another is
//     dialled, where pgxpool keeps it.
//   - AfterRelease runs in the releasing goroutine, not a new one.
//   - Stat.AcquireCount counts AcquireAllIdle's loans. Stat.WardStats gives
//     every figure of the Keeper, and Pool.WardStats, Pool.Limits and
//     Pool.Leaked make the Pool a metrics.Source as it is.
//   - Tracers: an AcquireTracer or ReleaseTracer on ConnConfig.Tracer is
//     called as pgxpool calls it: one of this package's form is given the
//     *Pool, one written for pgxpool a stand-in *pgxpool.Pool (see
//     FromPgxpool). pgxpool's own TestTraceAcquire and TestTraceRelease
//     pass against this package. The query tracers of pgx work as usual.
//   - ShouldPing is asked only about idle connections: one just opened is
//     lent without a ping.
//   - Every dial is bounded by Config.DialTimeout (one minute, the bound
//     pgxpool gives its background attempts), and a background dial that
//     fails is tried again under the Keeper's backoff, not at the next
//     HealthCheckPeriod.
//   - ParseConfig sets ConnConfig.DialFunc to
//     DeadPeerDialer(DefaultDeadPeerTimeout), so that a connection to a
//     server that vanished is closed within about 6 s (see A server that
//     vanishes above); pgx's ParseConfig leaves a plain net.Dialer.
//   - A Config must still come from ParseConfig; NewWithConfig returns an
//     error wrapping ErrConfig where pgxpool panics.
package pgxward
