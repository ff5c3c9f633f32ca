package sqlward

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/poolerr"
)

// conn is one of the driver's connections as the Keeper holds it: the
// connection, its optional interfaces, and the statements prepared on it.
// It is used by one handle at a time, the one the Keeper lent it to; the
// Keeper's lock orders one borrower after the next, so no field needs a
// lock of its own.
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

	back time.Time // when it last came back (for PingIdle)

	// stmts keeps the statements prepared on base for every later loan,
	// by query, up to Config.StmtCache of them; nil when the cache is off.
	stmts map[string]driver.Stmt
	max   int // the cache's capacity
	// loanStmts are the statements prepared during the current loan that
	// the cache had no room for (or that failed): closed when the loan
	// ends, when database/sql has closed every Rows of it.
	loanStmts map[string]driver.Stmt
	// gen counts the times statements were closed (endLoan, closeStmts):
	// a stmt's remembered driver statement for this connection is good
	// while gen has not moved (see stmt.remembered). forget moves a
	// statement to loanStmts, where the lookup would find it until the
	// loan ends, so it need not count.
	gen uint64
}

func newConn(dc driver.Conn, stmtCache int) *conn {
	c := &conn{base: dc, max: stmtCache}
	if stmtCache > 0 {
		c.stmts = make(map[string]driver.Stmt)
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

// prepare prepares query on the driver's connection.
func (c *conn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	if c.prepCtx != nil {
		return c.prepCtx.PrepareContext(ctx, query)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.base.Prepare(query)
}

// stmt returns the driver's statement for query on this connection: the
// one kept, or the one prepared earlier in this loan, or a new one, kept
// when the cache has room and else closed when the loan ends.
func (c *conn) stmt(ctx context.Context, query string) (driver.Stmt, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	if s, ok := c.loanStmts[query]; ok {
		return s, nil
	}
	s, err := c.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.stmts != nil && len(c.stmts) < c.max {
		c.stmts[query] = s
		return s, nil
	}
	if c.loanStmts == nil {
		c.loanStmts = make(map[string]driver.Stmt)
	}
	c.loanStmts[query] = s
	return s, nil
}

// forget takes the statement for query out of the cache after it failed
// (the server may no longer have it as it was: DEALLOCATE, a changed
// table), to be closed when the loan ends; the next use prepares afresh.
func (c *conn) forget(query string) {
	s, ok := c.stmts[query]
	if !ok {
		return
	}
	delete(c.stmts, query)
	if prev, ok := c.loanStmts[query]; ok {
		_ = prev.Close()
	}
	if c.loanStmts == nil {
		c.loanStmts = make(map[string]driver.Stmt)
	}
	c.loanStmts[query] = s
}

// endLoan closes the statements of the loan that ends.
func (c *conn) endLoan() {
	if len(c.loanStmts) == 0 {
		return
	}
	c.gen++
	for q, s := range c.loanStmts {
		_ = s.Close() // as database/sql ignores a statement's Close error
		delete(c.loanStmts, q)
	}
}

// closeStmts closes every statement, as the connection closes.
func (c *conn) closeStmts() {
	c.endLoan()
	c.gen++
	for q, s := range c.stmts {
		_ = s.Close()
		delete(c.stmts, q)
	}
}

// handle is a connection as database/sql holds it. database/sql keeps its
// handles in its own idle pool, and a handle holds one of the Keeper's
// connections only while database/sql uses it: from Connect, or from the
// ResetSession database/sql calls before it uses an idle handle again, to
// the IsValid it calls as the handle comes back (which gives the
// connection back to the Keeper) or to Close. So the Keeper does the
// pooling, and database/sql's idle pool costs nothing but the handles.
//
// database/sql uses a handle from one goroutine at a time and orders its
// calls with the driverConn's lock; no field needs a lock of its own.
type handle struct {
	c       *Connector
	cn      *conn                // the connection on loan; nil between uses
	loan    wardpool.Loan[*conn] // its loan
	bad     bool                 // the driver said ErrBadConn during this loan
	fail    failure              // the worst verdict of this loan's errors (Config.Classify)
	pending error                // why the ResetSession could not borrow, for the next call
}

var (
	_ driver.Conn               = (*handle)(nil)
	_ driver.ConnPrepareContext = (*handle)(nil)
	_ driver.ConnBeginTx        = (*handle)(nil)
	_ driver.ExecerContext      = (*handle)(nil)
	_ driver.QueryerContext     = (*handle)(nil)
	_ driver.Pinger             = (*handle)(nil)
	_ driver.SessionResetter    = (*handle)(nil)
	_ driver.Validator          = (*handle)(nil)
	_ driver.NamedValueChecker  = (*handle)(nil)
)

// bind borrows a connection from the Keeper for h, bounded by ctx.
func (h *handle) bind(ctx context.Context) error {
	l, err := h.c.k.Acquire(ctx)
	if err != nil {
		return poolerr.Wrap(h.c.name, err)
	}
	h.cn, h.loan = l.Value(), l
	return nil
}

// ready makes sure h holds a connection: it returns the error of the
// ResetSession that could not borrow one, or borrows one now.
func (h *handle) ready(ctx context.Context) error {
	if h.cn != nil {
		return nil
	}
	if err := h.pending; err != nil {
		h.pending = nil
		return err
	}
	return h.bind(ctx)
}

// unbind gives the connection back to the Keeper, or destroys it when the
// driver reported it broken or Config.Classify judged one of its errors
// Destroy, or resets the Keeper (wardpool.Loan.Reset) when it judged one
// Reset.
func (h *handle) unbind() {
	cn, l, bad, f := h.cn, h.loan, h.bad, h.fail
	h.cn, h.loan, h.bad, h.fail = nil, wardpool.Loan[*conn]{}, false, failure{}
	if cn == nil {
		return
	}
	cn.endLoan()
	switch {
	case f.v == wardpool.Reset:
		l.Reset(f.cause, f.err)
	case bad || f.v == wardpool.Destroy:
		l.Destroy()
	default:
		l.Release()
	}
}

// watch notes a driver.ErrBadConn in err (the driver's own word: the
// connection is destroyed, and database/sql retries on another), or else
// has Config.Classify judge err, keeping the loan's worst verdict. It
// returns err unchanged.
func (h *handle) watch(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrBadConn) {
		h.bad = true
		return err
	}
	if v, cause := h.c.k.Classify(err); v > h.fail.v {
		h.fail = failure{v: v, cause: cause, err: err}
	}
	return err
}

// Unwrap returns the driver's connection on loan to h, nil between uses.
// It is what sqlward.Unwrap and sqlward.Raw reach through.
func (h *handle) Unwrap() driver.Conn {
	if h.cn == nil {
		return nil
	}
	return h.cn.base
}

// Close gives the connection back, or destroys it when the driver
// reported it broken. database/sql calls it when it lets go of the handle.
func (h *handle) Close() error {
	h.unbind()
	h.pending = nil
	return nil
}

// ResetSession is what database/sql calls before it uses an idle handle
// again: the handle borrows a connection from the Keeper, which checks it
// (its ResetSession, its ping) as the package doc says. When the Keeper
// cannot lend one (ctx ended, shed, closed), the error is kept for the
// call that follows, which returns it: database/sql would otherwise drop
// the handle and retry, and the caller would read only ctx's error.
func (h *handle) ResetSession(ctx context.Context) error {
	if h.cn != nil {
		return nil
	}
	h.pending = h.bind(ctx)
	return nil
}

// IsValid is what database/sql asks as the handle comes back: the handle
// gives its connection back to the Keeper (or destroys it when the driver
// reported it broken, and answers false).
func (h *handle) IsValid() bool {
	bad := h.bad
	h.unbind()
	return !bad
}

func (h *handle) Prepare(query string) (driver.Stmt, error) {
	return h.PrepareContext(context.Background(), query)
}

// PrepareContext prepares query on the connection on loan, or hands out
// the statement it already has for query; the statement returned stands
// for query on whichever connection the handle holds when it is used.
func (h *handle) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := h.ready(ctx); err != nil {
		return nil, err
	}
	s, err := h.cn.stmt(ctx, query)
	if err != nil {
		return nil, h.watch(err)
	}
	return &stmt{h: h, query: query, numInput: s.NumInput()}, nil
}

func (h *handle) Begin() (driver.Tx, error) {
	return h.BeginTx(context.Background(), driver.TxOptions{})
}

func (h *handle) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := h.ready(ctx); err != nil {
		return nil, err
	}
	c := h.cn
	if c.beginTx != nil {
		tx, err := c.beginTx.BeginTx(ctx, opts)
		return tx, h.watch(err)
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
	return tx, h.watch(err)
}

func (h *handle) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := h.ready(ctx); err != nil {
		return nil, err
	}
	if h.cn.execer == nil {
		return nil, driver.ErrSkip
	}
	r, err := h.cn.execer.ExecContext(ctx, query, args)
	return r, h.watch(err)
}

