package pgxward

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// errRows is the Rows of a Query that failed before it had a connection or
// a result: it carries only the error.
type errRows struct{ err error }

func (errRows) Close()                                       {}
func (e errRows) Err() error                                 { return e.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (e errRows) Scan(...any) error                          { return e.err }
func (e errRows) Values() ([]any, error)                     { return nil, e.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }

// errRow is the Row of a QueryRow that could not get a connection.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// poolRows are the Rows of Pool.Query: pgx's rows, and the connection they
// give back once closed, read to the end, or failed.
type poolRows struct {
	r pgx.Rows
	c *Conn // nil once given back
}

func (rows *poolRows) Close() {
	rows.r.Close()
	if c := rows.c; c != nil {
		rows.c = nil
		c.Release()
	}
}

func (rows *poolRows) Err() error                    { return rows.r.Err() }
func (rows *poolRows) CommandTag() pgconn.CommandTag { return rows.r.CommandTag() }
func (rows *poolRows) FieldDescriptions() []pgconn.FieldDescription {
	return rows.r.FieldDescriptions()
}
func (rows *poolRows) RawValues() [][]byte  { return rows.r.RawValues() }
func (rows *poolRows) Conn() *pgx.Conn      { return rows.r.Conn() }
func (rows *poolRows) TypeMap() *pgtype.Map { return rows.r.TypeMap() }

func (rows *poolRows) Next() bool {
	if rows.r.Next() {
		return true
	}
	rows.Close()
	return false
}

func (rows *poolRows) Scan(dest ...any) error {
	err := rows.r.Scan(dest...)
	if err != nil {
		rows.Close()
	}
	return err
}

func (rows *poolRows) Values() ([]any, error) {
	v, err := rows.r.Values()
	if err != nil {
		rows.Close()
	}
	return v, err
}

// poolRow is the Row of Pool.QueryRow: its Scan gives the connection back,
// even when a Scan target panics.
type poolRow struct {
	r pgx.Row
	c *Conn // nil once given back
}

func (row *poolRow) Scan(dest ...any) error {
	c := row.c
	if c == nil {
		// Scanned before: pgx's row answers (it is closed by now).
		return row.r.Scan(dest...)
	}
	row.c = nil
	defer c.Release()
	return row.r.Scan(dest...)
}
