package redisward

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool"
)

// retryPolicy is how a pool sends a command again after a reply that says the
// server did not run it (see notRun): go-redis's MaxRetries, MinRetryBackoff
// and MaxRetryBackoff, with go-redis's defaults and meanings.
type retryPolicy struct {
	// tries is how many times a command may be sent again (MaxRetries:
	// 3 when zero, none when negative).
	tries int
	// min and max bound the pause before each resend (MinRetryBackoff,
	// 10 ms when zero; MaxRetryBackoff, a second when zero; either
	// negative: no pause).
	min, max time.Duration
	clock    wardpool.Clock
}

// newResend reads o's retry fields as go-redis reads them.
func newRetryPolicy(o *redis.Options, clock wardpool.Clock) retryPolicy {
	r := retryPolicy{tries: o.MaxRetries, min: o.MinRetryBackoff, max: o.MaxRetryBackoff, clock: clock}
	switch {
	case r.tries == 0:
		r.tries = 3
	case r.tries < 0:
		r.tries = 0
	}
	switch {
	case r.min == 0:
		r.min = 10 * time.Millisecond
	case r.min < 0:
		r.min = 0
	}
	switch {
	case r.max == 0:
		r.max = time.Second
	case r.max < 0:
		r.max = 0
	}
	if r.clock == nil {
		r.clock = sysClock{}
	}
	return r
}

// pause returns how long to wait before resend number n (from 1): a
// random span that starts at min and grows with n, doubling its range each
// time, never past max. No pause when either bound is off.
func (r retryPolicy) pause(n int) time.Duration {
	if r.min <= 0 || r.max <= 0 {
		return 0
	}
	span := r.min << min(n, 30)
	if span <= 0 || span > r.max {
		span = r.max
	}
	return min(r.min+rand.N(span), r.max)
}

// wait waits before resend number n, until the pause is over or ctx ends,
// and returns ctx's error when it ends first.
func (r retryPolicy) wait(ctx context.Context, n int) error {
	d := r.pause(n)
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// sysClock is the system's clock, for the pauses of a pool whose
// Config.Clock is nil.
type sysClock struct{}

func (sysClock) Now() time.Time { return time.Now() }

func (sysClock) AfterFunc(d time.Duration, f func()) wardpool.Timer { return time.AfterFunc(d, f) }

// notRunWords are the first words of the error replies by which a server
// says it did not run a command: it is a replica now (READONLY), a
// replica without its primary (MASTERDOWN), or loading its data
// (LOADING). The server refuses the command before running it, so sending
// it again, to another server or later, runs it at most once.
var notRunWords = [...]string{"READONLY", "MASTERDOWN", "LOADING"}

// notRun reports whether err is an error reply that says the server did
// not run the command (see notRunWords).
func notRun(err error) bool {
	re, ok := replyError(err)
	if !ok {
		return false
	}
	msg := re.Error()
	for _, w := range notRunWords {
		if strings.HasPrefix(msg, w) && (len(msg) == len(w) || msg[len(w)] == ' ') {
			return true
		}
	}
	return false
}

// noneRun reports whether every command of a pipeline got a reply that
// says the server did not run it: only then is none of them run by
// sending the pipeline again.
func noneRun(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if !notRun(c.Err()) {
			return false
		}
	}
	return len(cmds) > 0
}
