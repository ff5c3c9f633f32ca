package redisward

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/wardpool/wardpool"
)

// errRedial is what a connection's client gets when it asks for a second
// network connection. Each client owns the one connection the pool dialled
// for it and may not open another behind the pool's back (the dial would
// escape the ward and the books). A command failing with it never reached
// the server, so it is safe to run again on another connection.
var errRedial = errors.New("redisward: connection is gone and may not be redialled in place")

// conn is what the Keeper holds for one connection: a go-redis client of
// pool size one whose only network connection is nc. The Keeper recognises
// it by its pointer.
type conn struct {
	cl   *redis.Client
	nc   net.Conn // cl's one network connection, lent bare by Pool.Client's dial (see lent)
	peek *peeker  // looks at the client's network connection
	// broken is set by the client's hook when a command fails in a way that
	// leaves the connection unusable (anything but a reply from the
	// server); a loan carrying it ends in Destroy, not Release.
	broken atomic.Bool
	// reset, when set, is the error reply that earned the loan a Reset
	// verdict (see judge); the loan ends in Loan.Reset.
	reset atomic.Pointer[resetNote]
	// classify is the Keeper's Classify, set when the connection is made.
	classify func(error) (wardpool.Verdict, string)
	// dirty is set by the hook when a command left state on the connection
	// that the next borrower would inherit (see sessionCmd); watching while
	// a WATCH has not been ended by EXEC, DISCARD or UNWATCH. Either makes
	// the loan end in Destroy.
	dirty, watching atomic.Bool
	// hooked says the hook is on cl. It is put on when the connection is
	// first lent by Pool.Acquire, whose borrower sends what it likes on
	// it, and stays. Process and the pipelines refuse what would need
	// tracking and mark a failure themselves (conn.failed), so on a
	// connection only they have used a command runs one closure and one
	// stack frame fewer. Read and written only by the connection's
	// borrower.
	hooked bool
}

// hookOn puts the hook on the connection's client if it is not on yet.
func (c *conn) hookOn() {
	if !c.hooked {
		c.cl.AddHook(hook{c})
		c.hooked = true
	}
}

// failed marks the connection broken when err, returned by a command or
// pipeline sent on it, leaves it unfit (see broken), and has an error
// reply from the server classified (see judge).
func (c *conn) failed(err error) {
	if err == nil || err == redis.Nil {
		return
	}
	if broken(err) {
		c.broken.Store(true)
	}
	if _, ok := replyError(err); ok {
		c.judge(err)
	}
}

// unfit reports whether the connection must not be lent again.
func (c *conn) unfit() bool {
	return c.broken.Load() || c.dirty.Load() || c.watching.Load()
}

// track notes what cmd, sent on the connection, leaves behind.
func (c *conn) track(cmd redis.Cmder) {
	if !sessionCmd(cmd) {
		return
	}
	switch cmd.Name() {
	case "watch":
		c.watching.Store(true)
	case "unwatch", "exec", "discard":
		c.watching.Store(false)
	case "multi":
		// Ended by its EXEC or DISCARD, which go-redis's TxPipelined sends
		// in the same pipeline; a MULTI left open is caught by watching.
		c.watching.Store(true)
	default:
		c.dirty.Store(true)
	}
}

// dialer opens network connections for o: its Dialer, or a net.Dialer
// (with TLS when o.TLSConfig is set) as go-redis would, whose connections
// are found dead within deadPeer (Config.DeadPeerTimeout).
func dialer(o *redis.Options, deadPeer time.Duration) func(ctx context.Context) (net.Conn, error) {
	network := o.Network
	if network == "" {
		network = "tcp"
	}
	addr := o.Addr
	if addr == "" {
		addr = "localhost:6379"
	}
	if d := o.Dialer; d != nil {
		return func(ctx context.Context) (net.Conn, error) { return d(ctx, network, addr) }
	}
	timeout := o.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	nd := netDialer(timeout, deadPeer)
	if o.TLSConfig != nil {
		td := &tls.Dialer{NetDialer: nd, Config: o.TLSConfig}
		return func(ctx context.Context) (net.Conn, error) { return td.DialContext(ctx, network, addr) }
	}
	return func(ctx context.Context) (net.Conn, error) { return nd.DialContext(ctx, network, addr) }
}

