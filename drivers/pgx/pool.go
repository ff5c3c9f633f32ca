package pgxward

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/poolname"
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
	// fail is the worst verdict of the server's errors during the current
	// loan (see onPgError), acted on by Conn.Release; the zero value is
	// Reuse.
	fail failure
	// spare holds handles not lent yet. Every loan takes a fresh one and
	// none is used twice, so a *Conn kept past its Release can never act on
	// a later borrower's loan; carving them out of a block keeps Acquire
	// from allocating each time.
	spare []Conn
}

// handleBlock is how many handles res allocates at once.
const handleBlock = 32

// handle returns an unused Conn of r for loan l.
func (r *res) handle(l wardpool.Loan[*res]) *Conn {
	if len(r.spare) == 0 {
		r.spare = make([]Conn, handleBlock)
	}
	c := &r.spare[0]
	r.spare = r.spare[1:]
	r.fail = failure{} // a failed check's ping is not this loan's
	c.r, c.loan = r, l
	return c
}

// Pool is a pool of pgx connections run by a wardpool.Keeper. It has the
// methods of *pgxpool.Pool with the same meaning (the package doc lists
// where they differ), and is safe for concurrent use by many goroutines.
type Pool struct {
	k      *wardpool.Keeper[*res]
	config *Config
	name   string // Config.Name, resolved

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
		name:         config.Name,
		prepareConn:  prepareOf(config),
		afterRelease: config.AfterRelease,
		beforeClose:  config.BeforeClose,
		shouldPing:   config.ShouldPing,
		pingTimeout:  config.PingTimeout,
		tries:        int(config.MaxConns) + 1,
	}
	if p.name == "" {
		p.name = poolname.Default("pgxward", net.JoinHostPort(config.ConnConfig.Host, strconv.Itoa(int(config.ConnConfig.Port))))
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
	kc := wardpool.Config[*res]{
		Name:        p.name,
		Limits:      lim,
		Ward:        config.Ward,
		Dial:        p.dial,
		DialTimeout: dialTimeout, // negative: no bound there either
		Close:       p.close,
		Check:       p.check,
		CheckIdle:   DefaultPingIdle,
		MinIdle:     min(int(config.MinIdleConns), lim.Size),
		MinLive:     min(int(config.MinConns), lim.Size),
		LifeJitter:  config.MaxConnLifetimeJitter,
		LeakAfter:   config.LeakAfter,
		Logger:      config.Logger,
		Classify:    config.Classify,
		Recorder:    config.Recorder,
	}
	kc.AcquireTimeout, kc.StallAfter, kc.StallSites = config.AcquireTimeout, config.StallAfter, config.StallSites
	kc.Admission = config.Admission
	kc.Classes = config.Classes
	kc.Hold = pool.Hold{For: config.HoldOnFailover}
	if lim.Life == 0 {
		kc.LifeJitter = 0
	}
	if kc.Classify == nil {
		kc.Classify = DefaultClassify
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
		kc.OnLeak = func(l wardpool.Leak[*res]) {
			onLeak(Leak{Item: l.Item.conn, Held: l.Held, Stack: l.Stack, Returned: l.Returned})
		}
	} else if config.LeakAfter > 0 {
		log := config.Logger
		if log == nil {
			log = slog.Default()
		}
		kc.OnLeak = func(l wardpool.Leak[*res]) { logLeak(log, l, config.LeakAfter) }
	}
	if err := p.traceWith(config); err != nil {
		return nil, err
	}
	k, err := wardpool.NewKeeper(kc)
	if err != nil {
		p.untrace()
		return nil, fmt.Errorf("pgxward: %w", err) // wraps wardpool.ErrConfig
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

// Config returns a copy of the Config the pool was built with.
func (p *Pool) Config() *Config { return p.config.Copy() }

// Stat returns a reading of the pool's books.
func (p *Pool) Stat() *Stat {
	return &Stat{s: p.k.Stats(), max: int32(p.k.Limits().Size), newConns: p.newConns.Load()}
}

// WardStats returns one reading of the wardpool runtime's figures
// (wardpool.Stats), the form metrics.NewCollector and metrics.Observe
// read:
//
//	reg.MustRegister(metrics.NewCollector(p, metrics.Options{}))
//
// Stat is pgxpool's reading, in pgxpool's shape. Every wardpool driver
// names the runtime's reading WardStats, so that it collides with no
// method of the driver's peer.
func (p *Pool) WardStats() wardpool.Stats { return p.k.Stats() }

// Limits returns the Keeper's limits: Size is MaxConns (the max gauge of
// the metrics package), Keep MaxConnIdleTime, Life MaxConnLifetime.
func (p *Pool) Limits() pool.Limits { return p.k.Limits() }
