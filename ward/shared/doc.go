// Package shared holds the guards whose state lives outside the process, in
// a [Store] every replica of a service reaches, so that the replicas act as
// one: [Breaker], a circuit breaker they open and probe together; [Counter]
// (the two-window sliding counter) and [Period], one rate or quota they
// spend together; and [Budget], one connection budget for a backend that
// every replica's pool leases its slots from.
//
// These guards do I/O, which is why they live here and not in package ward:
// ward reads no clock, starts nothing and touches no network, and a test
// there holds it to that. Here every call is a round trip to the store,
// bounded by the [Link]'s Timeout on top of the caller's ctx. Call them
// outside any lock.
//
// # What is atomic
//
// Each Store method is one atomic step and one round trip (a single command
// or one script in Redis): an increment, a set-if-absent, the two-window
// counter's read-compare-increment, and each step of a budget. No guard reads
// a value and writes a successor in two trips; the seed's point about shared
// breakers holds for all of them, since the moment many replicas act at once
// is exactly when read-then-write loses updates. All the keys of one guard
// share a hash tag, {key}, so that a Redis Cluster keeps them in one slot
// and a script may touch them together.
//
// # Time
//
// Expiry runs on the store's clock (Redis's, or the clock given to
// [MemStore]). The breaker's cooldown and the windows of Counter and Period
// are compared on the callers' clocks, which should agree to well within
// them. A budget's memberships are leased on the store's clock alone.
//
// # When the store is unreachable
//
// Each guard makes a documented local decision within its timeout, returns
// the store's error beside it, and counts it (Stats: round trips, store
// errors, fallbacks): the breaker falls back to a local breaker with the same
// policy, the counter and the quota to a local one with the limit given for
// that case, and the budget keeps what it holds and grows no further than
// the room of its last reply. A caller is never held by a dead store past
// the timeout.
//
// A wardpool.Keeper takes a Budget and a Breaker in its Config.Shared and asks
// them before each dial, outside its lock; see keeper_shared.go at the module's root.
//
// [MemStore] keeps everything in one process's memory, on a clock of the
// caller's choosing; it is what tests and the virtual-time fleet run on.
// drivers/redis has the Store on Redis (a single server, Sentinel or
// Cluster).
package shared
