// Command sim drives a real pool.Pool with a synthetic client for 24
// simulated seconds and prints one row a second: how many resources were
// lent and idle and how many callers queued at that instant, and how many
// callers had to wait and how many resources were made and retired during
// that second.
//
// Time is virtual: a queue of events ordered by instant, no sleeping and no
// clock, so a run takes milliseconds and the same -seed prints the same
// table on every machine. Load arrives as a Poisson stream at -rate per
// second, doubling between seconds 8 and 16, each caller holding its
// resource for an exponentially distributed time of mean -hold. Making a
// resource takes -dial. Callers who find every slot in use queue in arrival
// order and are served as resources come back, as pool.Keeper does; idle
// resources past -keep are retired by the timer the pool asks for (Next).
//
//	go run ./examples/sim -seed 7 -size 12 -rate 100 -hold 40ms
package main

import (
	"container/heap"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

type config struct {
	seed    uint64
	size    int
	rate    float64
	hold    time.Duration
	dial    time.Duration
	keep    time.Duration
	seconds int
}

func main() {
	var c config
	flag.Uint64Var(&c.seed, "seed", 1, "random seed: the same seed prints the same table")
	flag.IntVar(&c.size, "size", 12, "most resources live at once")
	flag.Float64Var(&c.rate, "rate", 100, "callers arriving per second (doubled from second 8 to 16)")
	flag.DurationVar(&c.hold, "hold", 40*time.Millisecond, "mean time a caller holds a resource")
	flag.DurationVar(&c.dial, "dial", 20*time.Millisecond, "time to make a resource")
	flag.DurationVar(&c.keep, "keep", 2*time.Second, "idle time after which a resource is retired")
	flag.IntVar(&c.seconds, "seconds", 24, "simulated seconds to run")
	flag.Parse()
	if err := run(os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "sim:", err)
		os.Exit(2)
	}
}

// event kinds
const (
	arrive = iota
	release
	dialed
	evict
	tick
)

type event struct {
	at   time.Duration
	kind int
	conn *resource
	seq  int // ties broken by insertion order
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type resource struct{ id int }

// sim is the state of one run.
type sim struct {
	c       config
	rng     *rand.Rand
	origin  time.Time
	p       *pool.Pool[*resource]
	q       events
	seq     int
	waiting []time.Duration // arrival instants of queued callers, oldest first
	dialing int             // makes in flight that no caller is waiting on yet
	made    int
	// per-second counts
	waited, madeSec int
	nextEvict       time.Duration
	evictArmed      bool
}

func (s *sim) at(d time.Duration) time.Time { return s.origin.Add(d) }

func (s *sim) push(at time.Duration, kind int, r *resource) {
	s.seq++
	heap.Push(&s.q, event{at: at, kind: kind, conn: r, seq: s.seq})
}

func (s *sim) exp(mean float64) time.Duration {
	return time.Duration(s.rng.ExpFloat64() * mean)
}

func run(w io.Writer, c config) error {
	if c.rate <= 0 || c.hold <= 0 || c.seconds <= 0 || c.dial < 0 {
		return fmt.Errorf("rate, hold and seconds must be positive and dial not negative")
	}
	l := pool.DefaultLimits
	l.Size, l.Idle, l.Keep = c.size, c.size, c.keep
	p, err := pool.New[*resource](l, ward.Ward{})
	if err != nil {
		return err
	}
	s := &sim{c: c, rng: rand.New(rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15)), origin: time.Unix(0, 0), p: p}
	s.push(s.arrival(0), arrive, nil)
	for sec := 1; sec <= c.seconds; sec++ {
		s.push(time.Duration(sec)*time.Second, tick, nil)
	}
	fmt.Fprintf(w, "%4s %5s %5s %7s %7s %5s %8s\n", "sec", "lent", "idle", "queued", "waited", "made", "retired")
	var lastRetired uint64
	end := time.Duration(c.seconds) * time.Second
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(event)
		if e.at > end {
			break
		}
		now := s.at(e.at)
		switch e.kind {
		case arrive:
			s.waiting = append(s.waiting, e.at)
			s.serve(e.at)
			s.push(s.arrival(e.at), arrive, nil)
		case release:
			if !s.p.Give(e.conn, now) {
				// Over the idle ceiling: the caller closes it.
				_ = e.conn
			}
			s.serve(e.at)
		case dialed:
			s.dialing--
			if s.p.Made(e.conn, now) {
				if len(s.waiting) > 0 {
					s.lend(e.at, e.conn)
				} else if !s.p.Give(e.conn, now) {
					_ = e.conn // closed
				}
			}
			s.serve(e.at)
		case evict:
			s.evictArmed = false
			s.p.Evict(now) // a real runtime closes these outside its lock
		case tick:
			b := s.p.Books()
			fmt.Fprintf(w, "%4d %5d %5d %7d %7d %5d %8d\n",
				e.at/time.Second, b.Busy-s.p.Making(), b.Idle, len(s.waiting), s.waited, s.madeSec, b.Retired-lastRetired)
			lastRetired = b.Retired
			s.waited, s.madeSec = 0, 0
		}
		s.arm()
	}
	return nil
}

// arrival is the instant of the next caller after from: Poisson at the
// configured rate, doubled between seconds 8 and 16.
func (s *sim) arrival(from time.Duration) time.Duration {
	rate := s.c.rate
	if from >= 8*time.Second && from < 16*time.Second {
		rate *= 2
	}
	return from + s.exp(float64(time.Second)/rate)
}

// serve hands resources to queued callers, oldest first, while the pool
// has them or has room to make them.
func (s *sim) serve(at time.Duration) {
	now := s.at(at)
	for len(s.waiting) > s.dialing {
		tk := s.p.Take(now, 0, 0)
		switch tk.Kind {
		case pool.Ready:
			s.lend(at, tk.Item)
		case pool.Stale:
			continue // closed; ask again
		case pool.Make:
			s.made++
			s.madeSec++
			s.dialing++
			s.push(at+s.c.dial, dialed, &resource{id: s.made})
		default: // Wait: every slot in use
			return
		}
	}
}

// lend gives r to the oldest queued caller, who will hold it a while.
func (s *sim) lend(at time.Duration, r *resource) {
	if at > s.waiting[0] {
		s.waited++
	}
	s.waiting = s.waiting[1:]
	s.push(at+s.exp(float64(s.c.hold)), release, r)
}

// arm schedules the one eviction timer at the instant the pool names.
func (s *sim) arm() {
	next, ok := s.p.Next()
	if !ok {
		return
	}
	d := next.Sub(s.origin)
	if s.evictArmed && d >= s.nextEvict {
		return
	}
	s.evictArmed, s.nextEvict = true, d
	s.push(d, evict, nil)
}