// innerOptions returns the options every connection's client is built
// from: the user's, with go-redis's own pooling turned into a single slot
// that never dials on its own, never retries and never expires.
func innerOptions(o *redis.Options) redis.Options {
	in := *o
	in.PoolSize = 1
	in.MinIdleConns = 0
	in.MaxIdleConns = 1
	in.MaxActiveConns = 1
	in.MaxConcurrentDials = 1
	in.ConnMaxIdleTime = -1
	in.ConnMaxLifetime = 0
	in.ConnMaxLifetimeJitter = 0
	in.MaxRetries = -1
	in.DialerRetries = 1
	in.PipelinePoolSize = -1
	in.AutoPipelineOptions = nil
	in.ClientSideCache = nil
	in.ClientSideCacheConfig = nil
	in.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	in.Dialer = nil
	return in
}

// dial opens one connection: the network dial, then a client around it and
// a PING, which runs go-redis's handshake (HELLO or AUTH, SELECT, OnConnect),
// so a wrong password or database fails the dial rather than a later
// command.
func (p *Pool) dial(ctx context.Context) (*conn, error) {
	dctx := ctx
	if p.dialTimeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, p.dialTimeout)
		defer cancel()
	}
	nc, err := p.netDial(dctx)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, peek: newPeeker(nc), classify: p.classify}
	o := p.inner
	var spent atomic.Bool
	o.Dialer = func(context.Context, string, string) (net.Conn, error) {
		if spent.Swap(true) {
			return nil, errRedial
		}
		return bare{nc}, nil
	}
	c.cl = redis.NewClient(&o)
	if err := c.cl.Ping(dctx).Err(); err != nil {
		_ = c.cl.Close()
		_ = nc.Close() // in case the client never took it
		return nil, err
	}
	return c, nil
}

// bare is a network connection that shows its client nothing but the
// methods of net.Conn. go-redis looks at the socket of every connection its
// pool hands over when the connection offers one (syscall.Conn): a
// non-blocking recvfrom behind a SetDeadline, and three allocations for
// the raw connection and the callback. The Keeper already looks at every
// connection that sat idle before lending it (Config.CheckIdle), so each
// connection's client is given its connection as a bare net.Conn and
// skips its own look: one system call and three allocations fewer per
// command, and a connection used moments ago is not looked at at all.
type bare struct{ net.Conn }

// SetDeadline clears nothing when asked to clear both deadlines, and sets
// them otherwise. go-redis (v9.23) calls it only to clear the deadlines
// before its own look at the socket, which a bare connection skips; every
// command then sets its own read and write deadlines (or none, with a
// negative timeout, when none was ever set), and the Keeper's peek does
// not read them. Skipping the clear saves a timer update per command.
func (b bare) SetDeadline(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	return b.Conn.SetDeadline(t)
}

// close closes the connection's client, and with it the connection.
func (p *Pool) close(c *conn) error {
	err := c.cl.Close()
	if errors.Is(err, redis.ErrClosed) {
		err = nil
	}
	return err
}

// check reports an error when the connection's peer has closed it or it
// has failed (a killed client, a restarted server, an idle timeout), found
// by a peek at the socket that sends nothing.
func (p *Pool) check(_ context.Context, c *conn) error {
	if c.broken.Load() {
		return errRedial
	}
	return c.peek.alive()
}

// broken reports whether err, returned by a command, leaves the connection
// unfit for the next one. A reply from the server (an error reply such as
// WRONGTYPE, or redis.Nil) leaves it fit, except READONLY, which says the
// server became a replica: go-redis drops those connections too, so that a
// new one follows the address to the new primary. Anything else (a network
// error, a timeout or cancelled context mid-command, a closed client) may
// leave a reply unread on the wire, so the connection is not reused.
func broken(err error) bool {
	if err == nil || err == redis.Nil {
		return false
	}
	if re, ok := replyError(err); ok {
		return strings.HasPrefix(re.Error(), "READONLY ")
	}
	return true
}

