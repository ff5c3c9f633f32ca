// Package fleetproof holds the proof, on real servers, that a fleet of
// Keepers sharing one connection budget through Redis keeps a PostgreSQL
// within it: twenty Keepers of twenty connections each, a budget of forty,
// the backends counted in pg_stat_activity every 10 ms, a replica that dies
// without a word, and the Redis server stopped for three seconds and
// started again empty. It has no code of its own, only the test, which
// runs under ./scripts/test and skips elsewhere.
package fleetproof
