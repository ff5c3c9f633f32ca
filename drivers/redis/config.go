package redisward

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// ErrConfig is wrapped by the error New returns for a Config it cannot use.
// It is wardpool.ErrConfig, the one every wardpool driver wraps.
var ErrConfig = wardpool.ErrConfig

// ErrClosed and ErrShed are pool's sentinels, here so that code using this
// package alone can test for them: calls after Close fail with ErrClosed,
// and ones the Ward refuses with a *wardpool.ShedError that unwraps to ErrShed.
var (
	ErrClosed = wardpool.ErrClosed
	ErrShed   = wardpool.ErrShed
)

// AcquireError (a call whose context ended while it waited for a
// connection: it unwraps to the context's error and says what the pool was
// doing) and ShedError (a call the Ward refused) are the Keeper's.
type (
	AcquireError = wardpool.AcquireError
	ShedError    = wardpool.ShedError
)

// PoolError is the error of a call the pool refused or could not serve a
// connection for: it names the pool (Config.Name), as in
// "redisward-1@127.0.0.1:6379: dial tcp 127.0.0.1:6379: connect: connection
// refused", and wraps the Keeper's error (an *AcquireError, a *ShedError,
// ErrClosed, or the dial's, such as a *net.OpError), which errors.Is and
// errors.As reach. A context's bare error is returned as it is. It is
// wardpool.PoolError, every wardpool driver's, and the name %T prints. A
// dial's network error comes in a *wardpool.PoolNetError, a net.Error (as
// go-redis's dial error is) in which errors.As finds the *PoolError.
type PoolError = wardpool.PoolError

// DefaultCheckIdle is Config.CheckIdle's default: a connection idle for
// more than a millisecond is peeked at before it is lent, one used more
// recently is lent as it is (see Config.CheckIdle).
const DefaultCheckIdle = time.Millisecond

// Leak is one report of the leak watch: a connection's client held longer
// than Config.LeakAfter (Item; read it for its identity only, it belongs to
// its borrower), how long (Held), with the stack of the call that took it
// (Stack: Acquire, Do, Pipelined, …), and Returned on the follow-up report
// when it comes back. It is wardpool.Leak, so one handler fits every wardpool
// driver: cfg.OnLeak = metrics.OnLeak[*redis.Client](logger).
type Leak = wardpool.Leak[*redis.Client]