func (h *handle) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := h.ready(ctx); err != nil {
		return nil, err
	}
	if h.cn.queryer == nil {
		return nil, driver.ErrSkip
	}
	r, err := h.cn.queryer.QueryContext(ctx, query, args)
	return r, h.watch(err)
}

// Ping pings through the driver, or reports nil when it cannot ping.
func (h *handle) Ping(ctx context.Context) error {
	if err := h.ready(ctx); err != nil {
		return err
	}
	if h.cn.pinger == nil {
		return nil
	}
	return h.watch(h.cn.pinger.Ping(ctx))
}

// CheckNamedValue passes to the driver's checker, or says driver.ErrSkip so
// that database/sql applies its default conversion (also between uses,
// when the handle holds no connection to ask).
func (h *handle) CheckNamedValue(nv *driver.NamedValue) error {
	if h.cn == nil || h.cn.checker == nil {
		return driver.ErrSkip
	}
	return h.cn.checker.CheckNamedValue(nv)
}

// stmt is a prepared statement as database/sql holds it: a query on a
// handle, run with the driver's statement for it on the connection the
// handle holds at the time (see conn.stmt). Its errors are watched for
// driver.ErrBadConn, and a failed statement is prepared afresh next time.
type stmt struct {
	h        *handle
	query    string
	numInput int

	// The driver's statement for query on connection cn, as of cn.gen
	// being gen: what the last use found, so that the next use on the
	// same connection skips the lookup by query (a hash of its text, for
	// the statement and again for each argument's CheckNamedValue). It
	// moves BenchmarkSQLStmtOverhead's instructions per query (see
	// bench/README.md); TestStmtCacheBounds covers statements that left
	// the connection (no room, failed, StmtCache -1).
	cn  *conn
	ds  driver.Stmt
	gen uint64
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// Close leaves the driver's statement prepared for the next use of the
// query on its connection (it is closed with the connection, or at the end
// of the loan when the cache had no room for it).
func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return s.numInput }

