// Package failover holds the failover harness: tests that move a real
// database under load, on loopback servers of their own (internal/servers),
// and measure a wardpool driver beside its peer in the same run: pgxward
// beside pgxpool, redisward beside go-redis.
//
// The scenarios are a PostgreSQL promotion (stop the primary, promote the
// standby), a demoted writer (the node the pools use turns read-only while
// new connections go to another), a black hole (a proxy that stops
// forwarding without closing anything), and a Sentinel failover of Redis.
// Each prints its figures as a table with t.Logf and asserts only what does
// not depend on timing: which node a connection was lent to, counts bounded
// by the load, and loose bounds on how long a caller can be held. Run
// them with -v to see the tables:
//
//	WARDPOOL_FULL=1 WARDPOOL_PG_BIN=<dir of initdb> go test -race -count=1 -v ./internal/failover/
//
// Without PostgreSQL's programs (WARDPOOL_PG_BIN, or initdb on PATH) or
// redis-server, the scenarios skip with a message saying so. The
// promotion, the demoted writer and the Sentinel failover run only in the
// full run (WARDPOOL_FULL=1, as ./scripts/test sets), where the black hole
// lasts 10 s; a plain go test runs the black hole alone, for 2 s.
package failover
