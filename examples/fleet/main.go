// Command fleet runs a fleet of replicas, each with its own pool.Pool, that
// share one connection budget through a shared.Budget over one in-memory
// store, in virtual time, and prints one row a second: the fleet's total
// against the budget, the share, and each replica's connections and waiting
// callers.
//
// Time is virtual: the store's clock is a variable the loop moves by 10 ms
// steps, so a minute runs in milliseconds and the same -seed prints the same
// table on every machine. The first half of the replicas is busy from the
// start; the second half is idle until -late, then as busy. Watch the
// first half borrow the whole budget while the others ask for nothing,
// then give it back, down to their share, once the others ask.
//
// Each replica drives its Pool as wardpool.Keeper with Config.Shared does: a
// caller finding no idle connection asks the budget for a slot before the
// pool makes one; refused, it waits in order (giving up after -patience)
// and the replica asks again no sooner than 20 ms later; a connection
// closed (idle past -keep, or given back because the budget says the
// replica owes it) returns its slot; every TTL/3 the replica renews its
// membership and closes what it owes that is idle, and it closes the rest
// as their loans end.
//
//	go run ./examples/fleet -replicas 20 -budget 40 -seconds 30 -seed 7
//
// The store can fail too: -outage cuts every replica from it for
// -outage-for (and with -restart it comes back empty, as a Redis without
// persistence does), -failover cuts them all and lets each back at its own
// moment, between 0.9 and 1.15 TTL later (a failover whose reconnections
// straddle the TTL), -partition cuts the first replica alone for
// -partition-for, and -life closes connections that old (churn). The
// run then ends with what the fleet did through them: the most
// connections open, how long over the budget, the fewest open and how
// soon it was back to the budget, callers who gave up, and the budget
// calls decided without the store; each budget's outage lines go to
// stderr (-quiet leaves them out).
//
//	go run ./examples/fleet -replicas 10 -budget 20 -size 10 -late 0s -hold 5ms \
//		-ttl 5s -seconds 45 -outage 10s -outage-for 3s -failover 25s -life 1s
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
	"github.com/wardpool/wardpool/ward/shared"
)

// config is one run's settings.
type config struct {
	replicas, budget, size int
	seconds                int
	late                   time.Duration // when the second half starts asking
	rate                   float64       // arrivals per second at a busy replica
	hold                   time.Duration // mean loan
	patience               time.Duration // how long a caller waits
	keep                   time.Duration // idle connections are closed after this
	ttl                    time.Duration
	life                   time.Duration // connections are closed this old; zero: never
	borrow                 bool
	seed                   uint64

	// The store's troubles, each zero for none: from outage on, no
	// replica reaches the store for outageFor; from failover on, each
	// replica reaches it again at its own moment, from 0.9 to 1.15 TTL
	// later (a failover whose reconnections straddle the TTL); from
	// partition on, the first replica alone is cut off for partitionFor.
	outage, outageFor, failover, partition, partitionFor time.Duration
	restart                                              bool // the store comes back from the outage empty

	// logs is where the budgets write their outage lines (stamped with
	// the virtual time); nil: nowhere.
	logs io.Writer
}

// row is one second of the run.
type row struct {
	at      time.Duration
	total   int   // connections open across the fleet
	share   int   // the fair share at the end of the second
	held    []int // per replica: connections open
	waiting []int // per replica: callers waiting at the end of the second
	served  []int // per replica: loans begun during the second
	gaveUp  []int // per replica: callers who gave up during the second
}

// summary is what the run measured, sampled every step (10 ms).
type summary struct {
	maxLive  int           // the most connections open across the fleet
	over     time.Duration // how long the fleet held more than the budget
	gaveUp   int           // callers who gave up waiting (acquire errors)
	fallback uint64        // budget calls the replicas decided alone
	events   []event
}

// event is how the fleet went through one of the store's troubles: from
// its start to the next one's (or the end of the run).
type event struct {
	name   string
	at     time.Duration
	lowest int           // the fewest connections open across the fleet
	lowAt  time.Duration // when, since the start
	back   time.Duration // from the start until the fleet was back to its budget; -1: never
	gaveUp int           // callers who gave up in the window
}

// cut is one replica's way to the store: unreachable in [from, until).
type cut struct {
	shared.Store
	now         *time.Time
	from, until []time.Time
}

// errCut is the error of a call the store did not answer.
var errCut = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (c *cut) Budget(ctx context.Context, op shared.BudgetOp) (shared.BudgetReply, error) {
	for i := range c.from {
		if !c.now.Before(c.from[i]) && c.now.Before(c.until[i]) {
			return shared.BudgetReply{}, errCut
		}
	}
	return c.Store.Budget(ctx, op)
}

