// Package failover holds the failover harness: tests that move a real
// database under load, on loopback servers of their own (internal/servers),
// and measure a wardpool driver beside its peer in the same run: pgxward
// beside pgxpool, redisward beside go-redis.
//
// The scenarios are a PostgreSQL promotion (stop the primary, promote the
// standby), a demoted writer (the node the pools use turns read-only while
// new connections go to another), a black hole (a proxy that stops
// forwarding without closing anything: a hung server, as the client's
// kernel still gets its acknowledgements), a silent link (the server in a
// network namespace whose link goes down: a vanished host, as the client's
// kernel sees it), and a Sentinel failover of Redis. Each prints its
// figures as a table with t.Logf and asserts only what does not depend on
// timing: which node a connection was lent to, counts bounded by the load,
// and loose bounds on how long a caller can be held. Run them with -v to
// see the tables:
//
//	WARDPOOL_FULL=1 WARDPOOL_PG_BIN=<dir of initdb> go test -race -count=1 -v ./internal/failover/
//
// Without PostgreSQL's programs (WARDPOOL_PG_BIN, or initdb on PATH) or
// redis-server, the scenarios skip with a message saying so; the silent
// link also skips, saying why, without root or the ip command. The
// promotion, the demoted writer, the silent link and the Sentinel failover
// run only in the full run (WARDPOOL_FULL=1, as ./scripts/test sets), where
// the black hole lasts 10 s; a plain go test runs the black hole alone,
// for 2 s.
//
// # The silent link
//
// TestSilentLinkPG and TestSilentLinkRedis take the link down for 10 s
// under 16 writers per pool, each call with a 500 ms deadline and a 10 ms
// pause after a failure. Each loaded pool has 4 connections beyond its
// writers, opened before the load; each side also has an idle pool of 4
// connections, and makes one call without a deadline 1 s into the silence
// (capped at a minute by the harness). Every pool dials an address of its
// own in the namespace, so the kernel's table (/proc/net/tcp, read every
// 50 ms) says when each of its sockets left the established state. The
// sides: the driver with its defaults, the driver with its peer's dialer
// (the dead-peer bound off: what the default buys), and the peer.
//
// The bound the drivers set by default (drivers/internal/deadpeer): a
// connection whose server stopped answering is closed by the kernel at
// most DefaultDeadPeerTimeout (5 s) after the server's last packet, plus
// the keepalive interval (1 s): TCP_USER_TIMEOUT for bytes in flight and
// for a dial's SYN, keepalive probes from 2 s of quiet for an idle
// connection. The tests assert it for the driver with its defaults (every
// socket open at the silence closed within 6 s, plus a second for the
// sampling), no caller past its deadline by more than the peer's longest
// plus 100 ms, a call without a deadline held at most twice the bound plus
// a second, and a success on every side after the link returns (the load
// goes on until each side has one, up to 30 s).
//
// Measured 2026-12-03 on the shared 2-CPU machine, PostgreSQL 15, Redis
// 7.0.15, go test -race; two runs, "a, b" (each run has every side):
//
//	PostgreSQL                         pgxward                 pgxward, pgx's dialer  pgxpool
//	sockets open at the silence        24 (4 idle)             24 (4 idle)            24 (4 idle)
//	the last of them closed after      6.1, 6.2 s              open at return         open at return
//	still open when the link returned  0, 0                    24, 24                 24, 24
//	longest past a caller's deadline   13, 11 ms               13, 27 ms              31, 32 ms
//	calls >100 ms past their deadline  0, 0                    0, 0                   0, 0
//	calls failed (500 ms deadline)     304, 304                368, 365               416, 405
//	dials during the silence (*)       60, 60                  40, 40                 20, 20
//	  of them open at its end          20, 20                  40, 40                 20, 20
//	first success after the return     82, 40 ms               1912, 1751 ms          3611, 3291 ms
//	call without a deadline, 1 s in    5.0, 5.0 s: error (**)  11.3, 11.4 s: ok       12.7, 12.4 s: ok
//	idle pool's first call after it    310, 264 ms             49, 38 ms              61, 24 ms
//
//	Redis                              redisward                redisward, go-redis's dialer  go-redis
//	sockets open at the silence        24 (4 idle)              24 (4 idle)                   24 (4 idle)
//	the last of them closed after      6.1, 6.1 s               open at return                open at return
//	still open when the link returned  0, 0                     7, 7 (4, 4 idle)              7, 7 (4, 4 idle)
//	longest past a caller's deadline   4508, 4501 ms            4510, 4501 ms                 4510, 4505 ms
//	calls >100 ms past their deadline  16, 16                   19, 19                        19, 19
//	calls failed (500 ms deadline)     176, 160                 152, 136                      136, 136
//	first success after the return     74, 36 ms                72, 71 ms                     23, 54 ms
//	call without a deadline, 1 s in    5.0, 5.0 s: i/o timeout  5.0, 5.0 s: i/o timeout       9.1, 9.1 s: ok
//	idle pool's first call after it    100, 502 ms              1, 4 ms                       25, 86 ms
//
// (*) pgx dials through DialFunc for a connection and for the cancel
// request it sends when it gives up on a query. (**) connect: connection
// timed out.
//
// What it shows:
//
//   - pgxward closes every connection open at the silence within about 6 s
//     (the bound, with the sampling); pgxpool's, and pgxward's with pgx's
//     dialer, stay open through the 10 s: those the load was using were
//     given up by pgx at the caller's deadline, but their sockets wait for
//     pgx's cancel request, itself a dial into the silence (15 s), and the
//     idle ones are not probed before Go's 15 s of keepalive quiet. Had the
//     host not come back, pgxpool's idle connections would be found by a
//     caller's deadline or after Go's 9 keepalive probes, 2.5 minutes.
//   - No caller is held past its deadline by the silence in either
//     PostgreSQL pool (tens of milliseconds: scheduling). Redis callers
//     are held to go-redis's ReadTimeout (5 s by default, which the
//     context does not shorten unless ContextTimeoutEnabled is set): 4.5 s
//     past a 500 ms deadline in every client alike.
//   - After the return pgxward writes again within a tenth of a second
//     or so. The bound ends each dial whose SYN went unanswered after 5 s,
//     so the dials it had in flight at the return had begun 4 s before it
//     (5.5 to 6.1 s into the silence, in a third run) and were still
//     retransmitting at short intervals. pgxpool's 20 dials, which have no
//     connect timeout, had all begun in the first second of the silence
//     (0.5 to 1.1 s in) and were in long SYN backoff: its first write came
//     3.3 to 3.6 s after the return. pgxward with pgx's dialer (its dials
//     give up after DialTimeout, a minute) is in between. pgx's dials
//     include the cancel request it sends when it gives up on a query
//     (DialFunc serves both).
//   - The price of the bound: a call without a deadline fails after 5 s
//     with "connection timed out" where pgxpool's waits and succeeds once
//     the link returns, 12 s later (a host that never returns would hold
//     it for the kernel's 2 minutes of SYN retries, or 15 minutes of
//     retransmissions for a query in flight); and an idle pool redials its
//     connections after an outage longer than the bound (0.1 to 0.5 s for
//     the first call after it) where the peers' survive a 10 s one.
//
// # The Sentinel failover
//
// TestRedisSentinelFailover runs 32 writers (INCR, a 1 s deadline each)
// per client on a master with one replica and a Sentinel, calls SENTINEL
// FAILOVER, and demotes the old master (REPLICAOF) as soon as Sentinel
// names the new one. The sides, each a pool of 40 on the same
// FailoverOptions: redisward (FromFailoverOptions), redisward+hold (the
// same with HoldOnFailover 10 s) and go-redis's NewFailoverClient. Both
// redisward sides retire the old master's connections at the first
// READONLY and send each refused write again (Options.MaxRetries, 3 by
// default) on a connection to the new master; go-redis resends on
// READONLY too. Measured 2026-12-03 on the shared 2-CPU machine, Redis
// 7.0.15, go test -race; two runs, "a, b" (Sentinel switched after 1.48,
// 1.24 s; the demotion came 86, 261 ms later):
//
//	                                      redisward     redisward+hold  go-redis
//	writes failed                         0, 0          0, 0            0, 0
//	slowest write, 1st s after demotion   311, 395 ms   503, 759 ms     658, 347 ms
//	acked writes lost (*)                 2382, 4129    2460, 3308      1219, 3064
//	open on the old master 1 s after      0, 0          0, 0            0, 0
//	dials to the new master, 1st s        40, 40        40, 40          147, 32
//	calls                                 11004, 16200  9688, 16698     8037, 19883
//
// Before the resend (one run, without the hold side), 14 of redisward's
// writes failed with READONLY, 7 of them after the demotion, all within
// 9 ms of it; go-redis's none. (*) The writes the old master acknowledged
// between the promotion and its demotion, lost with it: asynchronous
// replication and Sentinel, not the clients, so not asserted. The test
// asserts, for both redisward sides, no more failures than connections,
// none a second after the demotion, and no write ending in a reply from
// the server (a refused write is sent again). The hold does not show
// here: Sentinel names the new master before the old one refuses
// writes, so the first dial after the reset reaches it, with or without
// the hold; its slowest write waits for that dial before the others
// dial (the spread is the machine's). The hold matters when dials would
// fail (a master down, not demoted): the PostgreSQL promotion shows it.
package failover