// replyError finds an error reply from the server (a redis.Error) in err's
// chain. It is errors.As without the allocation errors.As makes for an
// interface target, since it runs after every failed command.
func replyError(err error) (redis.Error, bool) {
	for err != nil {
		switch e := err.(type) {
		case redis.Error:
			return e, true
		case interface{ Unwrap() []error }:
			for _, w := range e.Unwrap() {
				if re, ok := replyError(w); ok {
					return re, true
				}
			}
			return nil, false
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return nil, false
		}
	}
	return nil, false
}

// hook watches every command and pipeline of one connection's client,
// notes what they leave on the connection (conn.track), and marks the
// connection broken when one fails as broken describes. It goes on only
// after the handshake, whose HELLO, AUTH and SELECT are the state the
// connection is meant to have, not state a borrower left on it.
type hook struct{ c *conn }

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.track(cmd)
		err := next(ctx, cmd)
		h.c.failed(err)
		return err
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.c.track(cmd)
		}
		err := next(ctx, cmds)
		h.c.failed(err)
		return err
	}
}

// ErrNotPooled is what Process, Do, Pipelined, TxPipelined and the client
// of Pool.Client answer for a command that changes the state of the
// connection it runs on for the commands after it (SELECT, WATCH, MULTI,
// SUBSCRIBE, CLIENT TRACKING, AUTH, …): on a pooled connection that state
// would pass to whoever borrows it next, while the caller's next command
// runs elsewhere. The error returned is a *NotPooledError, which names the
// command and what to use instead, and errors.Is it to ErrNotPooled.
var ErrNotPooled = errors.New("redisward: command changes its connection's state and needs a connection of its own")

// NotPooledError is the error of a command refused on a pooled connection
// (see ErrNotPooled): Cmd is the command as go-redis names it ("select",
// "client setname"), Use what to do instead.
type NotPooledError struct {
	Cmd string
	Use string
}

func (e *NotPooledError) Error() string {
	return "redisward: " + strings.ToUpper(e.Cmd) + " changes its connection's state and is refused on a pooled connection: " + e.Use
}

// Is reports whether target is ErrNotPooled.
func (e *NotPooledError) Is(target error) bool { return target == ErrNotPooled }

// notPooled returns the error for cmd, a sessionCmd.
func notPooled(cmd redis.Cmder) error {
	name := cmd.Name()
	if name == "client" {
		if args := cmd.Args(); len(args) > 1 {
			if s, ok := args[1].(string); ok {
				name += " " + strings.ToLower(s)
			}
		}
	}
	use := "use Client().Conn(), a connection of its own for its life, or Pool.Acquire"
	switch name {
	case "select":
		use = "set Config.Options.DB, or use Client().Conn() or Pool.Acquire for one connection in another database"
	case "auth", "hello":
		use = "set Config.Options.Username, Password or Protocol, which every pooled connection is opened with"
	case "client setname":
		use = "set Config.Options.ClientName, which every pooled connection is opened with"
	case "watch", "unwatch", "multi", "exec", "discard":
		use = "use Client().Watch, TxPipelined, Pool.Watch or Pool.TxPipelined"
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe":
		use = "use Client().Subscribe, PSubscribe or SSubscribe, which open a connection of their own"
	}
	return &NotPooledError{Cmd: name, Use: use}
}

// sessionCmd reports whether cmd changes the state of its connection for
// the commands after it (see ErrNotPooled).
func sessionCmd(cmd redis.Cmder) bool {
	var arg string
	if cmd.Name() == "client" {
		if args := cmd.Args(); len(args) > 1 {
			if a, ok := args[1].(string); ok {
				arg = strings.ToLower(a)
			}
		}
	}
	return sessionName(cmd.Name(), arg)
}

// sessionName reports whether the command named name (in lower case), with
// first argument arg (in lower case, read only for CLIENT), changes the
// state of its connection for the commands after it.
func sessionName(name, arg string) bool {
	switch name {
	case "select", "auth", "hello", "reset", "quit", "monitor",
		"watch", "unwatch", "multi", "exec", "discard",
		"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
		"readonly", "readwrite":
		return true
	case "client":
		switch arg {
		case "tracking", "reply", "setname", "no-evict", "no-touch", "caching":
			return true
		}
	}
	return false
}
