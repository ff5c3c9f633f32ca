package redisward

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
)

// logHook logs what it wraps, into a shared log, as go-redis's own "Hook"
// specs do.
type logHook struct {
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (h logHook) add(s string) {
	h.mu.Lock()
	*h.log = append(*h.log, h.name+" "+s)
	h.mu.Unlock()
}

func (h logHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h logHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add("start " + cmd.Name())
		err := next(ctx, cmd)
		h.add(fmt.Sprintf("end %s %v", cmd.Name(), err))
		return err
	}
}

func (h logHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, c := range cmds {
			names = append(names, c.Name())
		}
		h.add("pipeline start " + strings.Join(names, ","))
		err := next(ctx, cmds)
		h.add(fmt.Sprintf("pipeline end %v", err))
		return err
	}
}

// hookRun runs the same commands, hooks added between them, on c, and
// returns what the hooks saw.
func hookRun(t *testing.T, c *redis.Client, k string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	c.AddHook(logHook{"h1", &mu, &log})
	c.AddHook(logHook{"h2", &mu, &log})
	_ = c.Set(ctx, k, "1", 0).Err()
	_, _ = c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, k)
		pipe.Get(ctx, k)
		return nil
	})
	// A hook added after commands ran goes inside the others.
	c.AddHook(logHook{"h3", &mu, &log})
	_ = c.Get(ctx, k+"missing").Err()
	_, _ = c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, k)
		return nil
	})
	_ = c.Watch(ctx, func(tx *redis.Tx) error {
		return tx.Get(ctx, k).Err()
	}, k)
	conn := c.Conn()
	_ = conn.Ping(ctx).Err()
	_ = conn.Close()
	return log
}

// TestClientHooksAsGoRedis: hooks added to Client() run as they run on a
// plain go-redis client, in the same order around the same commands.
func TestClientHooksAsGoRedis(t *testing.T) {
	p, k := newPool(t, 2, nil)
	// The plain client says no more than HELLO when it connects; hooks see
	// a connection's HELLO on both (go-redis's on a dial, ours when a Conn
	// or a Tx borrows a connection), at different times: left out.
	a := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer a.Close()
	clean := func(log []string) []string {
		var out []string
		for _, l := range log {
			if !strings.Contains(l, " hello") {
				out = append(out, l)
			}
		}
		return out
	}
	want := clean(hookRun(t, a, k))
	got := clean(hookRun(t, p.Client(), k))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hooks on Client() saw:\n%s\n\non go-redis:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < 20 {
		t.Fatalf("the run saw too little to compare: %q", want)
	}
	if s := p.WardStats(); s.Busy != 0 {
		t.Fatalf("a loan is still out: %+v", s.Books)
	}
}

// TestClientConnSticky: a *redis.Conn from Client() holds one connection,
// a loan, until its Close; one left in another database is destroyed.
func TestClientConnSticky(t *testing.T) {
	p, _ := newPool(t, 2, nil)
	ctx := context.Background()
	conn := p.Client().Conn()
	id1, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Client().Ping(ctx).Err(); err != nil { // another connection
		t.Fatal(err)
	}
	id2, err := conn.ClientID(ctx).Result()
	if err != nil || id1 != id2 {
		t.Fatalf("CLIENT ID on one Conn: %d then %d (%v)", id1, id2, err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 1, Live: 2}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("while the Conn is open (-want +got):\n%s", diff)
		}
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 0, Live: 2}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("after Close the connection should be back (-want +got):\n%s", diff)
		}
	}
	// SELECT on a Conn works, and its connection is not lent again.
	conn = p.Client().Conn()
	if err := conn.Select(ctx, 1).Err(); err != nil {
		t.Fatal(err)
	}
	sel, _ := conn.ClientID(ctx).Result()
	_ = conn.Close()
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 0, Live: 1}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("a Conn left in database 1 was kept (-want +got):\n%s", diff)
		}
	}
	for range 3 {
		if id, _ := p.Do(ctx, "CLIENT", "ID").Int64(); id == sel {
			t.Fatalf("connection %d, left in database 1, lent again", sel)
		}
	}
}

