package wardpool

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// logBook is a slog.Handler that keeps the records at warning level and
// above, with their attributes, for a test to read.
type logBook struct {
	mu   sync.Mutex
	recs []logRec
}

type logRec struct {
	msg   string
	attrs map[string]slog.Value
}

func (b *logBook) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (b *logBook) WithAttrs([]slog.Attr) slog.Handler           { return b }
func (b *logBook) WithGroup(string) slog.Handler                { return b }

func (b *logBook) Handle(_ context.Context, r slog.Record) error {
	rec := logRec{msg: r.Message, attrs: map[string]slog.Value{}}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value; return true })
	b.mu.Lock()
	b.recs = append(b.recs, rec)
	b.mu.Unlock()
	return nil
}

// stalls returns the stall reports logged so far.
func (b *logBook) stalls() []logRec {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logRec
	for _, r := range b.recs {
		if r.msg == StallMessage {
			out = append(out, r)
		}
	}
	return out
}

// nestedHandler is a handler that acquires a second resource while it
// holds one (pgx#713), after between is closed.
func nestedHandler(ctx context.Context, k *Keeper[*res], between <-chan struct{}) error {
	outer, err := k.Acquire(ctx)
	if err != nil {
		return err
	}
	defer outer.Release()
	<-between
	inner, err := k.Acquire(ctx)
	if err != nil {
		return err
	}
	inner.Release()
	return nil
}

// deadlock starts 8 nestedHandlers on k (of Size 4) with ctx, lets the
// four that hold a resource ask for their second once the four others
// queue for their first, and waits until eight callers wait.
func deadlock(t *testing.T, ctx context.Context, k *Keeper[*res]) <-chan error {
	t.Helper()
	errs := make(chan error, 8)
	between := make(chan struct{})
	for range 8 {
		go func() { errs <- nestedHandler(ctx, k, between) }()
	}
	clocktest.Eventually(t, "four held and four waiting", func() bool {
		s := k.Stats()
		return s.Busy == 4 && s.Waiting == 4 && s.Dialing == 0
	})
	close(between)
	clocktest.Eventually(t, "eight waiting", func() bool { return k.Stats().Waiting == 8 })
	return errs
}

func TestStallOfNestedAcquiresIsReportedAtTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config[*res]
		where string // what the holders' description must name
	}{
		{"call sites", Config[*res]{StallSites: true}, "wardpool.nestedHandler"},
		{"leak watch's stacks", Config[*res]{LeakAfter: time.Hour}, "wardpool.nestedHandler"},
		{"neither", Config[*res]{}, "call site not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var book logBook
			d := &dialer{}
			cfg := tc.cfg
			cfg.Limits = pool.Limits{Size: 4}
			cfg.StallAfter = time.Second
			cfg.Logger = slog.New(&book)
			k, c := newTestKeeper(t, d, cfg)
			ctx, cancel := context.WithTimeout(bg, time.Hour) // real time: ends only by cancel
			defer cancel()
			errs := deadlock(t, ctx, k)

			c.Advance(999 * time.Millisecond)
			if n := len(book.stalls()); n != 0 || k.Stats().Stalls != 0 {
				t.Fatalf("%d reports before the threshold", n)
			}
			c.Advance(time.Millisecond)
			reps := book.stalls()
			if len(reps) != 1 {
				t.Fatalf("%d reports at the threshold, want 1", len(reps))
			}
			r := reps[0]
			for key, want := range map[string]int64{"waiting": 8, "held": 4, "size": 4} {
				if got := r.attrs[key].Int64(); got != want {
					t.Errorf("report's %s = %d, want %d", key, got, want)
				}
			}
			if got := r.attrs["waited"].Duration(); got != time.Second {
				t.Errorf("report's waited = %v, want 1s", got)
			}
			if got := r.attrs["since_return"].String(); got != "never" {
				t.Errorf("report's since_return = %q, want never", got)
			}
			hs := r.attrs["holders"].String()
			if !strings.HasPrefix(hs, "4 loans, held up to 1s, acquired at:\n") || !strings.Contains(hs, tc.where) {
				t.Errorf("report's holders do not name the 4 loans at %s:\n%s", tc.where, hs)
			}
			t.Logf("holders:\n%s", hs)
			if s := k.Stats(); s.Stalls != 1 || !s.Stalled {
				t.Fatalf("Stats: stalls %d, stalled %v", s.Stalls, s.Stalled)
			}

			// One report per stall, however long it lasts.
			c.Advance(time.Hour)
			if n := len(book.stalls()); n != 1 {
				t.Fatalf("%d reports an hour into the stall, want 1", n)
			}

			// The contexts end: the handlers give up and their loans come
			// back, which ends the stall.
			cancel()
			for range 8 {
				if err := <-errs; !errors.Is(err, context.Canceled) {
					t.Fatalf("handler = %v, want its context's end", err)
				}
			}
			if s := k.Stats(); s.Stalled || s.Busy != 0 {
				t.Fatalf("after the handlers gave up: stalled %v, busy %d", s.Stalled, s.Busy)
			}
			checkBalanced(t, k, d)
		})
	}
}

