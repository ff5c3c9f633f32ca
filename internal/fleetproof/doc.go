// Package fleetproof holds the proof, on real servers, that a fleet of
// Keepers sharing one connection budget through Redis keeps a PostgreSQL
// within it: twenty Keepers of twenty connections each, a budget of forty,
// the backends counted in pg_stat_activity every 10 ms, a replica that dies
// without a word, and the Redis server stopped for three seconds and
// started again empty.
//
// TestFleetBudgetThroughFailover holds ten Keepers of ten, sharing a budget
// of twenty over a fake resource counted from Dial to Close, while the
// master of a Redis Cluster (three masters, three replicas, node timeout
// 2 s) that holds the budget's slot is killed, with and without churn, with
// a TTL shorter and longer than the failover, while a Sentinel-managed
// master is killed (the fleet on go-redis's failover client), and while a
// single Redis is down for 3 s. It logs one table: the most live, the time over the
// budget, the lowest live and the time under 90% of it, when the cluster
// promoted a replica and when the store answered again, acquire errors,
// fallbacks, store errors and reloads; one run beside them uses a Store
// that cannot reload the cluster's map, go-redis's ClusterClient alone.
//
// The package has no code of its own, only the tests, which run under
// ./scripts/test and skip elsewhere.
package fleetproof
