// Package poolname gives the pools of the runtime and of the drivers
// their default names ("wardpool-1", "sqlward-2",
// "pgxward-3@host:port"). It imports nothing of ours, so that the
// runtime can import it.
package poolname

import (
	"strconv"
	"sync/atomic"
)

// pools counts the pools named by default in this process, across drivers.
var pools atomic.Int64

// Default returns the next default name: driver, "-", a number counting the
// pools of the process from 1, and "@"+addr when addr is not empty, as
// HikariCP names its pools HikariPool-1.
func Default(driver, addr string) string {
	s := driver + "-" + strconv.FormatInt(pools.Add(1), 10)
	if addr != "" {
		s += "@" + addr
	}
	return s
}
