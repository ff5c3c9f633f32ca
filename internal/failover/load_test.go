package failover

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
)

func TestMain(m *testing.M) { servers.VerifyTestMain(m) }

// needFull skips a scenario that takes more than a few seconds unless the
// full run was asked for.
func needFull(t *testing.T) {
	t.Helper()
	if !testenv.Full() {
		t.Skipf("a failover scenario of ten seconds or more on servers of its own: runs with %s=1 (./scripts/test sets it)", testenv.FullVar)
	}
}

// op is one call of the load: when it started and ended, its deadline,
// which server answered (its port, 0 when unknown) and its backend or
// connection id, and its error.
type op struct {
	start, end, deadline time.Time
	node, pid            int
	err                  error
}

// load runs workers goroutines calling do in a loop, each call with its
// own timeout, until stop is called; stop waits for them and returns every
// call; it is also called when the test ends, before the pools close, so
// that a test that fails half-way leaves nothing running. A failed call is followed by a 10 ms pause (the same for every
// pool), as a client that retries at once would only measure its own loop.
func load(t *testing.T, workers int, timeout time.Duration, do func(ctx context.Context) (node, pid int, err error)) (stop func() []op) {
	var (
		mu   sync.Mutex
		ops  []op
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []op
			for {
				select {
				case <-done:
					mu.Lock()
					ops = append(ops, mine...)
					mu.Unlock()
					return
				default:
				}
				o := op{start: time.Now()}
				o.deadline = o.start.Add(timeout)
				ctx, cancel := context.WithDeadline(context.Background(), o.deadline)
				o.node, o.pid, o.err = do(ctx)
				cancel()
				o.end = time.Now()
				mine = append(mine, o)
				if o.err != nil {
					select {
					case <-done:
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}
	var once sync.Once
	stop = func() []op {
		once.Do(func() {
			close(done)
			wg.Wait()
			sort.Slice(ops, func(i, j int) bool { return ops[i].start.Before(ops[j].start) })
		})
		return ops
	}
	t.Cleanup(func() { stop() })
	return stop
}

// sqlState returns the SQLSTATE of err, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// failedFrom counts the failed calls that ended at or after t.
func failedFrom(ops []op, t time.Time) int {
	n := 0
	for _, o := range ops {
		if o.err != nil && !o.end.Before(t) {
			n++
		}
	}
	return n
}

// startedFailed counts the calls that began at or after t and failed.
func startedFailed(ops []op, t time.Time) int {
	n := 0
	for _, o := range ops {
		if o.err != nil && !o.start.Before(t) {
			n++
		}
	}
	return n
}

// first57P01 returns when the first call that failed with 57P01
// (admin_shutdown) ended.
func first57P01(ops []op) (time.Time, bool) {
	var at time.Time
	for _, o := range ops {
		if o.err != nil && sqlState(o.err) == "57P01" && (at.IsZero() || o.end.Before(at)) {
			at = o.end
		}
	}
	return at, !at.IsZero()
}

// deadlines counts the calls that began at or after t and failed by their
// own deadline.
func deadlines(ops []op, t time.Time) int {
	n := 0
	for _, o := range ops {
		if o.err != nil && !o.start.Before(t) && errors.Is(o.err, context.DeadlineExceeded) {
			n++
		}
	}
	return n
}

// firstOK returns how long after t the first call that started at or after
// t succeeded, or -1 when none did.
func firstOK(ops []op, t time.Time) time.Duration {
	for _, o := range ops {
		if o.err == nil && !o.start.Before(t) {
			return o.end.Sub(t)
		}
	}
	return -1
}

// firstOn returns how long after t the first call answered by node
// ended, or -1 when none was.
func firstOn(ops []op, node int, t time.Time) time.Duration {
	first := time.Duration(-1)
	for _, o := range ops {
		if o.err == nil && o.node == node && !o.end.Before(t) && (first < 0 || o.end.Sub(t) < first) {
			first = o.end.Sub(t)
		}
	}
	return first
}

// overrun returns the longest a call ran past its deadline, zero when none
// did.
func overrun(ops []op) time.Duration {
	var m time.Duration
	for _, o := range ops {
		m = max(m, o.end.Sub(o.deadline))
	}
	return m
}

// errorKinds summarizes the errors of ops at or after t, most frequent
// first: SQLSTATE, or the error's text its end.
func errorKinds(ops []op, t time.Time) string {
	count := map[string]int{}
	for _, o := range ops {
		if o.err == nil || o.end.Before(t) {
			continue
		}
		k := sqlState(o.err)
		if k == "" {
			k = o.err.Error()
			if errors.Is(o.err, context.DeadlineExceeded) {
				k = "deadline"
			}
			if r := []rune(k); len(r) > 48 { // the cause is at the end
				k = "…" + string(r[len(r)-48:])
			}
		}
		count[k]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return count[keys[i]] > count[keys[j]] })
	var b strings.Builder
	for i, k := range keys {
		if i == 3 {
			fmt.Fprintf(&b, " …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", k, count[k])
	}
	return b.String()
}

// ms formats a duration in milliseconds, or "never" for a negative one.
func ms(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// table logs rows of columns, aligned, under a title.
func table(t *testing.T, title string, rows [][]string) {
	t.Helper()
	width := make([]int, 0)
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	b.WriteString(title + "\n")
	for _, r := range rows {
		for i, c := range r {
			fmt.Fprintf(&b, "| %-*s ", width[i], c)
		}
		b.WriteString("|\n")
	}
	t.Log(b.String())
}