// Config is how a Pool is built. Options and Limits.Size are required: a
// Config without a Size is refused with an error wrapping ErrConfig, so
// that no pool is unbounded by omission. FromOptions and ParseURL fill
// Limits from go-redis's pool fields and defaults (PoolSize, 10 per
// GOMAXPROCS when zero), or start from pool.DefaultLimits. Every other
// field has a working zero value. The same rule holds in every wardpool
// driver: pgxward refuses MaxConns 0, sqlward Limits.Size 0. New copies
// the Config; changing it afterwards changes nothing.
type Config struct {
	// Options says how each connection is opened and used: Network, Addr,
	// Dialer, TLSConfig, credentials, DB, Protocol, ClientName, OnConnect,
	// timeouts and buffer sizes mean what they mean in go-redis. Its pool
	// fields (PoolSize, MinIdleConns, MaxIdleConns, MaxActiveConns,
	// ConnMaxIdleTime, ConnMaxLifetime, PoolTimeout) are not used: Limits,
	// MinIdle, AcquireTimeout and the context of each call replace them.
	//
	// MaxRetries, MinRetryBackoff and MaxRetryBackoff bound the resends of
	// a command the server refused without running it: a reply of
	// READONLY, MASTERDOWN or LOADING that Classify judges wardpool.Reset
	// (as DefaultClassify does). Once the reset has retired the connections
	// to that server, the command is sent again on a new connection
	// (HoldOnFailover holds it until the new primary answers a dial), up
	// to MaxRetries times (3 when zero, none when -1), after a random
	// pause between MinRetryBackoff (10 ms when zero) and MaxRetryBackoff
	// (a second when zero) that grows with each resend (none when either
	// is -1), within the call's context: go-redis's fields, defaults and
	// pauses. A pipeline is sent again only when every one of its
	// commands got such a reply; a transaction (TxPipelined) is not, nor
	// the commands of Acquire's client, of Client().Conn() and of a Watch,
	// which run on one connection. Where go-redis retries and the pool
	// does not:
	//
	//   - a network error, a timeout or a context ending mid-command:
	//     the command may have run, so it is returned, never sent again
	//     (go-redis sends it again, writes included);
	//   - a failed dial: the caller gets its error, and the Ward (its
	//     Backoff, say) spaces the dials that follow;
	//   - a pipeline whose first command got one of those replies while a
	//     later one ran (a GET answered, a PUBLISH): go-redis sends it all
	//     again, running the later one twice; the pool returns the reply;
	//   - those replies under a Classify that does not judge them Reset
	//     (wardpool.ReuseAll): there is no new generation to send to;
	//   - CLUSTERDOWN, TRYAGAIN, NOREPLICAS and max clients replies (the
	//     last is a dial's, which the pool waits out: see DefaultClassify).
	//
	// A connection's own client never retries. Maintenance notifications are turned
	// off on pooled connections. Client-side caching (ClientSideCacheConfig,
	// ClientSideCache, ClientSideCacheStrategy and the other ClientSideCache
	// fields) is refused: New fails with ErrConfig rather than run without
	// the cache the options ask for, since the pool does not yet keep each
	// connection's tracked keys invalidated while it sits idle, nor evicts
	// them when it closes one.
	Options *redis.Options

	// Limits bound the pool (see pool.Limits). Size must be 1 or more (see
	// Config); zero Idle, Keep or Life mean no limit.
	Limits pool.Limits
	// Ward holds the guards in front of the server; the zero Ward has none.
	// The pool takes the guards as its own: do not share them.
	Ward ward.Ward
	// MinIdle is how many idle connections are kept open, dialled in the
	// background. It must not exceed Limits.Size or Limits.Idle when those
	// are set.
	MinIdle int
	// CheckIdle is how long a connection may sit idle before it is peeked
	// at on borrow: a non-blocking look at its socket, no round trip, that
	// finds a connection the server closed (CLIENT KILL, its timeout, a
	// restart) so that it is replaced before a command is lost on it.
	// Zero means DefaultCheckIdle (a millisecond); negative, every borrow.
	//
	// The rule: a connection that went back to the pool no more than
	// CheckIdle ago, as the pool's clock reads it, is lent without the look
	// (the default clock's readings lag by up to a millisecond, so with the
	// default the span reaches about two milliseconds in real time). Under
	// load, when a connection is reused every few hundred microseconds, the
	// look would be a system call on every command finding the connection
	// as it was a moment ago; on a connection that sat idle it costs next
	// to nothing per second, and it is what finds the connection closed.
	// The price: a connection the server closes in a gap between two uses
	// no longer than CheckIdle fails the next command on it with the
	// network error (the command is not sent again: it may have reached
	// the server), and is destroyed. For comparison, go-redis's own pool
	// looks at every connection it hands over, and pgxpool pings one idle
	// for more than a second. Only one look is ever taken: go-redis's own
	// look inside each connection's client is turned off whatever
	// CheckIdle says.
	CheckIdle time.Duration
	// DeadPeerTimeout bounds how long a connection to a server that stopped
	// answering at the TCP level (its host gone, a link or firewall
	// dropping packets without a reset) stays open: the kernel closes it
	// at most this long, plus a second, after the last packet it got
	// (TCP_USER_TIMEOUT for a command in flight or a dial's SYN, keepalive
	// probes for an idle connection; see DefaultDeadPeerTimeout). The peek
	// before a loan then finds it closed and it is replaced without the
	// caller seeing it. It applies when Options.Dialer is nil (the pool
	// dials with a net.Dialer, as go-redis would). Zero means
	// DefaultDeadPeerTimeout; negative dials as go-redis does (keepalive
	// every 5 minutes, no TCP_USER_TIMEOUT). An Options.Dialer of your own
	// is used as it is; the one FromFailoverOptions installs dials the
	// master with DefaultDeadPeerTimeout (or with fo.Dialer, when set).
	DeadPeerTimeout time.Duration
	// LeakAfter, when positive, records the stack of every acquire and
	// reports a connection held longer to OnLeak. Zero turns the watch off.
	LeakAfter time.Duration
	// AcquireTimeout, when positive, bounds how long a command (or an
	// Acquire) waits for a connection, apart from its context: queued while
	// Limits.Size are lent, or for the connection being opened for it. The
	// earlier of it and the context's deadline ends the wait; when it is
	// the timeout, the error unwraps to wardpool.ErrAcquireTimeout, for
	// which errors.Is(err, context.DeadlineExceeded) holds, as for
	// go-redis's PoolTimeout. Zero means none: the context alone bounds
	// the wait (FromOptions and ParseURL leave it zero whatever
	// Options.PoolTimeout says). See wardpool.Config.AcquireTimeout.
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
	// *wardpool.ClassError. Nil: first come first served, as in go-redis.
	// See wardpool.Config.Classes.
	Classes []pool.Class
	// HoldOnFailover, when positive, holds callers through a failover for
	// up to that long: after a reset on a READONLY or other error (Classify's Reset
	// verdict), the pool dials one connection at a time, ten a second,
	// until one is made (the new primary) or the time is up, and the
	// callers that come meanwhile wait, within their contexts, instead of
	// each dialing a node that is down or a replica and failing. Zero holds nothing,
	// as in go-redis. See wardpool.Config.Hold.
	HoldOnFailover time.Duration
	// StallAfter is the stall watch's threshold: when callers have waited
	// longer and no connection has come back for as long, one warning on
	// Logger says how many wait, how many are held and where each holder
	// acquired. Zero means wardpool.DefaultStallAfter (10 s); negative,
	// off. Subscriptions are never watched. See wardpool.Config.StallAfter.
	StallAfter time.Duration
	// StallSites records each acquire's call site for the stall report
	// (about 300 ns an acquire); with LeakAfter set, its stacks serve.
	StallSites bool
	// OnLeak receives the leak reports; nil logs them on Logger.
	OnLeak func(Leak)
	// Classify says what an error reply from the server means for the
	// connection it came on: wardpool.Reuse (a command's own failure, such
	// as WRONGTYPE), wardpool.Destroy (close this connection), or
	// wardpool.Reset (every connection to this server is wrong now: close
	// the idle ones at once and the lent ones as they come back, once per
	// generation; see wardpool.Loan.Reset). Nil means DefaultClassify
	// (READONLY, MASTERDOWN and LOADING reset); wardpool.ReuseAll turns
	// resets off. It is called on the caller's goroutine for every error
	// reply a pooled command or pipeline gets (Process, Do, Pipelined,
	// TxPipelined, Watch, a Loan's client, Client()'s commands), not for
	// network errors, which destroy their connection whatever it says,
	// nor for the commands of Client().Conn() and PubSubs, which run on
	// the wire as go-redis sends them. A READONLY reply destroys its
	// connection whatever the classifier says, as go-redis does. A
	// classifier that panics is recovered and counted (see
	// wardpool.Keeper.Classify).
	Classify wardpool.Classifier
	// Logger is where the pool logs; nil means slog.Default().
	Logger *slog.Logger
	// Clock is the pool's clock; nil means the system's (see wardpool.Config.Clock). For
	// tests.
	Clock wardpool.Clock
	// Name names the pool in its errors and, by default, in its metrics'
	// pool label. Empty means "redisward-N@addr", N counting the pools of
	// the process from 1.
	Name string
	// Lazy makes New return without opening a connection. By default New
	// opens one (and keeps it idle) so that a wrong address or password is
	// reported by New rather than by the first command.
	Lazy bool
}

