package sqlward

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// conn is one driver connection as the Keeper holds it and as database/sql
// sees it. It has every optional method database/sql looks for, answering
// driver.ErrSkip (or the documented fallback) when the driver's connection
// lacks one, and it watches the errors that pass through for
// driver.ErrBadConn.
//
// database/sql uses a connection from one goroutine at a time and orders
// its uses with its own locks; the Keeper's lock orders one borrower after
// the next. No field needs a lock of its own.
type conn struct {
	base driver.Conn

	// The optional interfaces of base, looked up once at dial.
	resetter  driver.SessionResetter
	pinger    driver.Pinger
	validator driver.Validator
	prepCtx   driver.ConnPrepareContext
	beginTx   driver.ConnBeginTx
	execer    driver.ExecerContext
	queryer   driver.QueryerContext
	checker   driver.NamedValueChecker

	loan pool.Loan[*conn] // the current loan; zero while idle
	bad  bool             // the driver said ErrBadConn during this loan
	back time.Time        // when it last came back (for PingIdle)

	// stmts keeps the statements prepared on base for reuse by later
	// borrowers, by query (see Config.StmtCache); nil when the cache is
	// off. Only the borrower and, after the last loan, the Keeper's close
	// touch it.
	stmts *stmtCache
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

func newConn(dc driver.Conn, stmtCache int) *conn {
	c := &conn{base: dc}
	if stmtCache > 0 {
		c.stmts = newStmtCache(stmtCache)
	}
	c.resetter, _ = dc.(driver.SessionResetter)
	c.pinger, _ = dc.(driver.Pinger)
	c.validator, _ = dc.(driver.Validator)
	c.prepCtx, _ = dc.(driver.ConnPrepareContext)
	c.beginTx, _ = dc.(driver.ConnBeginTx)
	c.execer, _ = dc.(driver.ExecerContext)
	c.queryer, _ = dc.(driver.QueryerContext)
	c.checker, _ = dc.(driver.NamedValueChecker)
	return c
}

// watch notes a driver.ErrBadConn in err and returns err unchanged.
func (c *conn) watch(err error) error {
	if err != nil && errors.Is(err, driver.ErrBadConn) {
		c.bad = true
	}
	return err
}

// Close gives the connection back to the Keeper, or destroys it when the
// driver reported it broken. database/sql calls it once per Connect.
func (c *conn) Close() error {
	l := c.loan
	c.loan = pool.Loan[*conn]{}
	if c.bad {
		c.bad = false
		l.Destroy()
		return nil
	}
	l.Release()
	return nil
}

// Unwrap returns the driver's own connection. It is what sqlward.Unwrap
// and sqlward.Raw reach through.
func (c *conn) Unwrap() driver.Conn { return c.base }

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext hands out the statement this connection already has
// prepared for query when the cache holds one, and otherwise prepares it
// and, room permitting, keeps it for the next borrower.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.stmts != nil {
		if cs := c.stmts.get(query); cs != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			cs.refs++
			return &stmt{base: cs.base, c: c, cached: cs}, nil
		}
	}
	s, err := c.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.stmts != nil {
		if cs, evicted := c.stmts.put(query, s); cs != nil {
			if evicted != nil {
				_ = evicted.Close() // as database/sql ignores a statement's Close error
			}
			cs.refs++
			return &stmt{base: s, c: c, cached: cs}, nil
		}
	}
	return &stmt{base: s, c: c}, nil
}

