package redisward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/poolerr"
	"github.com/wardpool/wardpool/internal/poolname"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// maxTries bounds how many connections one command is tried on when each
// turns out dead before the command reached the server (see Process).
const maxTries = 3

// Pool is a pool of Redis connections run by a wardpool.Keeper, each connection
// a go-redis client of its own. It is safe for concurrent use by many
// goroutines.
type Pool struct {
	k *wardpool.Keeper[*conn]
	// subs lends the connections of Pub/Sub subscriptions (Client()'s
	// Subscribe, PSubscribe, SSubscribe): counted in WardStats, not against
	// Limits.Size, so that subscriptions never starve commands, as on
	// go-redis, whose PubSub connections are outside its PoolSize too.
	subs        *wardpool.Keeper[*conn]
	inner       redis.Options // the template of every connection's client
	netDial     func(ctx context.Context) (net.Conn, error)
	dialTimeout time.Duration
	addr        string
	leakAfter   time.Duration // Config.LeakAfter, for Leaked
	minIdle     int           // Config.MinIdle
	retry       retryPolicy   // how a command refused unrun is sent again

	frontMu sync.Mutex  // guards front
	front   *front      // the client Client returns, built on demand
	shut    atomic.Bool // Close was called
}

// New builds a pool from cfg. Unless cfg.Lazy is set it opens one connection
// within ctx and keeps it idle, and fails (closing the pool) when that
// connection cannot be opened; ctx is not used after New returns.
func New(ctx context.Context, cfg Config) (*Pool, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Pool{
		inner:   innerOptions(cfg.Options),
		netDial: dialer(cfg.Options, cfg.DeadPeerTimeout),
		addr:    cfg.Options.Addr,

		leakAfter: cfg.LeakAfter,
		minIdle:   cfg.MinIdle,
		retry:     newRetryPolicy(cfg.Options, cfg.Clock),
	}
	p.dialTimeout = cfg.Options.DialTimeout
	if p.dialTimeout == 0 {
		p.dialTimeout = 5 * time.Second
	}
	if p.dialTimeout < 0 {
		p.dialTimeout = 0
	}
	// A dial takes a connect and a handshake; give the handshake go-redis's
	// read timeout on top of the connect timeout.
	if p.dialTimeout > 0 {
		rt := cfg.Options.ReadTimeout
		if rt == 0 {
			rt = 3 * time.Second
		}
		p.dialTimeout += max(rt, 0)
	}
	checkIdle := cfg.CheckIdle
	if checkIdle == 0 {
		checkIdle = DefaultCheckIdle
	}
	name := cfg.Name
	if name == "" {
		name = poolname.Default("redisward", cfg.Options.Addr)
	}
	kc := wardpool.Config[*conn]{
		Name:      name,
		Limits:    cfg.Limits,
		Ward:      cfg.Ward,
		Dial:      p.dial,
		Close:     p.close,
		Check:     p.check,
		CheckIdle: checkIdle,
		MinIdle:   cfg.MinIdle,
		LeakAfter: cfg.LeakAfter,
		Logger:    cfg.Logger,
		Clock:     cfg.Clock,
		Classify:  cfg.Classify,
	}
	kc.AcquireTimeout, kc.StallAfter, kc.StallSites = cfg.AcquireTimeout, cfg.StallAfter, cfg.StallSites
	kc.Admission = cfg.Admission
	kc.Classes = cfg.Classes
	kc.Hold = pool.Hold{For: cfg.HoldOnFailover}
	if kc.Classify == nil {
		kc.Classify = DefaultClassify
	}
	if on := cfg.OnLeak; on != nil {
		kc.OnLeak = func(l wardpool.Leak[*conn]) {
			on(Leak{Item: l.Item.cl, Held: l.Held, Stack: l.Stack, Returned: l.Returned})
		}
	}
	k, err := wardpool.NewKeeper(kc)
	if err != nil {
		return nil, err
	}
	p.k = k
	// Subscriptions: no bound (each is a connection of its own for as long
	// as it lasts, as in go-redis), none kept warm, no leak watch (a
	// subscription is meant to be held) and no stall watch (nobody waits
	// without a bound), the same dial and checks.
	sc := kc
	sc.Limits = pool.Limits{Keep: time.Minute}
	sc.MinIdle, sc.LeakAfter, sc.OnLeak, sc.Ward, sc.Recorder = 0, 0, nil, ward.Ward{}, nil
	sc.StallAfter, sc.StallSites = -1, false
	if p.subs, err = wardpool.NewKeeper(sc); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = k.Close(cctx)
		return nil, err
	}
	if !cfg.Lazy {
		l, err := k.Acquire(ctx)
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = k.Close(cctx)
			_ = p.subs.Close(cctx)
			return nil, poolerr.Wrap(name, err)
		}
		l.Release()
	}
	return p, nil
}

