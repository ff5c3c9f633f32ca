package pgxward

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool/pool"
)

// res is what the Keeper holds for one connection: the connection and the
// handles lent with it. The Keeper recognises it by its pointer.
//
// Only the goroutine that holds the connection's loan touches the fields
// below conn; the Keeper's lock orders one borrower after the next.
type res struct {
	conn *pgx.Conn
	p    *Pool // the pool it belongs to, for the release tracer
	// idleSince is when the connection last came back, read by a custom
	// ShouldPing; it is set only when Config.ShouldPing is not nil.
	idleSince time.Time
	// ping, when not nil, is a liveness ping still running for a check its
	// caller gave up on; the next check waits for it (see Pool.check).
	ping *pendingPing
	// spare holds handles not lent yet. Every loan takes a fresh one and
	// none is used twice, so a *Conn kept past its Release can never act on
	// a later borrower's loan; carving them out of a block keeps Acquire
	// from allocating each time.
	spare []Conn
}

// handleBlock is how many handles res allocates at once.
const handleBlock = 32

// handle returns an unused Conn of r for loan l.
func (r *res) handle(l pool.Loan[*res]) *Conn {
	if len(r.spare) == 0 {
		r.spare = make([]Conn, handleBlock)
	}
	c := &r.spare[0]
	r.spare = r.spare[1:]
	c.r, c.loan = r, l
	return c
}

// Pool is a pool of pgx connections run by a pool.Keeper. It has the
// methods of *pgxpool.Pool with the same meaning (the package doc lists
// where they differ), and is safe for concurrent use by many goroutines.
type Pool struct {
	k      *pool.Keeper[*res]
	config *Config

	prepareConn  func(context.Context, *pgx.Conn) (bool, error)
	afterRelease func(*pgx.Conn) bool
	beforeClose  func(*pgx.Conn)
	shouldPing   func(context.Context, ShouldPingParams) bool
	pingTimeout  time.Duration
	tries        int // Acquire attempts before giving up on PrepareConn

	newConns atomic.Int64 // dials started

	// values is the context given to NewWithConfig, without its
	// cancellation: its values reach every dial (see valuesCtx).
	values context.Context

	// The pgxpool tracers found on ConnConfig.Tracer, and the *pgxpool.Pool
	// they are given (see tracer.go); nil when there are none.
	acquireTracer pgxpool.AcquireTracer
	releaseTracer pgxpool.ReleaseTracer
	traced        *pgxpool.Pool
}

// New is ParseConfig(connString) followed by NewWithConfig.
func New(ctx context.Context, connString string) (*Pool, error) {
	c, err := ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	return NewWithConfig(ctx, c)
}

