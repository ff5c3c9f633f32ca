// Package redisward is a pool of go-redis v9 connections run by wardpool's
// wardpool.Keeper, with a ward in front of the server, a leak watch behind it,
// and a shared.Store on Redis (Store) through which replicas share breaker,
// rate and quota state and one connection budget.
//
// The package lives in the folder drivers/redis and is named redisward, so
// that it never shadows go-redis in a file that imports both:
//
//	import redisward "github.com/wardpool/wardpool/drivers/redis"
//
//	cfg, err := redisward.ParseURL("redis://127.0.0.1:6379/0?pool_size=8")
//	...
//	p, err := redisward.New(ctx, cfg)
//	...
//	defer p.Close(ctx)
//	v, err := p.Do(ctx, "GET", "key").Text()
//
// Single commands go through Do and Process, batches through Pipelined and
// TxPipelined, optimistic transactions through Watch. Client returns a
// *redis.Client whose commands and pipelines run on the pool, for code
// written against go-redis (redis.Cmdable, redis.UniversalClient): its
// hooks run as go-redis runs them, and its Conn, Watch, Subscribe,
// PSubscribe and SSubscribe borrow a connection for as long as they need
// one. Acquire lends one connection as a *redis.Client of its own for work
// that must stay on one connection. A command sent on its own that would
// leave state behind on a connection shared command by command (SELECT,
// WATCH, MULTI, SUBSCRIBE, CLIENT TRACKING, … through Do or Process) is
// refused with a *NotPooledError (ErrNotPooled), which names the command
// and what to use instead.
//
// # How a Keeper carries go-redis
//
// go-redis keeps its connection pool inside *redis.Client and offers no way
// to build a client around a connection from outside. So each resource the
// Keeper holds is a *redis.Client of its own whose pool has a single slot,
// and whose Dialer hands over the one network connection the Keeper's dial
// opened, once: asked again, it refuses. The Keeper's dial is therefore the
// only way a connection is ever opened, so every dial passes the ward (the
// breaker, the bucket, the backoff) and shows in the books, and a
// connection lives and dies by the Keeper's Limits (Size, Idle, Keep,
// Life). A dial is the network connect followed by a PING, which runs
// go-redis's whole handshake (HELLO or AUTH, SELECT, CLIENT SETINFO,
// OnConnect): a wrong password is a failed dial, not a failed command.
//
// What the choice costs, against go-redis's own pool on the same server:
//
//   - Memory: a client's state beside each connection, about 1.8 KB over
//     go-redis's 68.5 KB per connection (its 32 KiB read and write buffers
//     dominate both). No goroutine per client.
//   - Time: the Keeper's acquire and release around go-redis's own (a
//     single-slot pool that never waits), and a look at the socket before
//     lending a connection that sat idle (below). That look takes the
//     place of the one go-redis's pool takes at every connection it hands
//     over: the connection's client is given the connection without its
//     socket, so it skips its own, and a GET allocates 4 times to
//     go-redis's 7. A connection used less than Config.CheckIdle ago (a
//     millisecond) is not looked at, so under load a GET makes one system
//     call fewer than on go-redis's pool. Paired runs against go-redis's
//     pool on the same server are in bench/README.md.
//   - A command is sent again only when the server provably did not run
//     it: a READONLY, MASTERDOWN or LOADING reply (after the reset it
//     causes, on a connection of the new generation; see Failover), up to
//     Options.MaxRetries times with go-redis's pauses, or a connection
//     found gone before anything was sent. go-redis also resends on
//     network errors and timeouts (up to MaxRetries, 3 by default,
//     writes included), and resends a pipeline whose first command got
//     such a reply even when later ones ran: the pool returns those
//     errors, since the command may have run (Config.Options says which).
//   - A PubSub of Client() holds a connection for its life, counted in
//     the books (WardStats) but not against Limits.Size, as go-redis keeps its
//     PubSub connections outside PoolSize, and its connection is
//     destroyed when it closes. Maintenance notifications are not pooled.
//     Client-side caching (Options.ClientSideCacheConfig and the other
//     ClientSideCache fields) is refused by New with ErrConfig: use a
//     separate *redis.Client for cached reads.
//   - A *redis.Conn or a Watch of Client() says HELLO again on the
//     connection it borrows (one round trip; hooks see it, as they see a
//     new connection's handshake on go-redis). Client().PoolStats counts
//     only those borrowed connections: Pool.PoolStats has the pool's.
//
// # Waiting for a connection
//
// A command that finds every connection of Limits.Size lent waits for one,
// in arrival order, bounded by its context and by Config.AcquireTimeout
// when that is set (the earlier of the two; the timeout's error unwraps to
// wardpool.ErrAcquireTimeout and reads as context.DeadlineExceeded). When
// callers have waited longer than Config.StallAfter (10 s by default) and
// no connection has come back for as long, the pool logs one warning that
// says how many wait, how many connections are held and where each holder
// acquired (with Config.StallSites or LeakAfter), and counts it in
// Stats().Stalls: the pool a caller starves by holding a connection while
// it waits for another.
//
// # Broken connections
//
// A command that fails with anything but a reply from the server (a
// network error, a timeout or a context ending mid-command, a closed
// client) marks its connection broken: the reply may still be on its way,
// so the connection is destroyed when the loan ends rather than lent again.
// An error reply (WRONGTYPE, NOSCRIPT, …) and redis.Nil leave the
// connection in use; READONLY does not (the server became a replica, and a
// new connection follows the address to the new primary).
//
// # Failover
//
// Every error reply is also read by Config.Classify, which says whether it
// condemns every connection to the server: by default (DefaultClassify)
// READONLY, MASTERDOWN and LOADING do. The first such reply a loan gets
// retires the pool's generation (wardpool.Loan.Reset): idle connections
// are closed at once and lent ones as they come back, so after a Sentinel
// or cluster failover no connection to the demoted server is lent again,
// and the next callers dial afresh (through Options.Dialer, a Sentinel's
// address lookup, say). A reset is tied to the failing connection's
// generation: when every connection of a pool gets READONLY at once, the
// first reset retires them all and the others reset nothing, so the
// connections dialled since are kept. Resets are counted by cause in
// WardStats().ResetCauses and by the metrics package
// (wardpool_resets_total{cause}), and each is logged once at warning
// level. Set Classify to a function of your own to change the list, or
// to wardpool.ReuseAll to have READONLY destroy its connection alone, as
// go-redis does.
//
// Those three replies say the server refused the command without running
// it, so a command (Do, Process, Client()'s commands) that gets one is
// sent again after the reset, on a connection of the new generation, as
// go-redis resends it: up to Options.MaxRetries times (3 by default), a
// pause of Options.MinRetryBackoff to MaxRetryBackoff before each (10 ms
// to 1 s), within the caller's context. A pipeline is sent again when
// every command of it got one. With Config.HoldOnFailover set, the resend
// waits in the hold, which dials one connection at a time until one is
// made, instead of dialing a server that is down: after a Sentinel
// failover the caller sees the new master's reply, not the READONLY.
//
// A connection the server closed while it sat idle (CLIENT KILL, the
// server's timeout, a restart) is found before it is lent, by a
// non-blocking peek at its socket that sends nothing (on systems without
// the peek, by the command that fails on it). It is replaced and the
// caller never sees it. The peek is skipped for a connection that came
// back to the pool no more than Config.CheckIdle ago (a millisecond by
// default; negative peeks at every borrow): one the server closes in such
// a short gap between two uses, or in the microseconds between the peek
// and the command, fails that command with the network error and is
// destroyed. The command is not run again, since it may have reached the
// server.
//
// # A server that vanishes
//
// A server whose host is gone, or behind a link or firewall that drops
// packets without a reset, answers nothing. go-redis's ReadTimeout (5 s by
// default) ends a command in flight on such a connection, but an idle one
// stays open as long as the kernel keeps it (go-redis's dialer probes every
// 5 minutes), and the peek before a loan finds nothing wrong with it, so
// the next command on it is lost to the read timeout. When Options.Dialer
// is nil the pool dials with Config.DeadPeerTimeout (DefaultDeadPeerTimeout,
// 5 s, by default): the kernel closes such a connection at most that long,
// plus a second, after the server's last packet (TCP_USER_TIMEOUT on Linux,
// which also ends a dial whose SYN goes unanswered; keepalive probes from
// 2 s of quiet, 1 s apart). The peek then finds it closed and it is
// replaced before a command is lost on it. FromFailoverOptions' dialer
// dials the master with the default; an Options.Dialer of your own is used
// as it is. Measured in internal/failover (TestSilentLinkRedis), beside
// go-redis: its figures are in that package's doc.
//
// # Sharing guards between replicas
//
// Store is a shared.Store (package ward/shared) whose every method is one
// atomic command or script and one round trip: INCR with the expiry set when
// the INCR creates the key, the two-window counter's read-compare-increment,
// SET NX PX, GET, DEL, and each step of a fleet-wide connection budget.
// shared.Breakers in several processes over Stores on the same server and
// key act as one breaker; shared.Counters and shared.Periods spend one rate
// or quota between them; shared.Budgets lease one budget of connections.
// NewClientStore takes any go-redis client, so a Cluster or a Sentinel
// failover client works: every call's keys share a hash tag, one slot. A
// Cluster client is asked to reload its map of slots when a command goes
// unanswered, so the Store follows a failover in about a second past the
// cluster's node timeout (Store says what each client needs).
package redisward