// Loan is one connection lent by Acquire, for many commands on the same
// connection (a WATCH and its transaction, a blocking pop, a script and the
// commands around it, or another database, after which the connection is
// dropped: see Release). End it exactly once with Release or
// Destroy; later calls do nothing. A Loan is a small value: copies are the
// same loan. The zero Loan is not usable.
type Loan struct {
	l wardpool.Loan[*conn]
}

// Client returns the loan's client: a *redis.Client (so a redis.Cmdable and
// a redis.UniversalClient) whose every command, pipeline and transaction
// runs on the one lent connection. It is safe for concurrent use, the
// commands queueing for the connection. Use it only until the loan ends;
// do not Close it, and do not Subscribe or call Conn on it: those need
// connections of their own, which it cannot open.
func (l Loan) Client() *redis.Client { return l.l.Value().cl }

// Release gives the connection back to the pool, or drops and closes it
// when a command on it failed in a way that may leave it out of step with
// the server (a network error, a timeout, a cancelled context; not an error
// reply such as WRONGTYPE, nor redis.Nil), or when a command on it left
// state the next borrower would inherit: SELECT, AUTH, HELLO, CLIENT
// TRACKING, REPLY or SETNAME, a SUBSCRIBE, READONLY, or a WATCH or MULTI
// not ended by EXEC, DISCARD or UNWATCH (go-redis's Watch and TxPipelined
// end theirs). State changed by other means (a Lua script's SELECT, say)
// is not seen: Destroy such a loan.
//
// An error reply that Config.Classify judges wardpool.Reset (READONLY,
// MASTERDOWN, LOADING by default) ends the loan in wardpool.Loan.Reset:
// every connection of its generation is retired, once per generation.
func (l Loan) Release() { l.l.Value().end(l.l) }

// Destroy drops the connection from the pool and closes it.
func (l Loan) Destroy() { l.l.Destroy() }

// Held returns how long the connection has been out on this loan.
func (l Loan) Held() time.Duration { return l.l.Held() }

// Valid reports whether the loan is still out.
func (l Loan) Valid() bool { return l.l.Valid() }

// Acquire lends one connection, waiting until one is idle, dialled, or ctx
// ends. It returns ctx.Err() when ctx ends first; otherwise its error names
// the pool (see PoolError): an *AcquireError when ctx ended while it
// waited, ErrClosed after Close, an error wrapping ErrShed when the ward
// refuses, and the dial error when the connection dialled for this caller
// cannot be opened.
func (p *Pool) Acquire(ctx context.Context) (Loan, error) {
	l, err := p.acquire(ctx)
	if err != nil {
		return Loan{}, err
	}
	l.Value().hookOn()
	return Loan{l}, nil
}

// AcquireFunc lends a connection to f for the time of the call and ends
// the loan as Loan.Release does. It returns f's error, or Acquire's.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*redis.Client) error) error {
	l, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	return f(l.Client())
}