// TestClientSubscribe: a PubSub gets a connection of its own, counted as a
// loan, destroyed when it closes.
func TestClientSubscribe(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	rdb := p.Client()
	sub := rdb.Subscribe(ctx, k+"ch")
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if s := p.WardStats(); s.Busy != 1 {
		t.Fatalf("the subscription's connection is not a loan: %+v", s.Books)
	}
	if err := rdb.Publish(ctx, k+"ch", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := sub.ReceiveMessage(ctx)
	if err != nil || m.Payload != "hello" {
		t.Fatalf("ReceiveMessage: %v %v", m, err)
	}
	made := p.WardStats().Made
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	s := p.WardStats()
	if diff := cmp.Diff(pool.Books{Busy: 0, Live: int(made) - 1}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
		t.Fatalf("the subscription's connection was not destroyed (-want +got):\n%s", diff)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestClientClose: Close on the client closes that client, not the pool.
func TestClientClose(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	c := p.Client()
	conn := c.Conn()
	if err := conn.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Ping after Close: %v, want redis.ErrClosed", err)
	}
	if _, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Ping(ctx)
		return nil
	}); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Pipelined after Close: %v, want redis.ErrClosed", err)
	}
	if s := p.WardStats(); s.Busy != 0 {
		t.Fatalf("the closed client's Conn still holds a loan: %+v", s.Books)
	}
	c2 := p.Client()
	if c2 == c {
		t.Fatal("Client returned the closed client")
	}
	if err := c2.Set(ctx, k, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPoolStats: the pool's figures in go-redis's shape.
func TestPoolStats(t *testing.T) {
	p, _ := newPool(t, 2, nil)
	ctx := context.Background()
	for range 3 {
		if err := p.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, b := p.PoolStats(), p.WardStats()
	if s.TotalConns != 1 || s.IdleConns != 1 || uint64(s.Hits) != b.Reused || uint64(s.Hits+s.Misses) != b.Loans || s.Hits < 3 {
		t.Fatalf("PoolStats %+v from %+v", s, b.Books)
	}
}

// TestClientHooksFifo: hooks added to a new Client() wrap its first
// command, in go-redis's order, and see nothing else (go-redis's "Hook /
// fifo" spec, and its pipelines).
func TestClientHooksFifo(t *testing.T) {
	p, k := newPool(t, 2, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	c := p.Client()
	c.AddHook(logHook{"h1", &mu, &log})
	c.AddHook(logHook{"h2", &mu, &log})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, k, "v", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"h1 start ping", "h2 start ping", "h2 end ping <nil>", "h1 end ping <nil>",
		"h1 pipeline start multi,set,exec", "h2 pipeline start multi,set,exec", "h2 pipeline end <nil>", "h1 pipeline end <nil>",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hooks saw:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	// A new client's first command a pipeline: it too is run once.
	log = nil
	c.Close()
	c = p.Client()
	c.AddHook(logHook{"h1", &mu, &log})
	if _, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Get(ctx, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"h1 pipeline start get", "h1 pipeline end <nil>"}; strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hooks saw:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if s := p.WardStats(); s.Made != 1 {
		t.Fatalf("a connection was borrowed for a command: %+v", s.Books)
	}
}

// TestClientHookThenWatch: when the first command after AddHook is a
// Watch's, it still runs on the Tx's own connection, and a conflicting
// write makes the transaction fail as on go-redis.
func TestClientHookThenWatch(t *testing.T) {
	p, k := newPool(t, 3, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	c := p.Client()
	if err := c.Set(ctx, k, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.AddHook(logHook{"h1", &mu, &log})
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		// Another client changes the key between WATCH and EXEC.
		if err := c.Set(ctx, k, "2", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, k, "3", 0)
			return nil
		})
		return err
	}, k)
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("Watch with a conflicting write: %v, want redis.TxFailedErr", err)
	}
	if v := c.Get(ctx, k).Val(); v != "2" {
		t.Fatalf("after the failed transaction: %q, want 2", v)
	}
	n := 0
	for _, l := range log {
		if strings.HasPrefix(l, "h1 start watch") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the hook saw WATCH %d times:\n%s", n, strings.Join(log, "\n"))
	}
	if s := p.WardStats(); s.Busy != 0 {
		t.Fatalf("a loan is still out: %+v", s.Books)
	}
}

