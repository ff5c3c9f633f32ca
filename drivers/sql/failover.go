package sqlward

import (
	"errors"

	"github.com/wardpool/wardpool"
)

// DefaultClassify is the classifier a Connector uses when Config.Classify
// is nil. database/sql's drivers report server errors each in their own
// type; this one reads the SQLSTATE of an error that has a SQLState()
// string method (pgx's stdlib errors are *pgconn.PgError, which has one)
// and answers wardpool.Reset, with the code as cause, for the codes that
// say every connection to this server is wrong now: 25006
// read_only_sql_transaction, 57P01 admin_shutdown, 57P02 crash_shutdown,
// 57P03 cannot_connect_now, and class 08, connection exception (the
// codes pgxward's DefaultClassify resets on); and wardpool.Full for 53300
// too_many_connections, so that a dial the server refuses for want of
// room waits for a connection the pool has lent to come back (see
// pool.Pool.Unmade). Every other error is
// wardpool.Reuse; so is every error of a driver whose errors carry no
// SQLState method: give such a driver a Classify of its own.
//
// A write inside a transaction the application began READ ONLY gets 25006
// too, and database/sql hides the connection's word on whether the server
// itself is read-only (pgxward reads it), so here it resets the pool: an
// application that writes in its own read-only transactions should answer
// wardpool.Reuse for 25006 with a Classify of its own.
func DefaultClassify(err error) (wardpool.Verdict, string) {
	var st interface{ SQLState() string }
	if !errors.As(err, &st) {
		return wardpool.Reuse, ""
	}
	switch c := st.SQLState(); {
	case c == "25006", c == "57P01", c == "57P02", c == "57P03",
		len(c) == 5 && c[:2] == "08":
		return wardpool.Reset, c
	case c == "53300":
		return wardpool.Full, c
	}
	return wardpool.Reuse, ""
}

// failure is the worst verdict the errors of one loan earned, with the
// cause and the error that earned it.
type failure struct {
	v     wardpool.Verdict
	cause string
	err   error
}
