// Package sqlward puts any database/sql driver behind wardpool's
// wardpool.Keeper while the application keeps its *sql.DB.
//
//	cc, _ := pgx.ParseConfig(dsn) // with PostgreSQL: pgx's stdlib connector
//	db, c, err := sqlward.OpenDB(stdlib.GetConnector(*cc), sqlward.Config{Limits: pool.DefaultLimits})
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	err = db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
//	fmt.Println(c.WardStats().Live)
//
// # How the two pools share the work
//
// database/sql has a pool of its own. The connections it pools here are
// handles: a handle holds one of the Keeper's connections only while
// database/sql uses it. It borrows one when Connect makes it, and again
// when database/sql calls ResetSession before it uses an idle handle; it
// gives it back when database/sql asks IsValid as the handle comes back.
// So the Keeper does the pooling: the size limit (a borrow waits, bounded
// by the query's context, when Limits.Size are out), idle and lifetime
// retirement, the Ward in front of the server, the books and the leak
// watch; and database/sql keeps its handles (and whatever it built
// around them) from one query to the next, as it would its own
// connections. OpenDB lets it keep as many idle handles as Limits.Size.
//
// Leave db.SetMaxOpenConns at 0 (no limit): the Keeper's Limits.Size is
// the limit, and a second one in front of it would queue callers where
// the Keeper cannot see them. db.SetMaxIdleConns below Limits.Size only
// makes database/sql build a new handle where it could have kept one.
// database/sql's SetConnMaxLifetime and SetConnMaxIdleTime act on handles,
// which hold nothing between uses; use Limits.Life and Limits.Keep.
//
// # Prepared statements
//
// A statement prepared through a handle (db.Prepare, or on a *sql.Conn or
// *sql.Tx) stands for its query on whichever connection the handle holds
// when it runs. Each connection keeps the statements prepared on it, by
// query, up to Config.StmtCache of them, for every later borrower: so a
// db.Prepare statement is prepared once per connection of the pool, as on
// database/sql's own pool. A query beyond the cache is prepared on each
// loan that runs it and closed when the loan ends. A statement that fails
// is closed at the end of its loan and prepared afresh next time (the
// server may no longer have it as it was), and the rest close with their
// connection. The difference a user can see: closing the *sql.Stmt does
// not deallocate it on the server, so pg_prepared_statements keeps listing
// it until its connection closes (Config.StmtCache -1 keeps none).
//
// # Reaching the driver's connection
//
// (*sql.Conn).Raw passes database/sql the driver.Conn that Connect
// returned, which is this package's, not the driver's: database/sql offers
// a driver no way to hand Raw another value. Raw here, or Unwrap inside a
// Raw function, reaches the driver's own connection:
//
//	err := sqlward.Raw(conn, func(driverConn any) error {
//		pc := driverConn.(*stdlib.Conn).Conn() // *pgx.Conn
//		_, err := pc.CopyFrom(ctx, pgx.Identifier{"t"}, cols, pgx.CopyFromRows(rows))
//		return err
//	})
//
// # What it asks of the driver
//
// A connection that reports driver.ErrBadConn from any call through this
// package is destroyed as it comes back, never lent again. Other errors
// go to Config.Classify, which by default resets the pool (every
// connection made before is closed, once per failover) on the SQLSTATEs
// of a server that turned read-only or is going down; see DefaultClassify.
// Optional interfaces are used when the driver's connection has them:
//
//   - driver.SessionResetter: ResetSession runs before a connection that
//     was used before is lent again, as database/sql does; ErrBadConn
//     destroys it and another is lent, other errors are ignored (as
//     database/sql ignores them).
//   - driver.Pinger: without a SessionResetter, a connection idle longer
//     than Config.PingIdle is pinged before it is lent; a failed ping
//     destroys it and another is lent.
//   - driver.Validator: IsValid is asked as a connection comes back; false
//     destroys it.
//
// The caller never sees a connection that failed these checks: the Keeper
// replaces it. A Connector is safe for concurrent use.
//
// # Waiting for a connection
//
// A borrow that finds every connection of Limits.Size lent waits for one,
// in arrival order, bounded by the query's context and by
// Config.AcquireTimeout when that is set (the earlier of the two; the
// timeout's error unwraps to wardpool.ErrAcquireTimeout and reads as
// context.DeadlineExceeded). When borrowers have waited longer than
// Config.StallAfter (10 s by default) and no connection has come back for
// as long, the Connector logs one warning that says how many wait, how
// many are held and where each holder borrowed (with LeakAfter, or
// Config.StallSites), and counts it in Stats().Stalls: the pool a
// transaction starves by querying the *sql.DB while it holds a
// connection, as many at once as Limits.Size.
//
// # A server that vanishes
//
// A server whose host is gone, or behind a link that drops packets
// without a reset, leaves its connections open for as long as the kernel
// retransmits (about 15 minutes on Linux) unless the socket bounds it.
// The driver dials, not sqlward, so the bound is the driver's to set:
// DeadPeerDialer gives one that closes such a connection within
// DefaultDeadPeerTimeout (5 s) plus a second, as pgxward and redisward do
// by default; give it to the driver (pgx's ConnConfig.DialFunc, say). A
// connection the kernel closed fails its SessionResetter or Pinger check
// at once and is replaced.
//
// # Metrics
//
// A *Connector is a metrics.Source as it is (WardStats, Limits, Leaked):
//
//	reg.MustRegister(metrics.NewCollector(c, metrics.Options{Labels: map[string]string{"pool": "orders"}}))
//
// database/sql's own figures (db.Stats(), and the go_sql_* series of
// client_golang's collectors.NewDBStatsCollector) count handles:
// OpenConnections and Idle include idle handles, which hold no connection;
// InUse also counts the queries waiting in the Keeper for a connection;
// WaitCount stays 0 (the waiting happens in the Keeper). The metrics
// package's README maps each go_sql_* series to the wardpool_* one to read
// instead.
package sqlward

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/poolname"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// DefaultStmtCache is Config.StmtCache when it is zero: how many prepared
// statements each connection keeps for reuse.
const DefaultStmtCache = 128