// replica is one process of the fleet.
type replica struct {
	p      *pool.Pool[int]
	budget *shared.Budget
	queue  []time.Time // arrival instants of waiting callers, oldest first
	loans  []loan
	nextID int
	busy   bool
	retry  time.Time // no lease before then: the budget was spent
	owe    int       // connections to close as their loans end
	renew  time.Time
	served int
	gaveUp int
}

type loan struct {
	id  int
	end time.Time
}

func main() {
	var c config
	flag.IntVar(&c.replicas, "replicas", 20, "replicas in the fleet")
	flag.IntVar(&c.budget, "budget", 40, "connections the fleet may hold")
	flag.IntVar(&c.size, "size", 20, "each replica's pool size")
	flag.IntVar(&c.seconds, "seconds", 30, "virtual seconds to run")
	flag.DurationVar(&c.late, "late", 10*time.Second, "when the second half of the replicas starts asking")
	flag.Float64Var(&c.rate, "rate", 150, "arrivals per second at a busy replica")
	flag.DurationVar(&c.hold, "hold", 20*time.Millisecond, "mean time a caller holds a connection")
	flag.DurationVar(&c.patience, "patience", 500*time.Millisecond, "how long a caller waits before giving up")
	flag.DurationVar(&c.keep, "keep", 2*time.Second, "idle connections are closed after this")
	flag.DurationVar(&c.ttl, "ttl", 3*time.Second, "membership lease of each replica")
	flag.DurationVar(&c.life, "life", 0, "connections are closed this old (churn); 0: never")
	flag.DurationVar(&c.outage, "outage", 0, "when the store becomes unreachable for every replica; 0: never")
	flag.DurationVar(&c.outageFor, "outage-for", 3*time.Second, "how long the outage lasts")
	flag.DurationVar(&c.failover, "failover", 0, "when the store fails over: each replica reaches it again 0.9 to 1.15 TTL later; 0: never")
	flag.BoolVar(&c.restart, "restart", false, "the store comes back from the outage empty (a restart without persistence)")
	flag.DurationVar(&c.partition, "partition", 0, "when the first replica alone loses its way to the store; 0: never")
	flag.DurationVar(&c.partitionFor, "partition-for", 12*time.Second, "how long the partition lasts")
	flag.BoolVar(&c.borrow, "borrow", true, "let replicas borrow slots others leave unused")
	flag.Uint64Var(&c.seed, "seed", 1, "random seed: the same seed prints the same table")
	quiet := flag.Bool("quiet", false, "leave out the budgets' outage log lines (written to stderr)")
	flag.Parse()
	if !*quiet {
		c.logs = os.Stderr
	}
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	rows, sum := run(c)
	show(os.Stdout, c, rows)
	sum.show(os.Stdout, c)
}

// check reports a setting that cannot run.
func (c config) check() error {
	switch {
	case c.replicas < 1 || c.replicas > 1000:
		return fmt.Errorf("-replicas %d: want 1 to 1000", c.replicas)
	case c.budget < 0 || c.size < 1:
		return fmt.Errorf("-budget %d, -size %d: want a budget of 0 or more and a size of 1 or more", c.budget, c.size)
	case c.seconds < 1 || c.seconds > 3600:
		return fmt.Errorf("-seconds %d: want 1 to 3600", c.seconds)
	case c.rate < 0 || c.hold <= 0 || c.patience <= 0 || c.keep <= 0 || c.ttl < 30*time.Millisecond:
		return fmt.Errorf("-rate, -hold, -patience, -keep must be positive and -ttl at least 30ms")
	case c.life < 0 || c.outage < 0 || c.outageFor < 0 || c.failover < 0 || c.partition < 0 || c.partitionFor < 0:
		return fmt.Errorf("-life, -outage, -outage-for, -failover, -partition and -partition-for must not be negative")
	}
	return nil
}

const step = 10 * time.Millisecond

