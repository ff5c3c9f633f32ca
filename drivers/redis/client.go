package redisward

import (
	"context"
	"net"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/wardpool/wardpool/internal/poolerr"
)

// Client returns a *redis.Client that runs on the pool, for code written
// for a *redis.Client, a redis.Cmdable or a redis.UniversalClient:
//
//	var rdb redis.Cmdable = p.Client()
//	n, err := rdb.Incr(ctx, "hits").Result()
//
// Commands and pipelines run on pooled connections, as Process and
// Pipelined do, after the hooks added with AddHook, in go-redis's order.
// What needs one connection for several commands borrows one for as long
// as it needs it: Conn holds a loan until the *redis.Conn is closed, Watch
// for the length of its function, and Subscribe, PSubscribe and SSubscribe
// for the life of the PubSub (a subscription's connection is counted in
// WardStats but not against Limits.Size, so subscriptions never starve
// commands, as on go-redis); those connections are destroyed afterwards
// when they were left in a state the next borrower would inherit (a
// subscription, SELECT, CLIENT TRACKING, …). A command that would leave
// such state on a connection shared command by command (SELECT through
// Do, say) is refused with a *NotPooledError.
//
// A hook added to a WithTimeout copy of the client runs too, but that
// copy's commands then go through go-redis's own processing on a
// connection borrowed for each (a HELLO more each): add hooks to the
// client itself. Hooks added to a Conn or a Tx run as on go-redis.
//
// Every call returns the same client until it is closed. Its Close closes
// that client only (its later commands fail with redis.ErrClosed) and the
// next call returns a new one; close the pool with Pool.Close. Its
// PoolStats counts only the connections it borrowed for Conn, Watch and
// PubSub: Pool.PoolStats reports the pool's. It is safe for concurrent use.
func (p *Pool) Client() *redis.Client {
	p.frontMu.Lock()
	defer p.frontMu.Unlock()
	if p.front == nil || p.front.closed() && !p.shut.Load() {
		p.front = p.newFront()
		if p.shut.Load() {
			_ = p.front.cl.Close()
		}
	}
	return p.front.cl
}

// front is one client handed out by Pool.Client, with the hooks that route
// its commands to the pool.
//
// go-redis runs a client's hooks in the order they were added, each
// wrapping the next, and the innermost wraps the client's own processing.
// The routing must be the innermost, so that every hook the user adds
// runs, yet the user adds hooks after it. So the routing is a tail hook,
// and whenever a hook is added after the newest tail a new tail is added
// behind it: the older tails pass commands through. A tail knows it is
// innermost when the function it wraps is go-redis's own processing, known
// by its code pointer (base); one that finds a user's hook behind it marks
// the client stale, and the first hook, probe, adds a new tail before the
// next command and runs that command through the new chain.
//
// go-redis also builds the hook chains of a client's *redis.Conn and
// *redis.Tx (Conn, Watch) from the client's hooks. Those must run on one
// connection, so a tail routes only the chain it is first asked to wrap,
// the client's own; later chains that reach go-redis's own processing
// (a Conn's, a Tx's) are passed through to it, and it borrows one
// connection for their life through dial.
type front struct {
	p  *Pool
	cl *redis.Client
	// ap is there to learn when cl is closed: closing a client closes its
	// autopipeliner, and ap.IsClosed is an atomic load.
	ap *redis.AutoPipeliner

	// base holds the code pointers of go-redis's own processing of a
	// command, a pipeline and a transaction, read when the first hook went
	// on; written once, before cl is shared.
	base [3]uintptr

	mu     sync.Mutex   // serialises fix
	newest atomic.Int64 // the id of the newest tail
	// stale says a hook was added behind the newest tail: the next command
	// adds a tail (see probe).
	stale atomic.Bool
}

// chain kinds, the index of front.base.
const (
	chainProcess = iota
	chainPipeline
	chainTx
)