// prepare prepares query on the driver's connection.
func (c *conn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	var s driver.Stmt
	var err error
	if c.prepCtx != nil {
		s, err = c.prepCtx.PrepareContext(ctx, query)
	} else {
		if err = ctx.Err(); err != nil {
			return nil, err
		}
		s, err = c.base.Prepare(query)
	}
	if err != nil {
		return nil, c.watch(err)
	}
	return s, nil
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.beginTx != nil {
		tx, err := c.beginTx.BeginTx(ctx, opts)
		return tx, c.watch(err)
	}
	// database/sql's own rule for drivers without BeginTx.
	if opts.Isolation != driver.IsolationLevel(0) {
		return nil, errors.New("sqlward: the driver does not support non-default isolation levels")
	}
	if opts.ReadOnly {
		return nil, errors.New("sqlward: the driver does not support read-only transactions")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the fallback database/sql itself uses
	tx, err := c.base.Begin()
	return tx, c.watch(err)
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.execer == nil {
		return nil, driver.ErrSkip
	}
	r, err := c.execer.ExecContext(ctx, query, args)
	return r, c.watch(err)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.queryer == nil {
		return nil, driver.ErrSkip
	}
	r, err := c.queryer.QueryContext(ctx, query, args)
	return r, c.watch(err)
}

// Ping pings through the driver, or reports nil when it cannot ping.
func (c *conn) Ping(ctx context.Context) error {
	if c.pinger == nil {
		return nil
	}
	return c.watch(c.pinger.Ping(ctx))
}

// ResetSession is what database/sql calls before reusing a connection it
// kept idle; with OpenDB it keeps none and the Keeper resets instead. It
// passes the call through.
func (c *conn) ResetSession(ctx context.Context) error {
	if c.resetter == nil {
		return nil
	}
	return c.watch(c.resetter.ResetSession(ctx))
}

// IsValid reports whether the connection may be reused: not reported broken
// and, when the driver can say, valid by its account.
func (c *conn) IsValid() bool {
	if c.bad {
		return false
	}
	return c.validator == nil || c.validator.IsValid()
}

// CheckNamedValue passes to the driver's checker, or says driver.ErrSkip so
// that database/sql applies its default conversion.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker == nil {
		return driver.ErrSkip
	}
	return c.checker.CheckNamedValue(nv)
}

// stmt is a prepared statement of a conn, watching its errors for
// driver.ErrBadConn. When cached is set, base belongs to the connection's
// cache, and Close leaves it prepared for the next borrower.
type stmt struct {
	base   driver.Stmt
	c      *conn
	cached *cachedStmt
	closed bool
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// Close closes the driver's statement, or when the connection's cache
// keeps it, leaves it prepared for the next borrower.
func (s *stmt) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cached != nil {
		s.cached.refs--
		if !s.cached.dropped || s.cached.refs > 0 {
			return nil
		}
	}
	return s.base.Close()
}

// watch notes a driver.ErrBadConn in err, as conn.watch does, and takes a
// cached statement that failed out of the cache: an error may mean the
// server no longer has it as it was (DEALLOCATE, a changed table). It
// returns err unchanged.
func (s *stmt) watch(err error) error {
	if err != nil && s.cached != nil {
		s.c.stmts.drop(s.cached) // closed by the last Close of a stmt holding it
	}
	return s.c.watch(err)
}

func (s *stmt) NumInput() int { return s.base.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	//lint:ignore SA1019 passing through the driver's own method
	r, err := s.base.Exec(args)
	return r, s.watch(err)
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	//lint:ignore SA1019 passing through the driver's own method
	r, err := s.base.Query(args)
	return r, s.watch(err)
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := s.base.(driver.StmtExecContext); ok {
		r, err := e.ExecContext(ctx, args)
		return r, s.watch(err)
	}
	vals, err := values(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Exec(vals)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := s.base.(driver.StmtQueryContext); ok {
		r, err := q.QueryContext(ctx, args)
		return r, s.watch(err)
	}
	vals, err := values(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Query(vals)
}

// CheckNamedValue asks the statement's checker, then the connection's, then
// lets database/sql apply its default.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.base.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}

// values turns named arguments into positional ones for a driver without
// the context methods, refusing names it cannot pass.
func values(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("sqlward: the driver does not support named arguments")
		}
		out[i] = a.Value
	}
	return out, nil
}