// base returns the driver's statement on the handle's connection.
func (s *stmt) base(ctx context.Context) (driver.Stmt, error) {
	if err := s.h.ready(ctx); err != nil {
		return nil, err
	}
	cn := s.h.cn
	if ds := s.remembered(cn); ds != nil {
		return ds, nil
	}
	ds, err := cn.stmt(ctx, s.query)
	if err != nil {
		return nil, s.h.watch(err)
	}
	s.cn, s.ds, s.gen = cn, ds, cn.gen
	return ds, nil
}

// remembered returns the driver's statement the last use found on cn,
// when it is still there; nil otherwise.
func (s *stmt) remembered(cn *conn) driver.Stmt {
	if s.cn == cn && s.gen == cn.gen {
		return s.ds
	}
	return nil
}

// watch notes a driver.ErrBadConn in err and, after any error, has the
// statement prepared afresh at its next use. It returns err unchanged.
func (s *stmt) watch(err error) error {
	if err != nil && s.h.cn != nil {
		s.h.cn.forget(s.query)
	}
	return s.h.watch(err)
}

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	ds, err := s.base(context.Background())
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 passing through the driver's own method
	r, err := ds.Exec(args)
	return r, s.watch(err)
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	ds, err := s.base(context.Background())
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 passing through the driver's own method
	r, err := ds.Query(args)
	return r, s.watch(err)
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ds, err := s.base(ctx)
	if err != nil {
		return nil, err
	}
	if e, ok := ds.(driver.StmtExecContext); ok {
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
	//lint:ignore SA1019 passing through the driver's own method
	r, err := ds.Exec(vals)
	return r, s.watch(err)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	ds, err := s.base(ctx)
	if err != nil {
		return nil, err
	}
	if q, ok := ds.(driver.StmtQueryContext); ok {
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
	//lint:ignore SA1019 passing through the driver's own method
	r, err := ds.Query(vals)
	return r, s.watch(err)
}

// CheckNamedValue asks the driver's statement's checker when the handle's
// connection has the statement at hand, then the connection's, then lets
// database/sql apply its default.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if cn := s.h.cn; cn != nil {
		ds := s.remembered(cn)
		if ds == nil {
			ds = cn.stmts[s.query]
		}
		if ds == nil {
			ds = cn.loanStmts[s.query]
		}
		if ch, ok := ds.(driver.NamedValueChecker); ok {
			return ch.CheckNamedValue(nv)
		}
	}
	return s.h.CheckNamedValue(nv)
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