// newFront builds the client that Client returns.
func (p *Pool) newFront() *front {
	f := &front{p: p}
	in := p.inner
	// go-redis's PubSub connections are outside its PoolSize (its PubSub
	// pool has no bound), as subscriptions are outside Size here (see
	// Pool.subs): the Size bounds the rest.
	size := p.k.Limits().Size
	f.cl = redis.NewClient(&redis.Options{
		Addr:     p.addr,
		Protocol: in.Protocol,
		// The connections it borrows were opened, authenticated and put in
		// their database by the pool (with the user's OnConnect and
		// credentials provider); a borrow says HELLO again, with the same
		// user, password and name, and SELECT of the same database: what
		// Options() shows is what the connections have.
		Username:              in.Username,
		Password:              in.Password,
		DB:                    in.DB,
		ClientName:            in.ClientName,
		DisableIdentity:       true,
		DialTimeout:           in.DialTimeout,
		ReadTimeout:           in.ReadTimeout,
		WriteTimeout:          in.WriteTimeout,
		ContextTimeoutEnabled: in.ContextTimeoutEnabled,
		ReadBufferSize:        in.ReadBufferSize,
		WriteBufferSize:       in.WriteBufferSize,
		// Its own pool holds only the connections borrowed for a Conn, a Tx
		// or a PubSub, and keeps none idle: each goes back to the Keeper
		// it came from. The Keeper bounds the first two; subscriptions
		// have their own, unbounded as on go-redis.
		PoolSize:         size,
		MaxIdleConns:     -1,
		ConnMaxIdleTime:  -1,
		MaxRetries:       -1,
		DialerRetries:    1,
		PipelinePoolSize: -1,
		// Nothing to be notified of: it has no connection of its own.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		Dialer:                   f.dial,
	})
	f.ap, _ = f.cl.AutoPipeline() // a new client is not closed: no error
	f.cl.AddHook(probe{f})
	f.stale.Store(true)
	f.fix()
	return f
}

// closed reports whether the client was closed.
func (f *front) closed() bool { return f.ap.IsClosed() }

// closedErr is the error of a command on a closed client: ErrClosed when
// the pool was closed, else go-redis's redis.ErrClosed.
func (f *front) closedErr() error {
	if f.p.shut.Load() {
		return ErrClosed
	}
	return redis.ErrClosed
}

// fix adds a tail behind every hook when the client is stale, and
// reports whether it did.
func (f *front) fix() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stale.Load() {
		return false // fixed already
	}
	f.stale.Store(false)
	t := &tail{f: f, id: f.newest.Load() + 1}
	f.newest.Store(t.id)
	f.cl.AddHook(t)
	return true
}

// codePtr returns the code pointer of fn: the same for every method value
// of one method, so go-redis's own processing of any client is known by it.
func codePtr(fn any) uintptr { return reflect.ValueOf(fn).Pointer() }

// probe is the first hook on a front's client, so the outermost: when it
// goes on, it is asked to wrap go-redis's own processing, and notes its
// code pointers. Before each command it adds a tail when a hook was added
// behind the newest (front.stale), and then runs the command again through
// the client, so that the new chain runs it and every hook runs once; not
// for a command of a Conn or a Tx, whose chains go on to their own
// connection anyway.
type probe struct{ f *front }

func (h probe) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h probe) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	f := h.f
	if f.base[chainProcess] == 0 {
		f.base[chainProcess] = codePtr(next)
	}
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.stale.Load() && f.fix() && !calledByConn() {
			return f.cl.Process(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook is asked for the pipeline chain, then for the
// transaction's.
func (h probe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	f := h.f
	switch {
	case f.base[chainPipeline] == 0:
		f.base[chainPipeline] = codePtr(next)
	case f.base[chainTx] == 0:
		f.base[chainTx] = codePtr(next)
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.stale.Load() && f.fix() && !calledByConn() {
			return f.redo(ctx, cmds)
		}
		return next(ctx, cmds)
	}
}

// calledByConn reports whether a method of a go-redis Conn, Tx or PubSub
// is on the caller's stack: whether the chain running is one of theirs,
// not the client's. Called only on the first command after a hook was
// added.
func calledByConn() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		fr, more := frames.Next()
		if rest, ok := strings.CutPrefix(fr.Function, "github.com/redis/go-redis/v9.(*"); ok &&
			(strings.HasPrefix(rest, "Tx)") || strings.HasPrefix(rest, "Conn)") || strings.HasPrefix(rest, "PubSub)")) {
			return true
		}
		if !more {
			return false
		}
	}
}