// Process runs cmd on a pooled connection and returns its error, which is
// also in cmd. A command that would leave state on the connection for
// whoever borrows it next (SELECT, WATCH, MULTI, SUBSCRIBE, …) is refused
// with ErrNotPooled. The connection goes back to the pool unless the command
// broke it (see Loan.Release).
//
// A command is never run twice. It is sent again in two cases only, when
// the server provably did not run it:
//
//   - the connection it was given turned out to have been closed by the
//     server before anything was sent: a connection that sat idle is
//     peeked at before it is lent (Config.CheckIdle), and one found closed
//     then is replaced without the caller seeing it;
//   - the reply was READONLY, MASTERDOWN or LOADING (the server refused
//     the command without running it) and Config.Classify judged it
//     wardpool.Reset: once the reset has retired the connections to that
//     server, the command is sent again on a connection of the new
//     generation (held for by Config.HoldOnFailover when set), up to
//     Options.MaxRetries times, with Options.MinRetryBackoff and
//     MaxRetryBackoff's pause before each, as go-redis does (see Config).
//
// A network error, a timeout or a context ending mid-command is returned
// as it is: the command may have run.
func (p *Pool) Process(ctx context.Context, cmd redis.Cmder) error {
	if p.stateful(cmd) {
		err := notPooled(cmd)
		cmd.SetErr(err)
		return err
	}
	var t tries
	for {
		l, err := p.acquire(ctx)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		c := l.Value()
		err = c.cl.Process(ctx, cmd)
		c.failed(err)
		if !p.again(ctx, &t, settle(l, err, notRun(err))) {
			return err
		}
	}
}

// acquire borrows a connection from the Keeper; its error names the pool
// (poolerr.Wrap), except a context's own.
func (p *Pool) acquire(ctx context.Context) (wardpool.Loan[*conn], error) {
	l, err := p.k.Acquire(ctx)
	if err != nil {
		return l, poolerr.Wrap(p.k.Name(), err)
	}
	return l, nil
}

// An outcome is what the end of one try of a command or pipeline calls
// for.
type outcome int

const (
	done   outcome = iota // return what the try got
	redial                // the connection was gone before anything was sent
	resend                // refused unrun, and the pool was reset
)

// tries counts the tries of one command or pipeline that called for
// another.
type tries struct{ redials, resends int }

// settle ends loan l after a try that got err, and says what is to follow:
// redial when the connection was found gone before anything was sent
// (errRedial), resend when the server refused to run what was sent
// (unrun: see notRun) and the loan ended in a Reset (so that the next
// connection lent is of the new generation), done otherwise.
func settle(l wardpool.Loan[*conn], err error, unrun bool) outcome {
	c := l.Value()
	reset := c.reset.Load() != nil
	switch {
	case !c.end(l):
		return done
	case errors.Is(err, errRedial):
		return redial
	case reset && unrun:
		return resend
	}
	return done
}

// again reports whether to try once more after a try that ended in o,
// and waits the pause before a resend (see retryPolicy.wait). It says no
// when the tries are spent: the last try's error stands. A ctx that ends
// in the pause ends the call at the next acquire, which returns ctx's
// error.
func (p *Pool) again(ctx context.Context, t *tries, o outcome) bool {
	switch o {
	case redial:
		t.redials++
		return t.redials < maxTries
	case resend:
		if t.resends >= p.retry.tries {
			return false
		}
		t.resends++
		_ = p.retry.wait(ctx, t.resends) // its error is the next acquire's
		return true
	}
	return false
}

// Do runs one command given as its arguments, as redis.Client.Do.
func (p *Pool) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = p.Process(ctx, cmd)
	return cmd
}

// Pipelined runs the commands fn queues as one pipeline on one pooled
// connection, as redis.Client.Pipelined: it returns every command and the
// first error. A pipeline is sent again as Process sends a command again:
// on a connection found gone before anything was sent, or after a reset
// when every command of it was refused unrun (READONLY, MASTERDOWN,
// LOADING); not when one of them ran.
func (p *Pool) Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	return p.pipelined(ctx, fn, false)
}

// TxPipelined is Pipelined inside MULTI and EXEC, as
// redis.Client.TxPipelined. A transaction the server refused is not sent
// again (go-redis does not either): its commands all get EXEC's
// EXECABORT.
func (p *Pool) TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	return p.pipelined(ctx, fn, true)
}