// NewWithConfig builds a pool from config, which must come from ParseConfig
// (an error wrapping ErrConfig says why it cannot be used otherwise). It
// connects to nothing before returning, as pgxpool: connections for
// MinConns and MinIdleConns are opened in the background, and the first
// Acquire reports whether the server can be reached. ctx's values, not its
// cancellation, reach BeforeConnect and AfterConnect of every dial, as
// those of pgxpool's first background dials do; a dial an Acquire started
// sees that Acquire's values first.
func NewWithConfig(ctx context.Context, config *Config) (*Pool, error) {
	if err := config.validate(); err != nil {
		return nil, err
	}
	config = config.Copy()
	p := &Pool{
		config:       config,
		prepareConn:  prepareOf(config),
		afterRelease: config.AfterRelease,
		beforeClose:  config.BeforeClose,
		shouldPing:   config.ShouldPing,
		pingTimeout:  config.PingTimeout,
		tries:        int(config.MaxConns) + 1,
	}
	if ctx != nil {
		p.values = context.WithoutCancel(ctx)
	}
	dialTimeout := config.DialTimeout
	if dialTimeout == 0 {
		dialTimeout = DefaultDialTimeout
	}
	lim := pool.Limits{
		Size: int(config.MaxConns),
		Idle: int(config.MaxConns),
		Keep: max(config.MaxConnIdleTime, 0),
		Life: max(config.MaxConnLifetime, 0),
	}
	kc := pool.Config[*res]{
		Limits:      lim,
		Ward:        config.Ward,
		Dial:        p.dial,
		DialTimeout: dialTimeout, // negative: no bound there either
		Close:       p.close,
		Check:       p.check,
		CheckIdle:   DefaultPingIdle,
		MinIdle:     min(int(max(config.MinConns, config.MinIdleConns)), lim.Size),
		LifeJitter:  config.MaxConnLifetimeJitter,
		LeakAfter:   config.LeakAfter,
		Logger:      config.Logger,
	}
	if lim.Life == 0 {
		kc.LifeJitter = 0
	}
	if p.shouldPing != nil {
		// The hook decides on every borrow; the check tells it how long the
		// connection sat idle.
		kc.CheckIdle = -1
		kc.BeforeReuse = p.reset
	} else if p.afterRelease != nil {
		kc.BeforeReuse = p.reset
	}
	if onLeak := config.OnLeak; onLeak != nil {
		kc.OnLeak = func(l pool.Leak[*res]) {
			onLeak(Leak{Item: l.Item.conn, Held: l.Held, Stack: l.Stack, Returned: l.Returned})
		}
	} else if config.LeakAfter > 0 {
		log := config.Logger
		if log == nil {
			log = slog.Default()
		}
		kc.OnLeak = func(l pool.Leak[*res]) { logLeak(log, l, config.LeakAfter) }
	}
	if err := p.traceWith(config); err != nil {
		return nil, err
	}
	k, err := pool.NewKeeper(kc)
	if err != nil {
		p.untrace()
		return nil, fmt.Errorf("pgxward: %w", err) // wraps pool.ErrConfig
	}
	p.k = k
	return p, nil
}

// prepareOf returns the PrepareConn hook of c: PrepareConn, or BeforeAcquire
// in its shape (as pgxpool does), or nil.
func prepareOf(c *Config) func(context.Context, *pgx.Conn) (bool, error) {
	if c.PrepareConn != nil || c.BeforeAcquire == nil {
		return c.PrepareConn
	}
	before := c.BeforeAcquire
	return func(ctx context.Context, conn *pgx.Conn) (bool, error) { return before(ctx, conn), nil }
}

// The leak reports' messages: the Keeper's own, which every wardpool driver
// and metrics.LeakLog use too, so that one log filter finds them all.
const (
	leakMessage         = "wardpool: a loan is held longer than LeakAfter"
	leakReturnedMessage = "wardpool: a loan reported as held too long came back"
)

// logLeak is the default OnLeak: the Keeper's warning, with the server
// process of the connection, so that it can be found in pg_stat_activity.
func logLeak(log *slog.Logger, l pool.Leak[*res], after time.Duration) {
	pid := l.Item.conn.PgConn().PID()
	if l.Returned {
		log.Warn(leakReturnedMessage, "held", l.Held, "stack", string(l.Stack), "pid", pid)
		return
	}
	log.Warn(leakMessage, "held", l.Held, "leak_after", after, "stack", string(l.Stack), "pid", pid)
}