// tail routes the client's commands and pipelines to the pool (see front).
type tail struct {
	f  *front
	id int64
	// taken says which chains this tail was asked to wrap first: those of
	// the client itself, the chains the tail was added to.
	taken [3]atomic.Bool
}

func (t *tail) DialHook(next redis.DialHook) redis.DialHook { return next }

// routes says whether the tail routes a chain of kind k whose rest is
// next to the pool: only the newest tail, when it is innermost, and only
// in the client's own chain (the first it is asked to wrap). Elsewhere it
// passes: an older tail, a Conn's or a Tx's chain, or a chain with a hook
// behind it, which marks the client stale (see probe).
func (t *tail) routes(k int, next any) bool {
	if t.id != t.f.newest.Load() {
		return false
	}
	if codePtr(next) != t.f.base[k] {
		t.f.stale.Store(true)
		return false
	}
	return t.taken[k].CompareAndSwap(false, true)
}

func (t *tail) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if t.routes(chainProcess, next) {
		return t.f.process
	}
	return next
}

func (t *tail) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	switch codePtr(next) {
	case t.f.base[chainTx]:
		if t.routes(chainTx, next) {
			return t.f.processTx
		}
	default:
		if t.routes(chainPipeline, next) {
			return t.f.processPipeline
		}
	}
	return next
}

// redo runs a pipeline again through the client, as a transaction when
// go-redis wrapped it in MULTI and EXEC; those two get its error.
func (f *front) redo(ctx context.Context, cmds []redis.Cmder) error {
	pipe := f.cl.Pipeline()
	inner := cmds
	if tx, body := txBody(cmds); tx {
		pipe, inner = f.cl.TxPipeline(), body
	}
	if err := pipe.BatchProcess(ctx, inner...); err != nil {
		return setErrs(cmds, err)
	}
	_, err := pipe.Exec(ctx)
	if len(inner) != len(cmds) {
		cmds[0].SetErr(err)
		cmds[len(cmds)-1].SetErr(err)
	}
	return err
}

// txBody reports whether cmds is a transaction as go-redis hands it to a
// hook, inside MULTI and EXEC, and returns the commands between.
func txBody(cmds []redis.Cmder) (bool, []redis.Cmder) {
	if len(cmds) >= 2 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec" {
		return true, cmds[1 : len(cmds)-1]
	}
	return false, cmds
}

// process runs cmd on the pool, unless the client was closed.
func (f *front) process(ctx context.Context, cmd redis.Cmder) error {
	if f.closed() {
		err := f.closedErr()
		cmd.SetErr(err)
		return err
	}
	return f.p.Process(ctx, cmd)
}

func (f *front) processPipeline(ctx context.Context, cmds []redis.Cmder) error {
	if f.closed() {
		return setErrs(cmds, f.closedErr())
	}
	return f.p.execPipeline(ctx, cmds, false)
}

// processTx runs a transaction, which go-redis hands over inside MULTI and
// EXEC: those two are left for the pooled client's own TxPipelined to add
// again.
func (f *front) processTx(ctx context.Context, cmds []redis.Cmder) error {
	if f.closed() {
		return setErrs(cmds, f.closedErr())
	}
	_, body := txBody(cmds)
	return f.p.execPipeline(ctx, body, true)
}

// dial is the client's own dialer, used for what must stay on one
// connection (a Conn, a Tx, a PubSub): it borrows a connection from the
// pool for as long as the client keeps it (see lent).
//
// A subscription's connection comes from the pool's subscription Keeper
// (Pool.subs), not against Limits.Size.
func (f *front) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	k := f.p.k
	if calledByPubSub() {
		k = f.p.subs
	}
	l, err := k.Acquire(ctx)
	if err != nil {
		return nil, poolerr.Wrap(f.p.k.Name(), err)
	}
	return newLent(f, l), nil
}

// calledByPubSub reports whether a method of a go-redis PubSub is on the
// caller's stack: whether the connection dialled is a subscription's.
// Called once per borrowed connection, not per command.
func calledByPubSub() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		fr, more := frames.Next()
		if strings.HasPrefix(fr.Function, "github.com/redis/go-redis/v9.(*PubSub)") {
			return true
		}
		if !more {
			return false
		}
	}
}