// FromOptions returns a Config for o with Limits taken from o's pool fields,
// with go-redis's defaults for those left zero: Size is PoolSize (10 per
// GOMAXPROCS), Idle is MaxIdleConns (Size when zero), Keep is
// ConnMaxIdleTime (30 minutes; none when negative), Life is ConnMaxLifetime
// (none), and MinIdle is MinIdleConns.
func FromOptions(o *redis.Options) Config {
	size := o.PoolSize
	if size <= 0 {
		size = 10 * runtime.GOMAXPROCS(0)
	}
	if o.MaxActiveConns > 0 && o.MaxActiveConns < size {
		size = o.MaxActiveConns
	}
	idle := o.MaxIdleConns
	if idle <= 0 || idle > size {
		idle = size
	}
	keep := o.ConnMaxIdleTime
	switch {
	case keep == 0:
		keep = 30 * time.Minute
	case keep < 0:
		keep = 0
	}
	return Config{
		Options: o,
		Limits:  pool.Limits{Size: size, Idle: idle, Keep: keep, Life: max(o.ConnMaxLifetime, 0)},
		MinIdle: min(max(o.MinIdleConns, 0), idle),
	}
}

// ParseURL reads a redis:// or rediss:// URL with redis.ParseURL (pool_size,
// max_idle_conns, conn_max_idle_time, … included) and returns
// FromOptions of the result.
func ParseURL(url string) (Config, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return Config{}, fmt.Errorf("redisward: %w: %w", ErrConfig, err)
	}
	return FromOptions(o), nil
}

