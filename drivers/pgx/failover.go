package pgxward

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardpool/wardpool"
)

// DefaultClassify is the classifier a Pool uses when Config.Classify is
// nil. It reads the SQLSTATE of an error the server sent (a
// *pgconn.PgError) and answers wardpool.Reset, with the code as cause, for
// the errors that say every connection to this server is wrong now:
//
//   - 25006 read_only_sql_transaction: the server turned read-only (a
//     primary demoted, or default_transaction_read_only switched on);
//   - 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now:
//     the server is going down or not up yet;
//   - class 08, connection exception.
//
// It answers wardpool.Full, cause "53300", for 53300 too_many_connections
// (max_connections reached, or the slots left are reserved): a dial the
// server refuses so, while the pool has other connections, does not fail
// its caller, who waits for one of them to be released (see
// pool.Pool.Unmade).
//
// Every other error is wardpool.Reuse: the query's own failure (a syntax
// error, a constraint) says nothing about the connection. Errors of the
// network or of pgx itself never reach a classifier (see Config.Classify).
//
// A write inside a transaction the application began READ ONLY gets 25006
// too. The pool tells the two apart where the server says which (see
// Config.Classify): a 25006 from a server that reports itself writable
// resets nothing and keeps its connection, whatever the classifier.
func DefaultClassify(err error) (wardpool.Verdict, string) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return wardpool.Reuse, ""
	}
	switch c := pe.Code; {
	case c == "25006", c == "57P01", c == "57P02", c == "57P03",
		len(c) == 5 && c[:2] == "08":
		return wardpool.Reset, c
	case c == "53300":
		return wardpool.Full, c
	}
	return wardpool.Reuse, ""
}

// ownReadOnly reports whether err is a 25006 read_only_sql_transaction on
// a connection whose server says it is writable: PostgreSQL 14 and later
// report default_transaction_read_only and in_hot_standby to every
// session, and with both off the error came from a transaction the
// application itself began READ ONLY (or SET TRANSACTION READ ONLY), which
// condemns no connection. Conn.Release reads it once the query is over,
// when the server's report of a change (a reload that turned the server
// read-only) has arrived. An older server reports neither: false.
func ownReadOnly(conn *pgx.Conn, err error) bool {
	pe, ok := err.(*pgconn.PgError)
	if !ok || pe.Code != "25006" {
		return false
	}
	pc := conn.PgConn()
	return pc.ParameterStatus("default_transaction_read_only") == "off" && pc.ParameterStatus("in_hot_standby") == "off"
}

// failure is the worst verdict the errors the server sent during one loan
// of a connection earned, with the cause and the error that earned it.
type failure struct {
	v     wardpool.Verdict
	cause string
	err   error
}

// onPgError returns the pgconn.Config.OnPgError of a connection being
// dialled for r: it classifies each error the server sends and keeps the
// worst verdict on r for Release, then leaves the decision to close the
// connection to next (pgx's own handler, which closes it on FATAL, or the
// user's), or keeps it open when next is nil.
func (p *Pool) onPgError(r *res, next pgconn.PgErrorHandler) pgconn.PgErrorHandler {
	return func(pc *pgconn.PgConn, pe *pgconn.PgError) bool {
		// Errors of the dial (the handshake, AfterConnect) are the dial's:
		// it fails, or goes on as AfterConnect decided. Skipping them also
		// keeps p.k unread until a borrower's query fails: the first
		// connections are dialled while NewWithConfig builds the Keeper.
		if r.conn == nil {
			return next == nil || next(pc, pe)
		}
		if v, cause := p.k.Classify(pe); v > r.fail.v {
			r.fail = failure{v: v, cause: cause, err: pe}
		}
		if next != nil {
			return next(pc, pe)
		}
		return true
	}
}
