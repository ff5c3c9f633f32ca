package redisward

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Client returns a *redis.Client that runs every command and pipeline on
// the pool, as Process and Pipelined do: code written for a *redis.Client,
// a redis.Cmdable or a redis.UniversalClient takes the pool unchanged.
//
//	var rdb redis.Cmdable = p.Client()
//	n, err := rdb.Incr(ctx, "hits").Result()
//
// It never opens a connection itself, and it refuses what would leave state
// on a pooled connection: Watch, Conn, Subscribe and commands such as
// SELECT fail with ErrNotPooled. Its Close closes nothing but itself; close
// the pool with Pool.Close. Every call returns the same client, which is
// safe for concurrent use.
func (p *Pool) Client() *redis.Client { return p.front }

// newFront builds the client that Client returns.
func (p *Pool) newFront() *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:             p.addr,
		PoolSize:         1,
		MaxRetries:       -1,
		DialerRetries:    1,
		PipelinePoolSize: -1,
		ConnMaxIdleTime:  -1,
		Protocol:         p.inner.Protocol,
		// Nothing to be notified of: it has no connection.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, ErrNotPooled
		},
	})
	c.AddHook(front{p})
	return c
}

// front routes a client's commands to the pool instead of its own
// connections.
type front struct{ p *Pool }

func (f front) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, ErrNotPooled }
}

func (f front) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return f.p.Process
}

// ProcessPipelineHook serves both Pipelined and TxPipelined: go-redis hands
// a transaction to the hook already inside MULTI and EXEC, and those two
// are left for the pooled client's own TxPipelined to add again.
func (f front) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		tx := len(cmds) >= 2 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec"
		if tx {
			cmds = cmds[1 : len(cmds)-1]
		}
		return f.p.execPipeline(ctx, cmds, tx)
	}
}