// dial opens one connection: BeforeConnect, pgx.ConnectConfig, AfterConnect.
// Errors wrap pgx's own (*pgconn.ConnectError for a server that cannot be
// reached or refuses the login).
func (p *Pool) dial(ctx context.Context) (*res, error) {
	p.newConns.Add(1)
	if p.values != nil {
		ctx = valuesCtx{Context: ctx, fallback: p.values}
	}
	cc := p.config.ConnConfig.Copy()
	// The dial goes on when the Acquire that started it gives up, so that
	// the connection is not wasted; it must not hang for ever (pgxpool's
	// bound).
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = 2 * time.Minute
	}
	if h := p.config.BeforeConnect; h != nil {
		if err := h(ctx, cc); err != nil {
			return nil, fmt.Errorf("pgxward: BeforeConnect: %w", err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("pgxward: connect: %w", err)
	}
	if h := p.config.AfterConnect; h != nil {
		if err := h(ctx, conn); err != nil {
			closeConn(conn)
			return nil, fmt.Errorf("pgxward: AfterConnect: %w", err)
		}
	}
	return &res{conn: conn, p: p}, nil
}

// valuesCtx is a dial's context (its deadline and cancellation) whose
// values fall back to those of the context NewWithConfig was given.
type valuesCtx struct {
	context.Context
	fallback context.Context
}

// Value returns the dial context's value for key, or else the fallback's.
func (c valuesCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.fallback.Value(key)
}

// canceledCtx is a context ended already.
var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// closeTimeout bounds how long closing one connection may take.
const closeTimeout = 15 * time.Second

// close closes one connection for the Keeper, after BeforeClose.
func (p *Pool) close(r *res) error {
	if r.ping != nil { // not expected: the Keeper checks again first
		_ = r.awaitPing(canceledCtx)
	}
	if p.beforeClose != nil {
		p.beforeClose(r.conn)
	}
	closeConn(r.conn)
	return nil
}

// closeConn closes conn politely and waits, bounded, for its socket to be
// let go.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = conn.Close(ctx) // the error of a goodbye to a dead server says nothing
	select {
	case <-conn.PgConn().CleanupDone():
	case <-ctx.Done():
	}
}

// errUnusable is check's answer for a connection pgx has closed, or one
// left busy or inside a transaction: what Conn.Release destroys.
var errUnusable = errors.New("pgxward: connection closed, busy or inside a transaction")

// unusable reports whether conn must not be lent again: Conn.Release's
// test, which check runs too.
func unusable(conn *pgx.Conn) bool {
	pc := conn.PgConn()
	return pc.IsClosed() || pc.IsBusy() || pc.TxStatus() != 'I'
}

// check runs before an idle connection is lent: a ping when it sat idle
// longer than DefaultPingIdle or when ShouldPing says so. An error makes the
// Keeper destroy it and lend another, so the caller never sees it.
//
// It first applies Conn.Release's test, without a ping: a connection pgx
// has closed is never kept on ShouldPing's word.
//
// As in pgxpool, the ping runs on a context of its own, bounded by the
// caller's deadline and PingTimeout but not cut by the caller's cancel: pgx
// closes a connection whose query it interrupts, and a healthy connection
// should not be lost because one caller gave up. When the caller's context
// ends first, check returns its error at once and leaves the ping running;
// the Keeper then checks the connection again in the background, and that
// check waits for the ping (see awaitPing).
func (p *Pool) check(ctx context.Context, r *res) error {
	if r.ping != nil {
		return r.awaitPing(ctx)
	}
	if unusable(r.conn) {
		return errUnusable
	}
	if p.shouldPing != nil {
		idle := time.Duration(0)
		if !r.idleSince.IsZero() {
			idle = time.Since(r.idleSince)
		}
		if !p.shouldPing(ctx, ShouldPingParams{Conn: r.conn, IdleDuration: idle}) {
			return nil
		}
	}
	if ctx.Done() == nil {
		return p.ping(ctx, r.conn) // nothing can cut it short
	}
	var pctx context.Context
	var cancel context.CancelFunc
	if d, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), d)
	} else {
		pctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	done := make(chan error, 1)
	go func() { done <- p.ping(pctx, r.conn) }()
	select {
	case err := <-done:
		cancel()
		return err
	case <-ctx.Done():
		r.ping = &pendingPing{done: done, cancel: cancel}
		return ctx.Err()
	}
}

// ping pings conn, within PingTimeout when it is set.
func (p *Pool) ping(ctx context.Context, conn *pgx.Conn) error {
	if p.pingTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.pingTimeout)
		defer cancel()
	}
	return conn.Ping(ctx)
}

