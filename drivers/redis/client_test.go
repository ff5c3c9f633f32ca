package redisward

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/pool"
)

// TestClient drives the pool through the *redis.Client that Client
// returns, as code written for go-redis would.
func TestClient(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	var rdb redis.UniversalClient = p.Client()
	if p.Client() != rdb {
		t.Fatal("Client returned a second client")
	}
	if err := rdb.Set(ctx, k+"a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.IncrBy(ctx, k+"a", 2).Result(); err != nil || n != 3 {
		t.Fatalf("INCRBY = %d %v", n, err)
	}
	if err := rdb.Get(ctx, k+"missing").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET missing = %v", err)
	}
	var get *redis.StringCmd
	cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, k+"a")
		get = pipe.Get(ctx, k+"a")
		return nil
	})
	if err != nil || len(cmds) != 2 || get.Val() != "4" {
		t.Fatalf("Pipelined: %v %v %q", cmds, err, get.Val())
	}
	var i1, i2 *redis.IntCmd
	cmds, err = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		i1 = pipe.Incr(ctx, k+"a")
		i2 = pipe.Incr(ctx, k+"a")
		return nil
	})
	if err != nil || len(cmds) != 2 || i1.Val() != 5 || i2.Val() != 6 {
		t.Fatalf("TxPipelined: %v %v (%d, %d)", cmds, err, i1.Val(), i2.Val())
	}
	// A transaction with an error reply inside reports it.
	_, err = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.LPush(ctx, k+"a", "x")
		return nil
	})
	if err == nil {
		t.Fatal("LPUSH on a string inside MULTI succeeded")
	}
	// Watch is a transaction on one loan, given back afterwards.
	err = rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, k+"a").Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, k+"a", n*2, 0)
			return nil
		})
		return err
	}, k+"a")
	if err != nil {
		t.Fatalf("Watch on the client: %v", err)
	}
	if v, _ := rdb.Get(ctx, k+"a").Int(); v != 12 {
		t.Fatalf("after Watch: %d, want 12", v)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 1, Live: 1, Busy: 0}, pool.Books{Made: s.Made, Live: s.Live, Busy: s.Busy}); diff != "" {
			t.Fatalf("want one connection made and kept (-want +got):\n%s", diff)
		}
	}
}

// TestSessionCommandsRefused: a command that would leave state on a pooled
// connection for its next borrower is refused before anything is sent, by
// every path that lends a connection for one call.
func TestSessionCommandsRefused(t *testing.T) {
	p, k := newPool(t, 1, nil)
	ctx := context.Background()
	for _, args := range [][]any{
		{"SELECT", 1}, {"select", 1}, {"WATCH", k + "a"}, {"MULTI"}, {"SUBSCRIBE", "ch"},
		{"CLIENT", "TRACKING", "on"}, {"client", "reply", "off"}, {"AUTH", "x"}, {"HELLO", 2},
	} {
		if err := p.Do(ctx, args...).Err(); !errors.Is(err, ErrNotPooled) {
			t.Errorf("Do%v = %v, want ErrNotPooled", args, err)
		}
		if err := p.Client().Do(ctx, args...).Err(); !errors.Is(err, ErrNotPooled) {
			t.Errorf("Client().Do%v = %v, want ErrNotPooled", args, err)
		}
	}
	// In a pipeline, on one connection, SELECT applies to what follows it,
	// and the connection is destroyed afterwards.
	var get *redis.StringCmd
	_, err := p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, k+"a", "0", 0)
		pipe.Select(ctx, 2)
		pipe.Set(ctx, k+"a", "2", 0)
		get = pipe.Get(ctx, k+"a")
		pipe.Del(ctx, k+"a")
		return nil
	})
	if err != nil || get.Val() != "2" {
		t.Fatalf("Pipelined with SELECT: %v %q", err, get.Val())
	}
	if v := p.Do(ctx, "GET", k+"a").Val(); v != "0" {
		t.Fatalf("after a pipeline's SELECT, GET in database 0 = %v: the connection stayed in database 2", v)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 2, Live: 1}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
			t.Fatalf("the pipeline's connection was lent again (-want +got):\n%s", diff)
		}
	}
	if err := p.Do(ctx, "DEL", k+"a").Err(); err != nil {
		t.Fatal(err)
	}
	// Harmless CLIENT subcommands go through.
	if err := p.Do(ctx, "CLIENT", "ID").Err(); err != nil {
		t.Fatal(err)
	}
	// HELLO that only asks, or names the protocol spoken, goes through.
	if err := p.Client().Do(ctx, "HELLO").Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Client().Do(ctx, "HELLO", 3).Err(); err != nil {
		t.Fatal(err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Made: 2, Live: 1}, pool.Books{Made: s.Made, Live: s.Live}); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	}
}
