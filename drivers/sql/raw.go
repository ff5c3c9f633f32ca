package sqlward

import (
	"database/sql"
)

// Unwrap returns the driver's own connection behind driverConn, the value
// (*sql.Conn).Raw passes its function, when it is one of this package's
// connections; any other value it returns as it is. So a Raw function
// written for the driver keeps working with one call added:
//
//	err := conn.Raw(func(driverConn any) error {
//		pc := sqlward.Unwrap(driverConn).(*stdlib.Conn).Conn()
//		return pc.PgConn().CheckConn()
//	})
//
// The connection stays the pool's: use it only inside the Raw function,
// and do not close it (database/sql gives it back when Raw returns).
func Unwrap(driverConn any) any {
	if h, ok := driverConn.(*handle); ok {
		if dc := h.Unwrap(); dc != nil {
			return dc
		}
	}
	return driverConn
}

// Raw is (*sql.Conn).Raw with f given the driver's own connection (see
// Unwrap) rather than this package's. On a *sql.Conn of another pool it is
// (*sql.Conn).Raw.
func Raw(c *sql.Conn, f func(driverConn any) error) error {
	return c.Raw(func(driverConn any) error { return f(Unwrap(driverConn)) })
}