// run runs the fleet and returns its rows and what it measured.
func run(c config) ([]row, summary) {
	rng := rand.New(rand.NewPCG(c.seed, 0x666c656574))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	store := shared.NewMemStore(func() time.Time { return now })
	clock := func() time.Time { return now }
	bcfg := shared.BudgetConfig{Slots: c.budget, TTL: c.ttl, Borrow: c.borrow, Clock: clock, Logger: logger(c.logs, start, clock)}
	ctx := context.Background()
	rs := make([]*replica, c.replicas)
	ways := make([]*cut, c.replicas)
	var sum summary
	if c.outage > 0 {
		sum.events = append(sum.events, event{name: fmt.Sprintf("outage of %v", c.outageFor), at: c.outage, back: -1})
	}
	if c.failover > 0 {
		sum.events = append(sum.events, event{name: "failover", at: c.failover, back: -1})
	}
	if c.partition > 0 {
		sum.events = append(sum.events, event{name: fmt.Sprintf("partition of replica-0 for %v", c.partitionFor), at: c.partition, back: -1})
	}
	slices.SortFunc(sum.events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	for i := range rs {
		p, err := pool.New[int](pool.Limits{Size: c.size, Idle: c.size, Keep: c.keep, Life: c.life}, ward.Ward{})
		if err != nil {
			panic(err) // the limits are checked above
		}
		way := &cut{Store: store, now: &now}
		if c.outage > 0 {
			way.from = append(way.from, start.Add(c.outage))
			way.until = append(way.until, start.Add(c.outage+c.outageFor))
		}
		if c.failover > 0 {
			spread := 0.9
			if c.replicas > 1 {
				spread += 0.25 * float64(i) / float64(c.replicas-1)
			}
			way.from = append(way.from, start.Add(c.failover))
			way.until = append(way.until, start.Add(c.failover+time.Duration(spread*float64(c.ttl))))
		}
		if c.partition > 0 && i == 0 {
			way.from = append(way.from, start.Add(c.partition))
			way.until = append(way.until, start.Add(c.partition+c.partitionFor))
		}
		ways[i] = way
		link := shared.Link{Store: way, Timeout: time.Hour} // in memory: never late
		rs[i] = &replica{p: p, budget: shared.NewBudget(link, "db", fmt.Sprint("replica-", i), bcfg), busy: i < (c.replicas+1)/2}
		rs[i].budget.Renew(ctx)
		rs[i].renew = now.Add(rs[i].budget.RenewEvery())
	}
	var rows []row
	giveBack := func(r *replica, ids ...int) {
		for range ids {
			r.budget.Return(ctx)
		}
	}
	for tick := 1; tick <= c.seconds*int(time.Second/step); tick++ {
		now = now.Add(step)
		if c.restart && c.outage > 0 && now.Sub(start) == c.outage+c.outageFor {
			// The store comes back without what it knew.
			empty := shared.NewMemStore(clock)
			for _, w := range ways {
				w.Store = empty
			}
		}
		for i, r := range rs {
			if !r.busy && now.Sub(start) >= c.late {
				r.busy = true
			}
			// Loans that ended: given back, or closed to pay a debt.
			kept := r.loans[:0]
			for _, l := range r.loans {
				switch {
				case now.Before(l.end):
					kept = append(kept, l)
				case r.owe > 0:
					r.owe--
					r.p.Drop(l.id, now)
					giveBack(r, l.id)
				case !r.p.Give(l.id, now):
					giveBack(r, l.id)
				}
			}
			r.loans = kept
			// Idle connections past -keep or -life.
			giveBack(r, r.p.Evict(now)...)
			// Renewal, and what is owed.
			if !now.Before(r.renew) {
				r.budget.Renew(ctx)
				r.renew = now.Add(r.budget.RenewEvery())
				owed := r.budget.Owed()
				for owed > 0 && r.p.Books().Idle > 0 {
					t := r.p.Take(now, 0, 0)
					r.p.Drop(t.Item, now)
					giveBack(r, t.Item)
					owed--
				}
				r.owe = owed
			}
			// Arrivals: a Poisson stream at -rate while busy.
			if r.busy {
				for n := poisson(rng, c.rate*step.Seconds()); n > 0; n-- {
					r.queue = append(r.queue, now)
				}
			}
			// Callers who ran out of patience.
			for len(r.queue) > 0 && now.Sub(r.queue[0]) >= c.patience {
				r.queue = r.queue[1:]
				r.gaveUp++
				sum.gaveUp++
				if e := current(sum.events, now.Sub(start)); e != nil {
					e.gaveUp++
				}
			}
			// Serve in order: idle first, else a slot from the budget.
			for len(r.queue) > 0 {
				var id int
				if r.p.Books().Idle > 0 {
					t := r.p.Take(now, 0, 0)
					if t.Kind == pool.Stale {
						giveBack(r, t.Item) // past -life: closed
						continue
					}
					id = t.Item
				} else if r.p.Books().Live < c.size && !now.Before(r.retry) {
					ok, _ := r.budget.Lease(ctx)
					if !ok {
						r.retry = now.Add(20 * time.Millisecond)
						if owed := r.budget.Owed(); owed > r.owe {
							r.owe = owed
						}
						break
					}
					t := r.p.Take(now, 0, 0)
					if t.Kind != pool.Make {
						panic(fmt.Sprintf("replica %d: Take answered %v with no idle and room", i, t.Kind))
					}
					r.nextID++
					id = r.nextID
					r.p.Made(id, t.Gen, now, 0)
				} else {
					break
				}
				r.queue = r.queue[1:]
				r.served++
				r.loans = append(r.loans, loan{id: id, end: now.Add(time.Duration(rng.ExpFloat64() * float64(c.hold)))})
			}
		}
		live := 0
		for _, r := range rs {
			live += r.p.Books().Live
		}
		sum.maxLive = max(sum.maxLive, live)
		if live > c.budget {
			sum.over += step
		}
		if e := current(sum.events, now.Sub(start)); e != nil {
			if at := now.Sub(start); e.lowAt == 0 || live < e.lowest {
				e.lowest, e.lowAt, e.back = live, at, -1
			}
			if e.back < 0 && live >= c.budget {
				e.back = now.Sub(start) - e.at
			}
		}
		if tick%int(time.Second/step) == 0 {
			rw := row{at: now.Sub(start)}
			for _, r := range rs {
				rw.total += r.p.Books().Live
				rw.held = append(rw.held, r.p.Books().Live)
				rw.waiting = append(rw.waiting, len(r.queue))
				rw.served = append(rw.served, r.served)
				rw.gaveUp = append(rw.gaveUp, r.gaveUp)
				r.served, r.gaveUp = 0, 0
			}
			rw.share = rs[0].budget.Stats().Share
			rows = append(rows, rw)
		}
	}
	for _, r := range rs {
		sum.fallback += r.budget.Stats().Fallbacks
	}
	return rows, sum
}

// logger returns a logger to w whose lines carry the virtual time since
// start; one that writes nowhere when w is nil.
func logger(w io.Writer, start time.Time, clock func() time.Time) *slog.Logger {
	if w == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Duration("t", clock().Sub(start))
		}
		return a
	}}))
}