// DefaultPingIdle is Config.PingIdle when it is zero: a connection idle
// for longer than this is pinged before it is lent (pgx and pgxpool use
// the same second).
const DefaultPingIdle = time.Second

// Config is how a Connector pools. Limits.Size is required: a Config
// without it (the zero Config included) is refused with an error wrapping
// ErrConfig, so that no pool is unbounded by omission. Start from
// pool.DefaultLimits (cfg.Limits = pool.DefaultLimits: 10 connections, 10
// idle, retired after 30 minutes idle) and change what you need. Every
// other field has a working zero value. The same rule holds in every
// wardpool driver: pgxward refuses MaxConns 0, redisward Limits.Size 0.
type Config struct {
	// Name names the pool in its errors ("orders: wardpool: pool closed")
	// and is the pool label the metrics package gives its series by
	// default (see Connector.Name). Empty is "sqlward-N", N counting the
	// process's pools from 1, as HikariCP names "HikariPool-1" (a
	// driver.Connector tells no address to name it by).
	Name string
	// Limits bounds the pool: Size connections at once, Idle of them idle,
	// retired after Keep idle or Life alive. Size must be 1 or more (see
	// Config); zero Idle, Keep or Life mean no limit, as in pool.Limits.
	Limits pool.Limits
	// Ward holds the guards in front of the server (see ward.Ward). They
	// become this pool's own: do not share them. The zero Ward has none.
	Ward ward.Ward
	// MinIdle is how many idle connections are kept open in the background.
	MinIdle int
	// LifeJitter extends each connection's Life by a random draw in
	// [0, LifeJitter), so that connections made together do not retire
	// together.
	LifeJitter time.Duration
	// PingIdle is how long a connection must sit idle before it is pinged on
	// borrow, for drivers with driver.Pinger and no driver.SessionResetter.
	// Zero is DefaultPingIdle; negative pings on every borrow.
	PingIdle time.Duration
	// StmtCache is how many prepared statements each connection keeps for
	// later borrowers (see the package doc). Zero is DefaultStmtCache;
	// negative keeps none: a statement is prepared on each loan that runs
	// it and closed when the loan ends.
	StmtCache int
	// LeakAfter, when positive, reports every connection held longer than
	// this through OnLeak, with the stack that borrowed it: Rows never
	// closed, a Tx never ended, a *sql.Conn never closed. Zero turns the
	// watch off and costs nothing.
	LeakAfter time.Duration
	// OnLeak receives the leak reports; nil logs each at warning level on
	// Logger, with the message metrics.LeakMessage or
	// metrics.LeakReturnedMessage, the same for every wardpool driver.
	OnLeak func(Leak)
	// AcquireTimeout, when positive, bounds how long a borrow of one of
	// the Keeper's connections (by Connect, or by a handle database/sql
	// takes from its idle list) waits, apart from the query's context:
	// queued while Limits.Size are lent, or for the connection being
	// opened for it. The earlier of it and the context's deadline ends the
	// wait; when it is the timeout, the error unwraps to
	// wardpool.ErrAcquireTimeout, for which errors.Is(err,
	// context.DeadlineExceeded) holds. Zero means none. See
	// wardpool.Config.AcquireTimeout.
	AcquireTimeout time.Duration
	// Admission, when set, refuses at once an acquire the pool predicts
	// cannot be served before its deadline (the context's, or
	// AcquireTimeout's), instead of letting it wait the deadline out: the
	// error is a *wardpool.LateError, which errors.Is reads as
	// context.DeadlineExceeded. See wardpool.Config.Admission.
	Admission bool
	// Classes are classes of callers with room reserved and a ceiling
	// each (see pool.Class): a call's class is the name its context
	// carries (wardpool.WithClass), so every method that takes a context
	// carries it; an unknown name fails the call with a
	// *wardpool.ClassError. Nil: first come first served, as in database/sql.
	// See wardpool.Config.Classes.
	Classes []pool.Class
	// HoldOnFailover, when positive, holds callers through a failover for
	// up to that long: after a reset on a 25006, 57P01 or other error (Classify's Reset
	// verdict), the pool dials one connection at a time, ten a second,
	// until one is made (the new primary) or the time is up, and the
	// callers that come meanwhile wait, within their contexts, instead of
	// each dialing a node that is down or read-only and failing. Zero holds nothing,
	// as in database/sql. See wardpool.Config.Hold.
	HoldOnFailover time.Duration
	// StallAfter is the stall watch's threshold: when borrowers have
	// waited longer and no connection has come back for as long, one
	// warning on Logger says how many wait, how many are held and where
	// each holder borrowed (through database/sql: the call sites are its
	// frames, so set LeakAfter for whole stacks). Zero means
	// wardpool.DefaultStallAfter (10 s); negative, off. See
	// wardpool.Config.StallAfter.
	StallAfter time.Duration
	// StallSites records each borrow's call site for the stall report
	// (about 300 ns a borrow); with LeakAfter set, its stacks serve.
	StallSites bool
	// Classify says what an error the driver returns means for the
	// connection it came from: wardpool.Reuse (a query's own failure),
	// wardpool.Destroy (close this connection), or wardpool.Reset (every
	// connection to this server is wrong now: close the idle ones at once
	// and the lent ones as they come back, once per generation; see
	// wardpool.Loan.Reset). It judges the errors of Exec, Query, Prepare,
	// Begin, Ping and prepared statements' Exec and Query, not those of a
	// Rows' Next or a Tx's Commit, which database/sql gets from the
	// driver's own values. An error that is driver.ErrBadConn is the
	// driver's word and is not classified: the connection is destroyed and
	// database/sql retries the call on another. Nil means DefaultClassify
	// (by SQLSTATE: 25006, 57P01, 57P02, 57P03 and class 08 reset);
	// wardpool.ReuseAll turns it off. A classifier that panics is recovered
	// and counted (see wardpool.Keeper.Classify).
	Classify wardpool.Classifier
	// Logger receives the pool's warnings; nil is slog.Default().
	Logger *slog.Logger
	// Clock is the Keeper's clock; nil is its default. Tests pass a fake.
	Clock wardpool.Clock
}

