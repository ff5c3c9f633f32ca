// Package wardpool is a resource pool ready to use: Keeper lends resources
// (database connections, Redis clients, anything opened and closed) to
// concurrent callers, dials and closes them outside its lock, queues callers
// in strict arrival order when every resource is out, and runs one timer for
// eviction, MinIdle and the leak watch. Config.AcquireTimeout bounds a
// caller's wait apart from its context, and the stall watch
// (Config.StallAfter) says when callers wait while no loan comes back.
//
// Every decision the Keeper carries out (which resource to lend, whether it
// is fresh, whether to dial, wait or refuse, what to retire) is an answer of
// the state machine it holds, pool.Pool; the guards in front of the backend
// are package ward's. The Keeper makes no rule of its own.
//
//	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
//		Limits: pool.Limits{Size: 8, Idle: 8, Keep: 5 * time.Minute},
//		Dial:   dial,
//		Close:  func(c *conn) error { return c.Close() },
//	})
//	...
//	l, err := k.Acquire(ctx)
//	if err != nil {
//		return err
//	}
//	defer l.Release()
//	use(l.Value())
//
// After a failover every resource made before may be wrong (a database
// that turned read-only): Reset retires them all, and Loan.Reset does so on
// the word of one that failed, once per generation, as Config.Classify
// judges its error (each driver has a default classifier; see Verdict).
//
// Classes of callers (Config.Classes) share one pool with room reserved:
// interactive requests with two connections of eight kept for them while
// they come, batch jobs with the rest, and all eight while no interactive
// caller has come for a second. A caller's class is in its context
// (WithClass), so a driver's methods carry it; each class queues apart,
// and when a resource frees the Pool says whose turn it is (pool.Class
// has the rule). Stats.Classes has each class's books.
//
// A Keeper is safe for concurrent use; Acquire and Release allocate nothing
// in steady state. The drivers (drivers/pgx, drivers/redis, drivers/sql) are
// Keepers with a peer's API in front. DESIGN.md, at the module's root, says
// how the runtime is built.
package wardpool