// current returns the event whose window holds at: the latest begun.
func current(events []event, at time.Duration) *event {
	var e *event
	for i := range events {
		if at >= events[i].at {
			e = &events[i]
		}
	}
	return e
}

// poisson draws from a Poisson distribution of mean m (Knuth's method,
// for the small means of one step).
func poisson(rng *rand.Rand, m float64) int {
	if m <= 0 {
		return 0
	}
	n, p := 0, rng.Float64()
	for limit := math.Exp(-m); p > limit; n++ {
		p *= rng.Float64()
	}
	return n
}

// show writes the table: per second, the fleet against the budget, then
// each replica's open connections, callers waiting, loans and callers who
// gave up.
func show(w io.Writer, c config, rows []row) {
	fmt.Fprintf(w, "fleet: %d replicas, budget %d, size %d each, seed %d; the second half asks from %v\n",
		c.replicas, c.budget, c.size, c.seed, c.late)
	fmt.Fprintf(w, "%4s %9s %5s  %s\n", "t", "open/bud", "share", "per replica: open connections / callers waiting (loans this second, gave up)")
	for _, r := range rows {
		var b strings.Builder
		for i := range r.held {
			fmt.Fprintf(&b, " %d/%d", r.held[i], r.waiting[i])
		}
		loans, gave := 0, 0
		for i := range r.served {
			loans += r.served[i]
			gave += r.gaveUp[i]
		}
		fmt.Fprintf(w, "%3ds %5d/%-3d %5d %s  (%d loans, %d gave up)\n", int(r.at/time.Second), r.total, c.budget, r.share, b.String(), loans, gave)
	}
}

// show writes what the run measured: the fleet against its budget, and
// how it went through each of the store's troubles.
func (s summary) show(w io.Writer, c config) {
	fmt.Fprintf(w, "max live %d of %d, over the budget for %v, %d callers gave up, %d budget calls decided without the store\n",
		s.maxLive, c.budget, s.over, s.gaveUp, s.fallback)
	for _, e := range s.events {
		back := "never"
		if e.back >= 0 {
			back = fmt.Sprintf("+%v", e.back)
		}
		fmt.Fprintf(w, "%s at %v: lowest live %d (at +%v), back to %d %s, %d callers gave up\n",
			e.name, e.at, e.lowest, e.lowAt-e.at, c.budget, back, e.gaveUp)
	}
}