func TestStallReportedOncePerStallRearmedByAReturn(t *testing.T) {
	var book logBook
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, StallAfter: time.Second, Logger: slog.New(&book)})
	held := mustAcquire(t, k)
	first := acquireAsync(k, bg)
	clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == 1 })
	c.Advance(10 * time.Second)
	if n := len(book.stalls()); n != 1 {
		t.Fatalf("%d reports in the first stall, want 1", n)
	}
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d timers set once the stall is reported: the watch ticks", n)
	}
	// A loan comes back: the stall is over; the next caller's wait, with
	// the new holder keeping its loan, is a second stall, reported a
	// threshold after the return.
	held.Release()
	r := within(t, first)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if k.Stats().Stalled {
		t.Fatal("still stalled after a loan came back")
	}
	second := acquireAsync(k, bg)
	clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == 1 })
	c.Advance(999 * time.Millisecond)
	if n := len(book.stalls()); n != 1 {
		t.Fatalf("%d reports before the second stall's threshold, want 1", n)
	}
	c.Advance(time.Millisecond)
	reps := book.stalls()
	if len(reps) != 2 || k.Stats().Stalls != 2 {
		t.Fatalf("%d reports after the second stall, want 2", len(reps))
	}
	if got := reps[1].attrs["since_return"].String(); got != "1s" {
		t.Errorf("second report's since_return = %q, want 1s", got)
	}
	r.l.Release()
	r = within(t, second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release()
	c.Advance(time.Hour)
	if n := c.Pending(); n != 0 || len(book.stalls()) != 2 {
		t.Fatalf("nobody waiting: %d timers set, %d reports", n, len(book.stalls()))
	}
	checkBalanced(t, k, d)
}

func TestStallWatchOff(t *testing.T) {
	var book logBook
	d := &dialer{}
	k, c := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}, StallAfter: -1, Logger: slog.New(&book)})
	held := mustAcquire(t, k)
	res := acquireAsync(k, bg)
	clocktest.Eventually(t, "the caller to queue", func() bool { return k.Stats().Waiting == 1 })
	if n := c.Pending(); n != 0 {
		t.Fatalf("%d timers set with the watch off", n)
	}
	c.Advance(time.Hour)
	if n := len(book.stalls()); n != 0 || k.Stats().Stalls != 0 {
		t.Fatalf("%d reports with the watch off", n)
	}
	held.Release()
	within(t, res).l.Release()
}

// TestStallWatchQuietUnderLoad runs a pool of 4 for half an hour of
// virtual time (testing/synctest, the system clock): Poisson arrivals,
// holds exponential with mean 500 ms. At 95% load callers queue often and
// loans come back all the time: no report. At 150%, callers wait longer
// than the threshold (until their 30 s run out), but loans keep coming
// back: an overload, not a stall, and no report either.
func TestStallWatchQuietUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name       string
		load       float64
		stallAfter time.Duration
		patience   time.Duration // each caller's context; 0: none
	}{
		{"95% load", 0.95, 0, 0}, // the default threshold
		{"150% load", 1.5, 2 * time.Second, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var book logBook
				d := &dialer{}
				k, err := NewKeeper(Config[*res]{Limits: pool.Limits{Size: 4}, Dial: d.Dial, Close: d.Close,
					StallAfter: tc.stallAfter, Logger: slog.New(&book)})
				if err != nil {
					t.Fatal(err)
				}
				const (
					size = 4
					hold = 500 * time.Millisecond
					run  = 30 * time.Minute
				)
				rng := rand.New(rand.NewPCG(1, 2))
				rate := tc.load * size / hold.Seconds() // arrivals a second
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					maxWait time.Duration
				)
				for end := time.Now().Add(run); time.Now().Before(end); {
					time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
					h := time.Duration(rng.ExpFloat64() * float64(hold))
					wg.Go(func() {
						ctx, cancel := context.WithCancel(bg)
						if tc.patience > 0 {
							ctx, cancel = context.WithTimeout(bg, tc.patience)
						}
						defer cancel()
						start := time.Now()
						l, err := k.Acquire(ctx)
						mu.Lock()
						maxWait = max(maxWait, time.Since(start))
						mu.Unlock()
						if err != nil {
							if tc.patience == 0 {
								t.Error(err)
							}
							return
						}
						time.Sleep(h)
						l.Release()
					})
				}
				wg.Wait()
				s := k.Stats()
				t.Logf("%d acquires, %d waited or dialed, %d gave up, longest wait %v", s.Acquires, s.EmptyAcquires, s.Canceled, maxWait)
				if s.EmptyAcquires < s.Acquires/4 {
					t.Fatalf("only %d of %d acquires waited or dialed: not the load meant", s.EmptyAcquires, s.Acquires)
				}
				if tc.stallAfter > 0 && maxWait <= tc.stallAfter {
					t.Fatalf("no caller waited past the threshold (longest %v): not the overload meant", maxWait)
				}
				if n := len(book.stalls()); n != 0 || s.Stalls != 0 {
					t.Fatalf("%d stall reports while loans kept coming back", n)
				}
				if err := k.Close(bg); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkStallSites is what the stall watch costs an uncontended
// Acquire+Release: with the default watch (a store at each return), with
// StallSites (a call site recorded at each Acquire), and off.
func BenchmarkStallSites(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  Config[*res]
	}{
		{"off", Config[*res]{StallAfter: -1}},
		{"default", Config[*res]{}},
		{"sites", Config[*res]{StallSites: true}},
		{"leak", Config[*res]{LeakAfter: time.Hour}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := &dialer{}
			cfg := bc.cfg
			cfg.Limits, cfg.Dial, cfg.Close = pool.DefaultLimits, d.Dial, d.Close
			k, err := NewKeeper(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close(bg)
			b.ReportAllocs()
			for b.Loop() {
				l, err := k.Acquire(bg)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}