// TestClientConcurrentHooks: commands, pipelines, Watch and Conn from many
// goroutines while hooks are added: none fails, no loan stays out, and
// once the hooks are on every command runs through them.
func TestClientConcurrentHooks(t *testing.T) {
	p, k := newPool(t, 4, nil)
	ctx := context.Background()
	c := p.Client()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	var ops atomic.Int64
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("%s%d", k, g)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch i % 4 {
				case 0:
					err = c.Incr(ctx, key).Err()
				case 1:
					_, err = c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
						pipe.Incr(ctx, key)
						return nil
					})
				case 2:
					err = c.Watch(ctx, func(tx *redis.Tx) error {
						_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
							pipe.Incr(ctx, key)
							return nil
						})
						return err
					}, key)
				case 3:
					conn := c.Conn()
					err = conn.Incr(ctx, key).Err()
					if cerr := conn.Close(); err == nil {
						err = cerr
					}
				}
				if err != nil {
					errs <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	var mu sync.Mutex
	var log []string
	// Each hook goes on while commands run: after the goroutines did 30
	// more of them.
	for i := range 3 {
		for n := ops.Load() + 30; ops.Load() < n && len(errs) == 0; {
			runtime.Gosched()
		}
		c.AddHook(logHook{fmt.Sprintf("h%d", i), &mu, &log})
	}
	for n := ops.Load() + 30; ops.Load() < n && len(errs) == 0; {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	log = nil
	mu.Unlock()
	if err := c.Get(ctx, k+"0").Err(); err != nil {
		t.Fatal(err)
	}
	if want := "h0 start get|h1 start get|h2 start get|h2 end get <nil>|h1 end get <nil>|h0 end get <nil>"; strings.Join(log, "|") != want {
		t.Fatalf("hooks saw %q, want %q", strings.Join(log, "|"), want)
	}
	if s := p.WardStats(); s.Busy != 0 {
		t.Fatalf("a loan is still out: %+v", s.Books)
	}
}

// TestClientOptions: Client().Options() shows what the pool's connections
// have (database, name, size), and a Conn's borrowed connection, which
// says HELLO and SELECT again as the pool opened it, goes back to the
// pool when closed.
func TestClientOptions(t *testing.T) {
	p, k := newPool(t, 3, func(c *Config) {
		c.Options.DB = 1
		c.Options.ClientName = "wardpool-test"
	})
	ctx := context.Background()
	o := p.Client().Options()
	if o.DB != 1 || o.ClientName != "wardpool-test" || o.PoolSize != 3 {
		t.Fatalf("Options: DB %d, ClientName %q, PoolSize %d", o.DB, o.ClientName, o.PoolSize)
	}
	if err := p.Client().Set(ctx, k, "db1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	conn := p.Client().Conn()
	if v, err := conn.Get(ctx, k).Result(); err != nil || v != "db1" {
		t.Fatalf("GET on a Conn: %q %v, want the value in database 1", v, err)
	}
	if name, err := conn.ClientGetName(ctx).Result(); err != nil || name != "wardpool-test" {
		t.Fatalf("CLIENT GETNAME on a Conn: %q %v", name, err)
	}
	made := p.WardStats().Made
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 0, Live: int(made)}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("the Conn's connection was not given back (-want +got):\n%s", diff)
		}
	}
	// A Conn whose first command renames its connection is destroyed.
	conn = p.Client().Conn()
	if err := conn.ClientSetName(ctx, "other").Err(); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 0, Live: int(made) - 1}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("a renamed connection was given back (-want +got):\n%s", diff)
		}
	}
	// SELECT of the pool's own database changes nothing, and is let through.
	if err := p.Client().Do(ctx, "SELECT", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Do(ctx, "DEL", k).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestClientConnHook: a hook added to a Conn of Client() runs around the
// Conn's commands, which stay on its one connection, and the client's own
// commands go on through the pool.
func TestClientConnHook(t *testing.T) {
	p, _ := newPool(t, 2, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var log []string
	conn := p.Client().Conn()
	defer conn.Close()
	id1, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	conn.AddHook(logHook{"c", &mu, &log})
	id2, err := conn.ClientID(ctx).Result()
	if err != nil || id1 != id2 {
		t.Fatalf("CLIENT ID %d then %d (%v)", id1, id2, err)
	}
	if err := p.Client().Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if want := "c start client|c end client <nil>"; strings.Join(log, "|") != want {
		t.Fatalf("the Conn's hook saw %q, want %q", strings.Join(log, "|"), want)
	}
	{
		s := p.WardStats()
		if diff := cmp.Diff(pool.Books{Busy: 1, Live: 2}, pool.Books{Busy: s.Busy, Live: s.Live}); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	}
}