func (p *Pool) pipelined(ctx context.Context, fn func(redis.Pipeliner) error, tx bool) ([]redis.Cmder, error) {
	// The commands are queued before a connection is taken: fn runs once
	// however often the pipeline is tried.
	pipe := p.Client().Pipeline()
	if err := fn(pipe); err != nil {
		return nil, err
	}
	cmds := pipe.Cmds()
	if len(cmds) == 0 {
		return cmds, nil
	}
	return cmds, p.execPipeline(ctx, cmds, tx)
}

// execPipeline runs cmds as one pipeline, inside MULTI and EXEC when tx is
// set, on one pooled connection, and returns the first error. It is tried
// again on another connection when the one it had was found gone before
// anything was sent, or, not as a transaction, when every command was
// refused unrun and the pool reset, as Process does. A pipeline may hold commands
// that change its connection's state (SELECT, CLIENT SETNAME, …): they
// apply to the commands after them in the pipeline, as on go-redis, and
// the connection is destroyed afterwards rather than lent again.
func (p *Pool) execPipeline(ctx context.Context, cmds []redis.Cmder, tx bool) error {
	if len(cmds) == 0 {
		return nil
	}
	stateful := false
	for _, cmd := range cmds {
		stateful = stateful || p.stateful(cmd)
	}
	queue := func(pipe redis.Pipeliner) error {
		return pipe.BatchProcess(ctx, cmds...)
	}
	var t tries
	for {
		l, err := p.acquire(ctx)
		if err != nil {
			return setErrs(cmds, err)
		}
		c := l.Value()
		if tx {
			_, err = c.cl.TxPipelined(ctx, queue)
		} else {
			_, err = c.cl.Pipelined(ctx, queue)
		}
		c.failed(err)
		if err != nil && !tx {
			judgeRest(c, cmds, err)
		}
		if stateful {
			c.dirty.Store(true)
		}
		// A transaction is not sent again on a reply: go-redis gives every
		// command of one EXEC refused the EXECABORT that says so, not the
		// reply that caused it, and does not send it again either.
		if !p.again(ctx, &t, settle(l, err, !tx && noneRun(cmds))) {
			return err
		}
	}
}

// judgeRest has the classifier read the error replies of a pipeline's
// commands besides first, the pipeline's error, which conn.failed read:
// a READONLY after a redis.Nil or a WRONGTYPE resets the pool as it would
// have alone. (A transaction's commands all carry EXEC's error.)
func judgeRest(c *conn, cmds []redis.Cmder, first error) {
	for _, cmd := range cmds {
		if e := cmd.Err(); e != nil && e != first && e != redis.Nil {
			if _, ok := replyError(e); ok {
				c.judge(e)
			}
		}
	}
}

// stateful reports whether cmd changes the state of the connection it runs
// on for the commands after it (see sessionCmd), except SELECT of the
// database the pool's connections are in, and HELLO when it only asks (no
// arguments) or names the protocol they speak, without AUTH or SETNAME.
func (p *Pool) stateful(cmd redis.Cmder) bool {
	if !sessionCmd(cmd) {
		return false
	}
	args := cmd.Args()
	switch cmd.Name() {
	case "select":
		// The database the pool's connections are in already.
		return len(args) != 2 || fmt.Sprint(args[1]) != strconv.Itoa(p.inner.DB)
	case "hello":
	default:
		return true
	}
	switch len(args) {
	case 1:
		return false
	case 2:
		proto := p.inner.Protocol
		if proto == 0 {
			proto = 3
		}
		return fmt.Sprint(args[1]) != strconv.Itoa(proto)
	}
	return true
}

// setErrs sets err on every command and returns it.
func setErrs(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

// Watch runs fn in an optimistic transaction watching keys on one pooled
// connection, as redis.Client.Watch; redis.TxFailedErr says a watched key
// changed. The connection is unwatched before it goes back.
func (p *Pool) Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	l, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	return l.Client().Watch(ctx, fn, keys...)
}

// Ping sends PING on a pooled connection.
func (p *Pool) Ping(ctx context.Context) error {
	return p.Process(ctx, redis.NewStatusCmd(ctx, "ping"))
}

