package pgxward

import (
	"log/slog"
	"time"

	"github.com/wardpool/wardpool"
)

// The leak reports' messages: the Keeper's own, which every wardpool driver
// and metrics.LeakLog use too, so that one log filter finds them all.
const (
	leakMessage         = "wardpool: a loan is held longer than LeakAfter"
	leakReturnedMessage = "wardpool: a loan reported as held too long came back"
)

// logLeak is the default OnLeak: the Keeper's warning, with the server
// process of the connection, so that it can be found in pg_stat_activity.
func logLeak(log *slog.Logger, l wardpool.Leak[*res], after time.Duration) {
	pid := l.Item.conn.PgConn().PID()
	if l.Returned {
		log.Warn(leakReturnedMessage, "held", l.Held, "stack", string(l.Stack), "pid", pid)
		return
	}
	log.Warn(leakMessage, "held", l.Held, "leak_after", after, "stack", string(l.Stack), "pid", pid)
}