// Leak is one report of the leak watch: the driver's connection on loan
// (Item; it belongs to its borrower), how long it had been out (Held), the
// stack of the goroutine that borrowed it, that is of the query that took
// up the handle (Stack), and whether this is the follow-up
// report of a leaked connection that has since come back (Returned). It is
// wardpool.Leak, so one handler fits every wardpool driver:
//
//	cfg.OnLeak = metrics.OnLeak[driver.Conn](logger)
type Leak = wardpool.Leak[driver.Conn]

// The sentinels of the Keeper, here so that code using this package alone
// can test for them; they are pool's own values.
var (
	// ErrClosed is returned by Connect (so by the *sql.DB's queries) after
	// Close.
	ErrClosed = wardpool.ErrClosed
	// ErrShed is what the *wardpool.ShedError of a Connect the Ward refused
	// unwraps to.
	ErrShed = wardpool.ErrShed
	// ErrConfig is wrapped by the error NewConnector returns for a Config
	// it cannot use. It is wardpool.ErrConfig, the one every driver wraps.
	ErrConfig = wardpool.ErrConfig
)

// Connector is a driver.Connector whose connections come from a wardpool.Keeper
// and go back to it when database/sql closes them. Make one with
// NewConnector (or OpenDB); it is safe for concurrent use.
type Connector struct {
	base      driver.Connector
	k         *wardpool.Keeper[*conn]
	name      string        // Name, resolved
	ping      time.Duration // PingIdle, resolved
	stmtCache int           // StmtCache, resolved: 0 for none
	leakAfter time.Duration
	minIdle   int // Config.MinIdle
	now       func() time.Time
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// NewConnector returns a Connector drawing connections from base through a
// Keeper configured by cfg. It opens nothing before returning (MinIdle
// connections are opened in the background). Errors wrap ErrConfig (and
// pool.ErrLimits for bad Limits).
func NewConnector(base driver.Connector, cfg Config) (*Connector, error) {
	if base == nil {
		return nil, fmt.Errorf("sqlward: %w: nil driver.Connector", ErrConfig)
	}
	if err := checkSize(cfg.Limits); err != nil {
		return nil, err
	}
	c := &Connector{base: base, name: cfg.Name, ping: cfg.PingIdle, stmtCache: cfg.StmtCache, leakAfter: cfg.LeakAfter, minIdle: cfg.MinIdle}
	if c.ping == 0 {
		c.ping = DefaultPingIdle
	}
	switch {
	case c.stmtCache == 0:
		c.stmtCache = DefaultStmtCache
	case c.stmtCache < 0:
		c.stmtCache = 0
	}
	if c.name == "" {
		c.name = poolname.Default("sqlward", "")
	}
	clock := cfg.Clock
	kc := wardpool.Config[*conn]{
		Name:        c.name,
		Limits:      cfg.Limits,
		Ward:        cfg.Ward,
		Dial:        c.dial,
		Close:       closeConn,
		Check:       c.check,
		CheckIdle:   -1, // every borrow: check decides, as database/sql would
		BeforeReuse: c.reset,
		MinIdle:     cfg.MinIdle,
		LifeJitter:  cfg.LifeJitter,
		LeakAfter:   cfg.LeakAfter,
		Logger:      cfg.Logger,
		Clock:       clock,
		Classify:    cfg.Classify,
	}
	kc.AcquireTimeout, kc.StallAfter, kc.StallSites = cfg.AcquireTimeout, cfg.StallAfter, cfg.StallSites
	kc.Admission = cfg.Admission
	kc.Classes = cfg.Classes
	kc.Hold = pool.Hold{For: cfg.HoldOnFailover}
	if kc.Classify == nil {
		kc.Classify = DefaultClassify
	}
	if cfg.OnLeak != nil {
		onLeak := cfg.OnLeak
		kc.OnLeak = func(l wardpool.Leak[*conn]) {
			onLeak(Leak{Item: l.Item.base, Held: l.Held, Stack: l.Stack, Returned: l.Returned})
		}
	}
	c.now = time.Now
	if clock != nil {
		c.now = clock.Now
	}
	k, err := wardpool.NewKeeper(kc)
	if err != nil {
		return nil, fmt.Errorf("%s: sqlward: %w", c.name, err)
	}
	c.k = k
	return c, nil
}

// OpenDB is NewConnector followed by sql.OpenDB, with database/sql's own
// idle pool sized to keep every handle (db.SetMaxIdleConns(Limits.Size);
// see the package doc for why). It returns the Connector too, for its
// WardStats. db.Close closes the Connector.
func OpenDB(base driver.Connector, cfg Config) (*sql.DB, *Connector, error) {
	c, err := NewConnector(base, cfg)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(cfg.Limits.Size)
	return db, c, nil
}

// Connect makes a handle for database/sql and borrows a connection from
// the Keeper for it: an idle one (checked as the package doc says) or a
// new one from the base connector. It waits, bounded by ctx, when
// Limits.Size are out. It fails with an *AcquireError wrapping ctx's error
// (saying what the pool was doing), ErrClosed after Close, a *ShedError (errors.Is ErrShed) when the
// Ward refuses, or the base connector's error; each in a *PoolError that
// names the pool (errors.Is and errors.As see through it). A context's
// bare error (ctx ended before the Keeper asked) is returned as it is.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	h := &handle{c: c}
	if err := h.bind(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// MinIdle returns Config.MinIdle: how many idle connections are kept open.
// metrics.Observe exports it as db.client.connection.idle.min.
func (c *Connector) MinIdle() int { return c.minIdle }

// Name returns the pool's name, Config.Name or the default it was given.
// metrics.NewCollector and metrics.Observe label the series with it
// (pool="…") unless Options.Labels names the pool.
func (c *Connector) Name() string { return c.name }

// Driver returns the base connector's driver.
func (c *Connector) Driver() driver.Driver { return c.base.Driver() }

// Close closes the pool without waiting: later Connects fail with
// wardpool.ErrClosed, idle connections are closed now and lent ones as
// database/sql gives them back. database/sql's DB.Close calls it. When the
// base connector is an io.Closer it is closed too.
func (c *Connector) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.k.Close(ctx) // ctx's error: loans are still out, and that is fine
	if cl, ok := c.base.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// CloseContext closes the pool as Close does and then waits, bounded by
// ctx, for every lent connection to come back and be closed. It returns
// ctx's error when ctx ends first. It does not close the base connector.
func (c *Connector) CloseContext(ctx context.Context) error { return c.k.Close(ctx) }

// WardStats returns a reading of the wardpool runtime's books and figures
// (wardpool.Stats), the form metrics.NewCollector and metrics.Observe
// read:
//
//	reg.MustRegister(metrics.NewCollector(c, metrics.Options{}))
//
// Read these rather than db.Stats(): database/sql's DBStats count its own
// view, in which every borrow is a new connection (see the package doc).
// Every wardpool driver names the runtime's reading WardStats, so that it
// collides with no method of the driver's peer.
func (c *Connector) WardStats() wardpool.Stats { return c.k.Stats() }

// Limits returns the Keeper's limits (Config.Limits); Size is the max gauge
// of the metrics package.
func (c *Connector) Limits() pool.Limits { return c.k.Limits() }

// Leaked returns how many connections are out on loan now and have been
// for longer than Config.LeakAfter; 0 when the leak watch is off. It takes
// the pool's lock and allocates: it is for scrapes, not for every query.
func (c *Connector) Leaked() int {
	if c.leakAfter <= 0 {
		return 0
	}
	n := 0
	for _, l := range c.k.Loans() { // longest first
		if l.Held < c.leakAfter {
			break
		}
		n++
	}
	return n
}

// Reset closes every idle connection now and every lent one when it comes
// back, keeping the pool open.
func (c *Connector) Reset() { c.k.Reset() }

// Rotate replaces every connection over the window over, at a bounded
// pace, instead of all at once: after rotating credentials (have the base
// connector dial with the new ones) or moving to a new endpoint. See
// wardpool.Keeper.Rotate.
func (c *Connector) Rotate(over time.Duration) { c.k.Rotate(over) }

// dial opens one connection with the base connector.
func (c *Connector) dial(ctx context.Context) (*conn, error) {
	dc, err := c.base.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlward: connect: %w", err)
	}
	return newConn(dc, c.stmtCache), nil
}

// closeConn closes one connection for the Keeper, with the statements its
// cache kept, as database/sql closes a connection's statements before it.
func closeConn(cn *conn) error {
	cn.closeStmts()
	return cn.base.Close()
}

// check runs before an idle connection is lent again. Its error makes the
// Keeper destroy the connection and lend another.
func (c *Connector) check(ctx context.Context, cn *conn) error {
	if cn.resetter != nil {
		if err := cn.resetter.ResetSession(ctx); errors.Is(err, driver.ErrBadConn) {
			return err
		}
		return nil
	}
	if cn.pinger != nil && (c.ping < 0 || c.now().Sub(cn.back) > c.ping) {
		// A failed ping is as good as ErrBadConn; pgx's stdlib answers
		// ErrBadConn itself, others may not.
		return cn.pinger.Ping(ctx)
	}
	return nil
}

// errInvalid tells the Keeper to destroy a connection the driver says is
// no longer valid.
var errInvalid = errors.New("sqlward: connection no longer valid")

// reset runs as a connection goes back in good order.
func (c *Connector) reset(_ context.Context, cn *conn) error {
	if cn.validator != nil && !cn.validator.IsValid() {
		return errInvalid
	}
	if cn.pinger != nil && cn.resetter == nil {
		cn.back = c.now()
	}
	return nil
}