// pendingPing is a ping check left running when its caller gave up.
type pendingPing struct {
	done   <-chan error
	cancel context.CancelFunc
}

// awaitPing waits, within ctx, for the ping a cancelled check left running,
// and reports its outcome; when ctx ends first it cuts the ping short (pgx
// then closes the connection) and reports failure. Either way the ping has
// ended when it returns, so the connection is never used by two
// goroutines at once.
func (r *res) awaitPing(ctx context.Context) error {
	pp := r.ping
	r.ping = nil
	var err error
	select {
	case err = <-pp.done:
	case <-ctx.Done():
		pp.cancel()
		if err = <-pp.done; err == nil {
			err = ctx.Err()
		}
	}
	pp.cancel()
	if err == nil && unusable(r.conn) {
		err = errUnusable
	}
	return err
}

// errAfterRelease tells the Keeper to destroy a connection AfterRelease
// refused.
var errAfterRelease = errors.New("pgxward: AfterRelease refused the connection")

// reset runs as a connection goes back: it notes when (for ShouldPing) and
// asks AfterRelease.
func (p *Pool) reset(_ context.Context, r *res) error {
	if p.afterRelease != nil && !p.afterRelease(r.conn) {
		return errAfterRelease
	}
	if p.shouldPing != nil {
		r.idleSince = time.Now()
	}
	return nil
}

// errTooManyTries is Acquire's answer when PrepareConn refused every
// connection it was offered.
var errTooManyTries = errors.New("pgxward: PrepareConn refused every connection offered (MaxConns+1 tries)")

// Acquire lends a connection; Release it when done. It waits, bounded by
// ctx, when all MaxConns are lent. It fails with an *AcquireError that
// unwraps to ctx's error and says what the pool was doing, with ErrClosed
// after Close, with a *ShedError (errors.Is ErrShed) when the Ward
// refuses, or with the dial's error (wrapping pgx's) when a new connection
// could not be opened. An idle connection that fails its liveness ping is
// replaced without the caller seeing the failure.
//
// When ConnConfig.Tracer is a pgxpool.AcquireTracer, its TraceAcquireStart
// and TraceAcquireEnd are called around it, as pgxpool calls them (see
// tracer.go for the pool they are given).
func (p *Pool) Acquire(ctx context.Context) (c *Conn, err error) {
	if p.acquireTracer == nil {
		return p.acquire(ctx)
	}
	ctx = p.acquireTracer.TraceAcquireStart(ctx, p.traced, pgxpool.TraceAcquireStartData{})
	c, err = p.acquire(ctx)
	end := pgxpool.TraceAcquireEndData{Err: err}
	if c != nil {
		end.Conn = c.r.conn
	}
	p.acquireTracer.TraceAcquireEnd(ctx, p.traced, end)
	return c, err
}

// acquire is Acquire without the tracer.
func (p *Pool) acquire(ctx context.Context) (*Conn, error) {
	for range p.tries {
		l, err := p.k.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		r := l.Value()
		if p.prepareConn == nil {
			return r.handle(l), nil
		}
		ok, err := p.prepareConn(ctx, r.conn)
		switch {
		case ok && err == nil:
			return r.handle(l), nil
		case ok:
			l.Release()
			return nil, err
		case err != nil:
			l.Destroy()
			return nil, err
		default:
			l.Destroy()
		}
	}
	return nil, errTooManyTries
}

// AcquireFunc acquires a connection, calls f with it and releases it. ctx
// bounds the Acquire only. It returns the Acquire's error or f's.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*Conn) error) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return f(c)
}

// AcquireAllIdle lends every idle connection at once, for keep-alive or
// health work; PrepareConn runs on each and the ones it refuses are
// destroyed. Release each one.
func (p *Pool) AcquireAllIdle(ctx context.Context) []*Conn {
	loans := p.k.AcquireAllIdle(ctx)
	conns := make([]*Conn, 0, len(loans))
	for _, l := range loans {
		r := l.Value()
		if p.prepareConn != nil {
			if ok, err := p.prepareConn(ctx, r.conn); !ok || err != nil {
				l.Destroy()
				continue
			}
		}
		conns = append(conns, r.handle(l))
	}
	return conns
}

