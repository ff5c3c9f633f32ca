package wardpool

import "os"

// Branch lin only: what the linearizability check does differently while
// the runtime still has the lock-free lane (Config.LockEveryLoan). Where
// Config.LockEveryLoan is gone, this file no longer builds: delete it, and
// the call to linLockEveryLoan.

// linLockEveryLoan shuts the lane when WARDPOOL_LINEAR_LOCK_EVERY_LOAN is
// set: every loan through the lock and the Pool, every return through the
// lock or the inbox. Unset, the Keeper has its default configuration.
func linLockEveryLoan(cfg *Config[*res]) {
	cfg.LockEveryLoan = os.Getenv("WARDPOOL_LINEAR_LOCK_EVERY_LOAN") != ""
}
