package pgxward

import (
	"context"
	"fmt"
	"github.com/wardpool/wardpool/pool/record"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// The defaults ParseConfig fills in, the same as pgxpool v5's.
const (
	// DefaultMinConns is pool_min_conns when the string does not set it.
	DefaultMinConns = 0
	// DefaultMinIdleConns is pool_min_idle_conns when the string does not set it.
	DefaultMinIdleConns = 0
	// DefaultMaxConnLifetime is pool_max_conn_lifetime when the string does not set it.
	DefaultMaxConnLifetime = time.Hour
	// DefaultMaxConnIdleTime is pool_max_conn_idle_time when the string does not set it.
	DefaultMaxConnIdleTime = 30 * time.Minute
	// DefaultHealthCheckPeriod is pool_health_check_period when the string does not set it.
	DefaultHealthCheckPeriod = time.Minute
	// DefaultDialTimeout is Config.DialTimeout when it is zero: the one
	// minute pgxpool gives each of its background connection attempts.
	DefaultDialTimeout = time.Minute
	// DefaultPingIdle is how long a connection must have sat idle before it
	// is pinged on Acquire when Config.ShouldPing is nil (pgxpool's rule).
	DefaultPingIdle = time.Second
)

// DefaultMaxConns returns pool_max_conns when the string does not set it: the
// greater of 4 and runtime.NumCPU(), as in pgxpool.
func DefaultMaxConns() int32 { return int32(max(4, runtime.NumCPU())) }

// ShouldPingParams is what Config.ShouldPing is given. It is pgxpool's type,
// so a ShouldPing written for pgxpool is assigned here unchanged.
type ShouldPingParams = pgxpool.ShouldPingParams

// Leak is one report of the leak watch: a connection held longer than
// Config.LeakAfter (Item, the *pgx.Conn: read it for its identity only, as
// Item.PgConn().PID(); it belongs to its borrower), for how long (Held),
// with the stack of the Acquire, Query, QueryRow, … that took it (Stack);
// Returned marks the follow-up report when it comes back. It is wardpool.Leak,
// so one handler fits every wardpool driver:
//
//	c.OnLeak = metrics.OnLeak[*pgx.Conn](logger)
type Leak = wardpool.Leak[*pgx.Conn]

// Config is how a Pool is built. Make it with ParseConfig, which fills in
// pgxpool's defaults (MaxConns is DefaultMaxConns()), then change fields
// before NewWithConfig; a Config built by hand (the zero Config included)
// is refused with an error wrapping ErrConfig, and so is MaxConns 0: no
// pool is unbounded by omission. The same rule holds in every wardpool
// driver: redisward and sqlward refuse a Limits.Size of 0. Every field means what the field of the same name in
// pgxpool.Config means, except where its comment says otherwise. A Config is
// not safe for concurrent modification; Pool.Config returns a copy.
type Config struct {
	// ConnConfig is how each connection is opened (pgx.ParseConfig's result).
	ConnConfig *pgx.ConnConfig

	// Name names the pool in its errors ("orders: wardpool: pool closed")
	// and is the pool label the metrics package gives its series by
	// default (see Pool.Name). Empty is "pgxward-N@host:port": N counts
	// the process's pools from 1, as HikariCP names "HikariPool-1", and
	// host:port is ConnConfig's.
	Name string

	// BeforeConnect is called before each new connection is opened with a
	// copy of ConnConfig that it may change for this connection only. An
	// error fails the dial.
	BeforeConnect func(context.Context, *pgx.ConnConfig) error
	// AfterConnect is called once a connection is open, before it is lent.
	// An error closes the connection and fails the dial.
	AfterConnect func(context.Context, *pgx.Conn) error
	// BeforeAcquire is pgxpool's older form of PrepareConn, used only when
	// PrepareConn is nil: false destroys the connection and another is
	// tried. Deprecated: use PrepareConn, as in pgxpool.
	BeforeAcquire func(context.Context, *pgx.Conn) bool
	// PrepareConn is called on every Acquire before the connection is
	// handed out. (true, nil): hand it out. (false, nil): destroy it and try
	// another, silently. (true, err): give it back and fail the Acquire with
	// err. (false, err): destroy it and fail with err.
	PrepareConn func(context.Context, *pgx.Conn) (bool, error)
	// AfterRelease is called when a connection comes back in good order;
	// false destroys it instead of keeping it. It runs in the goroutine that
	// released the connection (pgxpool starts a goroutine for it).
	AfterRelease func(*pgx.Conn) bool
	// BeforeClose is called right before a connection is closed.
	BeforeClose func(*pgx.Conn)
	// ShouldPing decides, on Acquire of an idle connection, whether to ping
	// it first; a failed ping destroys it and another is taken, without the
	// caller seeing the error. Nil pings connections idle for longer than
	// DefaultPingIdle.
	ShouldPing func(context.Context, ShouldPingParams) bool

	// MaxConnLifetime is how long a connection may live, counted from its
	// dial. Zero or negative: no limit.
	MaxConnLifetime time.Duration
	// MaxConnLifetimeJitter extends each connection's lifetime by a random
	// draw in [0, MaxConnLifetimeJitter), so that connections opened
	// together do not all close together.
	MaxConnLifetimeJitter time.Duration
	// MaxConnIdleTime is how long a connection may sit idle before it is
	// closed. Zero or negative: no limit. (pgxpool closes every idle
	// connection at each health check when it is zero; here zero means no
	// limit, as it does for every age in wardpool.)
	MaxConnIdleTime time.Duration
	// PingTimeout bounds each liveness ping on Acquire; zero leaves it to
	// the caller's deadline. As in pgxpool, a caller who gives up does not
	// cut the ping short (pgx would close the connection): the Acquire
	// returns at once and the ping finishes in the background, within the
	// Keeper's re-check time, deciding whether the connection is kept.
	PingTimeout time.Duration

	// DialTimeout bounds the opening of each connection, BeforeConnect and
	// AfterConnect included, whether an Acquire asked for it or the pool
	// opens it in the background for MinConns and MinIdleConns. An attempt
	// that runs out fails like any other failed dial (Stat.Keeper counts it
	// in DialTimeouts) and the background ones are tried again later,
	// spaced by the Ward's Backoff when it has one. pgxpool gives each
	// background attempt one minute and has no field for it. Zero means
	// DefaultDialTimeout; negative, no bound but ConnConfig.ConnectTimeout
	// (two minutes when unset, as in pgxpool) on the connect alone.
	DialTimeout time.Duration

	// AcquireTimeout, when positive, bounds how long an Acquire (and every
	// method that acquires: Query, Exec, Begin, …) waits for a connection,
	// apart from ctx: queued while MaxConns are lent, or for the connection
	// being opened for it. The earlier of it and ctx's deadline ends the
	// wait; when it is the timeout, the error is an *AcquireError (naming
	// the pool) whose Err is wardpool.ErrAcquireTimeout, for which
	// errors.Is(err, context.DeadlineExceeded) holds, as for the ctx
	// timeout one wraps a pgxpool Acquire in, while ctx.Err() stays nil.
	// A slow query is bounded by ctx alone. Zero means none, as in
	// pgxpool (pgx PR #2350 asks it of pgxpool); see
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
	// *wardpool.ClassError. Nil: first come first served, as in pgxpool.
	// See wardpool.Config.Classes.
	Classes []pool.Class
	// HoldOnFailover, when positive, holds callers through a failover for
	// up to that long: after a reset on a 25006, 57P01 or other error (Classify's Reset
	// verdict), the pool dials one connection at a time, ten a second,
	// until one is made (the new primary) or the time is up, and the
	// callers that come meanwhile wait, within their contexts, instead of
	// each dialing a node that is down or read-only (with target_session_attrs=read-write) and failing. Zero holds nothing,
	// as in pgxpool. See wardpool.Config.Hold.
	HoldOnFailover time.Duration

	// MaxConns is how many connections may be open at once: idle, lent and
	// being dialled. At least 1: 0 is refused, as in pgxpool.
	MaxConns int32
	// MinConns is how many connections are kept open, idle or acquired,
	// and MinIdleConns how many idle, as in pgxpool: the Keeper dials in
	// the background when either is short (never beyond MaxConns).
	MinConns     int32
	MinIdleConns int32
	// HealthCheckPeriod is accepted for compatibility and otherwise unused:
	// the Keeper's timer closes an idle connection at the moment it passes
	// MaxConnIdleTime or MaxConnLifetime, not at the next periodic sweep.
	HealthCheckPeriod time.Duration

	// Ward holds the guards in front of the server: a Breaker sheds new
	// dials to a server that keeps failing them, a Bucket spaces dials out,
	// a Backoff holds dials after a failure, a Shedder stops lending while
	// the host is overloaded, a Limiter adapts how many connections are
	// lent at once. The guards become this pool's own: do not share them.
	// The zero Ward has none.
	Ward ward.Ward
	// LeakAfter, when positive, records the stack of every Acquire and
	// reports each connection held longer than this through OnLeak. A
	// QueryRow whose Row is never scanned and Rows never closed show up
	// here. Zero turns the watch off and costs nothing.
	LeakAfter time.Duration
	// StallAfter is the stall watch's threshold: when callers have waited
	// longer and no connection has come back for as long, one warning on
	// Logger says how many wait, how many connections are held and where
	// each holder acquired (a handler that queries the pool while it holds
	// a transaction, at MaxConns such handlers, waits for ever otherwise).
	// Zero means wardpool.DefaultStallAfter (10 s); negative, off. See
	// wardpool.Config.StallAfter.
	StallAfter time.Duration
	// StallSites records each Acquire's call site for the stall report
	// (about 300 ns an Acquire); with LeakAfter set, its stacks serve.
	StallSites bool
	// OnLeak receives the leak reports; nil logs each on Logger at warning
	// level, with the message metrics.LeakMessage or metrics.LeakReturnedMessage
	// (the same for every wardpool driver and the Keeper) and the pid.
	OnLeak func(Leak)
	// Classify says what an error the server sends means for the
	// connection it came on: wardpool.Reuse (the default for a query's own
	// errors), wardpool.Destroy (close this connection), or wardpool.Reset
	// (every connection to this server is wrong now: close the idle ones
	// at once and the lent ones as they come back, once per generation;
	// see wardpool.Loan.Reset). Nil means DefaultClassify (25006, 57P01,
	// 57P02, 57P03 and class 08 reset); wardpool.ReuseAll turns it off.
	//
	// It is called, on the borrower's goroutine, for every error response
	// the server sends on a pooled connection, whichever method sent the
	// query (Conn.Conn's included), through the connection's
	// pgconn.Config.OnPgError, which is then called as before. The worst
	// verdict of a loan is acted on when the connection comes back.
	// Network errors and pgx's own are not classified: a connection they
	// leave closed is destroyed, as in pgxpool. A classifier that panics
	// is recovered and counted (see wardpool.Keeper.Classify).
	//
	// One answer is checked against the server's word: a Reset for 25006
	// from a server that reports itself writable (PostgreSQL 14 and later
	// report default_transaction_read_only and in_hot_standby to every
	// session; both off) came from a transaction the application began
	// READ ONLY: the connection is kept, as for Reuse.
	Classify wardpool.Classifier
	// Logger receives the pool's warnings; nil is slog.Default().
	Logger *slog.Logger
	// Recorder, when set, records every decision of the pool, its ward's
	// included (wardpool.Config.Recorder); Pool.Recording and
	// Pool.RecordingHandler hand the recording over. A Recorder records
	// one pool: a second NewWithConfig with it fails.
	Recorder *record.Recorder

	createdByParseConfig bool
}

// Copy returns a copy of c with its own ConnConfig (pgx.ConnConfig.Copy;
// the tls.Config inside is shared, as it must not be changed anyway). The
// Ward's guards are shared with c.
func (c *Config) Copy() *Config {
	n := *c
	if c.ConnConfig != nil {
		n.ConnConfig = c.ConnConfig.Copy()
	}
	n.Classes = append([]pool.Class(nil), c.Classes...)
	if c.Classes == nil {
		n.Classes = nil
	}
	return &n
}

// ConnString returns the connection string ParseConfig was given.
func (c *Config) ConnString() string { return c.ConnConfig.ConnString() }

// The pool options ParseConfig takes out of the connection string.
const (
	optMaxConns       = "pool_max_conns"
	optMinConns       = "pool_min_conns"
	optMinIdleConns   = "pool_min_idle_conns"
	optMaxLifetime    = "pool_max_conn_lifetime"
	optLifetimeJitter = "pool_max_conn_lifetime_jitter"
	optMaxIdleTime    = "pool_max_conn_idle_time"
	optHealthCheck    = "pool_health_check_period"
	optPingTimeout    = "pool_ping_timeout"
)

// ParseConfig reads connString as pgx.ParseConfig does (URL or keyword/value
// form), sets ConnConfig.DialFunc to DeadPeerDialer(DefaultDeadPeerTimeout)
// (pgx's is a plain net.Dialer), and takes out the pool options pgxpool
// understands, with pgxpool's defaults:
//
//   - pool_max_conns: integer, 1 or more (default DefaultMaxConns())
//   - pool_min_conns: integer, 0 or more (default 0)
//   - pool_min_idle_conns: integer, 0 or more (default 0)
//   - pool_max_conn_lifetime: duration such as 1h30m (default 1h)
//   - pool_max_conn_lifetime_jitter: duration (default 0)
//   - pool_max_conn_idle_time: duration (default 30m)
//   - pool_health_check_period: duration (default 1m; see Config)
//   - pool_ping_timeout: duration (default 0, no separate timeout)
//
// Errors are *pgconn.ParseConfigError, as pgxpool's are; they never repeat
// the password.
//
//	postgres://jack:secret@127.0.0.1:5432/mydb?sslmode=disable&pool_max_conns=10
func ParseConfig(connString string) (*Config, error) {
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	// pgx's connect_timeout bounds the dial through its context already.
	cc.DialFunc = DeadPeerDialer(DefaultDeadPeerTimeout)
	c := &Config{
		ConnConfig:        cc,
		MaxConns:          DefaultMaxConns(),
		MinConns:          DefaultMinConns,
		MinIdleConns:      DefaultMinIdleConns,
		MaxConnLifetime:   DefaultMaxConnLifetime,
		MaxConnIdleTime:   DefaultMaxConnIdleTime,
		HealthCheckPeriod: DefaultHealthCheckPeriod,
		DialTimeout:       DefaultDialTimeout,

		createdByParseConfig: true,
	}
	params := cc.RuntimeParams
	// take removes option name from the runtime parameters (they are not
	// server settings) and reports its value.
	take := func(name string) (string, bool) {
		v, ok := params[name]
		delete(params, name)
		return v, ok
	}
	bad := func(name string, err error) error {
		return pgconn.NewParseConfigError(connString, "cannot parse "+name, err)
	}
	count := func(name string, dst *int32, least int64) error {
		v, ok := take(name)
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return bad(name, err)
		}
		if n < least {
			return bad(name, fmt.Errorf("%d is less than %d", n, least))
		}
		*dst = int32(n)
		return nil
	}
	span := func(name string, dst *time.Duration) error {
		v, ok := take(name)
		if !ok {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return bad(name, err)
		}
		*dst = d
		return nil
	}
	for _, err := range []error{
		count(optMaxConns, &c.MaxConns, 1),
		count(optMinConns, &c.MinConns, 0),
		count(optMinIdleConns, &c.MinIdleConns, 0),
		span(optMaxLifetime, &c.MaxConnLifetime),
		span(optLifetimeJitter, &c.MaxConnLifetimeJitter),
		span(optMaxIdleTime, &c.MaxConnIdleTime),
		span(optHealthCheck, &c.HealthCheckPeriod),
		span(optPingTimeout, &c.PingTimeout),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// validate reports why c cannot build a pool, or nil.
func (c *Config) validate() error {
	switch {
	case c == nil:
		return fmt.Errorf("pgxward: %w: nil Config", ErrConfig)
	case !c.createdByParseConfig:
		return fmt.Errorf("pgxward: %w: make the Config with ParseConfig, then change its fields", ErrConfig)
	case c.ConnConfig == nil:
		return fmt.Errorf("pgxward: %w: ConnConfig is nil", ErrConfig)
	case c.MaxConns < 1:
		return fmt.Errorf("pgxward: %w: MaxConns is %d, want 1 or more", ErrConfig, c.MaxConns)
	case c.MinConns < 0:
		return fmt.Errorf("pgxward: %w: MinConns is %d, want 0 or more", ErrConfig, c.MinConns)
	case c.MinIdleConns < 0:
		return fmt.Errorf("pgxward: %w: MinIdleConns is %d, want 0 or more", ErrConfig, c.MinIdleConns)
	case c.MaxConnLifetimeJitter < 0:
		return fmt.Errorf("pgxward: %w: MaxConnLifetimeJitter is %v, want 0 or more", ErrConfig, c.MaxConnLifetimeJitter)
	case c.LeakAfter < 0:
		return fmt.Errorf("pgxward: %w: LeakAfter is %v, want 0 (off) or more", ErrConfig, c.LeakAfter)
	}
	return nil
}