func (c *Config) validate() error {
	if c.Options == nil {
		return fmt.Errorf("redisward: %w: Options is nil", ErrConfig)
	}
	if err := checkSize(c.Limits); err != nil {
		return err
	}
	if err := refusedOptions(c.Options); err != nil {
		return err
	}
	if c.MinIdle < 0 {
		return fmt.Errorf("redisward: %w: MinIdle %d is negative", ErrConfig, c.MinIdle)
	}
	if c.LeakAfter < 0 {
		return fmt.Errorf("redisward: %w: LeakAfter %v is negative", ErrConfig, c.LeakAfter)
	}
	return nil
}

// checkSize refuses limits without a Size: no pool is unbounded by
// omission (see Config).
func checkSize(l pool.Limits) error {
	if l.Size < 1 {
		return fmt.Errorf("redisward: %w: Limits.Size is %d, want 1 or more: use FromOptions or ParseURL, start from pool.DefaultLimits (Size %d), or set it", ErrConfig, l.Size, pool.DefaultLimits.Size)
	}
	return nil
}

// refusedOptions returns an error wrapping ErrConfig when o asks for what the
// pool cannot give: client-side caching (RESP3 CLIENT TRACKING, with
// invalidations pushed on each connection). Silently running without it
// would send every repeated read to the server.
func refusedOptions(o *redis.Options) error {
	var set []string
	if o.ClientSideCacheConfig != nil {
		set = append(set, "ClientSideCacheConfig")
	}
	if o.ClientSideCache != nil {
		set = append(set, "ClientSideCache")
	}
	if o.ClientSideCacheStrategy != 0 {
		set = append(set, "ClientSideCacheStrategy")
	}
	if o.ClientSideCacheRefreshOnInvalidate {
		set = append(set, "ClientSideCacheRefreshOnInvalidate")
	}
	if o.ClientSideCacheCoalesceMisses {
		set = append(set, "ClientSideCacheCoalesceMisses")
	}
	if o.ClientSideCacheInvalidationBatchWindow != 0 {
		set = append(set, "ClientSideCacheInvalidationBatchWindow")
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("redisward: %w: client-side caching is not supported through the pool (Options.%s set): "+
		"a pooled connection would not apply its invalidations while idle nor evict its keys when closed; "+
		"use a plain go-redis client for cached reads", ErrConfig, strings.Join(set, ", Options."))
}