// Close refuses new Acquires (they fail with pool.ErrClosed), closes the
// idle connections and waits until every lent connection has come back and
// been closed. It is safe to call more than once.
func (p *Pool) Close() { _ = p.CloseContext(context.Background()) }

// CloseContext is Close that stops waiting for lent connections when ctx
// ends, returning ctx's error; the pool is closed either way and each
// connection still out is closed when it comes back.
func (p *Pool) CloseContext(ctx context.Context) error {
	p.untrace() // the stand-in holds no connection: returns at once
	return p.k.Close(ctx)
}

// Reset closes every idle connection now and every lent one when it comes
// back, and keeps the pool open: for when something (a failover, a network
// cut) has spoiled all connections at once.
func (p *Pool) Reset() { p.k.Reset() }

// Config returns a copy of the Config the pool was built with.
func (p *Pool) Config() *Config { return p.config.Copy() }

// Stat returns a reading of the pool's books.
func (p *Pool) Stat() *Stat {
	return &Stat{s: p.k.Stats(), max: int32(p.config.MaxConns), newConns: p.newConns.Load()}
}

// Stats returns one reading of the Keeper's figures, the form
// metrics.NewCollector and metrics.Observe read:
//
//	reg.MustRegister(metrics.NewCollector(p, metrics.Options{}))
func (p *Pool) Stats() pool.Stats { return p.k.Stats() }

// Limits returns the Keeper's limits: Size is MaxConns (the max gauge of
// the metrics package), Keep MaxConnIdleTime, Life MaxConnLifetime.
func (p *Pool) Limits() pool.Limits { return p.k.Limits() }

// Exec runs sql on a connection it acquires and releases before returning.
func (p *Pool) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.r.conn.Exec(ctx, sql, arguments...)
}

// Query runs sql on a connection it acquires; the connection goes back when
// the Rows are closed or read to the end. On error the Rows returned carry
// the error too (as pgxpool's do), so either may be checked.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return errRows{err: err}, err
	}
	rows, err := c.r.conn.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return errRows{err: err}, err
	}
	c.rows = poolRows{r: rows, c: c}
	return &c.rows, nil
}

// QueryRow runs sql on a connection it acquires; the connection goes back
// when the Row's Scan is called. A Row never scanned keeps its connection
// for ever: with LeakAfter set, the leak watch reports it with the stack
// that called QueryRow. Errors, including the Acquire's, come from Scan.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := p.Acquire(ctx)
	if err != nil {
		return errRow{err: err}
	}
	c.row = poolRow{r: c.r.conn.QueryRow(ctx, sql, args...), c: c}
	return &c.row
}

// SendBatch sends b on a connection it acquires. The connection goes back
// when the results are closed or, for a batch begun with Batch.BeginTx,
// when the transaction from BatchResults.Tx is committed or rolled back.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := p.Acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	br := c.r.conn.SendBatch(ctx, b)
	if t := br.Tx(); t != nil {
		return &poolBatch{br: br, tx: &Tx{t: t, c: c}}
	}
	return &poolBatch{br: br, c: c}
}

// Begin acquires a connection and begins a transaction on it; Commit or
// Rollback ends it and gives the connection back. ctx affects the BEGIN
// only.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with options.
func (p *Pool) BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t, err := c.r.conn.BeginTx(ctx, txOptions)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &Tx{t: t, c: c}, nil
}

// CopyFrom runs a COPY FROM on a connection it acquires and releases
// before returning.
func (p *Pool) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	return c.r.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

// Ping acquires a connection and pings the server on it.
func (p *Pool) Ping(ctx context.Context) error {
	c, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.r.conn.Ping(ctx)
}