// WardStats returns a reading of the pool's books and figures
// (wardpool.Stats), the form metrics.NewCollector and metrics.Observe
// read. PoolStats is go-redis's reading, in go-redis's shape. Every
// wardpool driver names the runtime's reading WardStats, so that it
// collides with no method of the driver's peer.
//
// The connections of Pub/Sub subscriptions are in its books (Live, Busy,
// Made, Loans, …) though they are not counted against Limits.Size: Busy
// may then exceed the Size by the subscriptions open.
func (p *Pool) WardStats() wardpool.Stats {
	s := p.k.Stats()
	b := p.subs.Stats().Books
	s.Live += b.Live
	s.Idle += b.Idle
	s.Busy += b.Busy
	s.Made += b.Made
	s.Failed += b.Failed
	s.Loans += b.Loans
	s.Reused += b.Reused
	s.Retired += b.Retired
	s.IdleRetired += b.IdleRetired
	s.LifeRetired += b.LifeRetired
	s.Dropped += b.Dropped
	return s
}

// PoolStats returns the pool's figures as go-redis's redis.PoolStats, for
// code and dashboards written for (*redis.Client).PoolStats: Hits are loans
// of an idle connection, Misses loans that had to wait for one to be
// dialled, Timeouts acquires whose context ended first, WaitCount callers
// that queued, WaitDurationNs the time successful acquires waited,
// Unusable connections found dead when checked before a loan, TotalConns
// and IdleConns the live and idle connections, StaleConns those retired
// (idle too long, too old, closed by Reset), PendingRequests the callers
// queued now. Counters are cut to 32 bits as go-redis's are. WardStats
// has the rest.
func (p *Pool) PoolStats() *redis.PoolStats {
	s := p.k.Stats()
	return &redis.PoolStats{
		Hits:            uint32(s.Reused),
		Misses:          uint32(s.Loans - s.Reused),
		Timeouts:        uint32(s.Canceled),
		WaitCount:       uint32(s.Waited),
		Unusable:        uint32(s.CheckFailures),
		WaitDurationNs:  s.AcquireWait.Nanoseconds(),
		TotalConns:      uint32(s.Live),
		IdleConns:       uint32(s.Idle),
		StaleConns:      uint32(s.Retired),
		PendingRequests: uint32(s.Waiting),
	}
}

// Limits returns the bounds the pool runs with.
func (p *Pool) Limits() pool.Limits { return p.k.Limits() }

// Addr returns the address connections are dialled to.
func (p *Pool) Addr() string { return p.addr }

// Reset closes every idle connection now and every lent one when it comes
// back: for after a failover, when every connection made before is
// suspect.
func (p *Pool) Reset() {
	p.k.Reset()
	p.subs.Reset()
}

// Rotate replaces every connection over the window over, at a bounded
// pace, instead of all at once: after rotating credentials (go-redis's
// Options.CredentialsProvider, or CredentialsProviderContext, gives each
// new connection the new ones) or moving to a new address. One old
// connection is closed at once and one more every over/n, idle ones by the
// timer and lent ones when they come back; subscriptions' connections
// rotate the same way. See wardpool.Keeper.Rotate.
func (p *Pool) Rotate(over time.Duration) {
	p.k.Rotate(over)
	p.subs.Rotate(over)
}

// Close shuts the pool: calls from now on fail with wardpool.ErrClosed and so
// do those waiting; idle connections are closed; then it waits for every
// loan to come home (closing each) until ctx ends, returning ctx.Err() if
// it ends first. Calling it again waits again.
func (p *Pool) Close(ctx context.Context) error {
	p.frontMu.Lock()
	p.shut.Store(true)
	if p.front != nil {
		// Its borrowed connections (a Conn, a Tx, a PubSub) are destroyed.
		_ = p.front.cl.Close()
	}
	p.frontMu.Unlock()
	err := p.k.Close(ctx)
	if serr := p.subs.Close(ctx); err == nil {
		err = serr
	}
	return err
}

// Name returns the pool's name (Config.Name, or the default given it): the
// start of its errors and its default metrics label.
func (p *Pool) Name() string { return p.k.Name() }

// MinIdle returns Config.MinIdle: how many idle connections are kept open.
// metrics.Observe exports it as db.client.connection.idle.min.
func (p *Pool) MinIdle() int { return p.minIdle }
