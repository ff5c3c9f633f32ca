package redisward

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// TestWardBucketSpacesDials: the ward stands in front of every dial. With
// a bucket that allows one dial now and the next in about a quarter of an
// hour, a second connection cannot be opened, while the one there is
// reused freely.
func TestWardBucketSpacesDials(t *testing.T) {
	p, k := newPool(t, 4, func(c *Config) {
		c.Ward.Bucket = ward.NewBucket(0.001, 1, time.Now())
	})
	ctx := context.Background()
	l, err := p.Acquire(ctx) // the connection New opened
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Do(tctx, "SET", k+"x", 1).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second dial inside the bucket's spacing: %v, want DeadlineExceeded", err)
	}
	l.Release()
	for range 10 {
		if err := p.Do(ctx, "INCR", k+"x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.WardStats(); s.Made != 1 {
		t.Fatalf("made %d connections, want 1", s.Made)
	}
}

// TestWardBreakerSheds: dials to a port where nothing listens keep
// failing, and the breaker starts refusing them at once with an error
// saying so, instead of dialling again.
func TestWardBreakerSheds(t *testing.T) {
	testenv.RedisAddr(t) // with the integration tests: it dials
	cfg := Config{
		Options: &redis.Options{Addr: "127.0.0.1:1"},
		Limits:  pool.Limits{Size: 2},
		Lazy:    true,
	}
	cfg.Ward.Breaker = ward.NewBreaker(ward.DefaultSre, time.Now())
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	var shed *wardpool.ShedError
	for i := 0; i < 500 && shed == nil; i++ {
		err := p.Ping(ctx)
		if err == nil {
			t.Fatal("PING to a closed port succeeded")
		}
		errors.As(err, &shed)
	}
	if shed == nil || shed.Guard != ward.GuardBreaker || !errors.Is(shed, wardpool.ErrShed) {
		t.Fatalf("no refusal by the breaker after 500 failed dials (last: %v)", shed)
	}
	if s := p.WardStats(); s.Shed == 0 || s.Failed == 0 {
		t.Fatalf("books: %+v", s.Books)
	}
}
