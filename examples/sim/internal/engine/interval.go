package engine

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Interval is what a prediction from one recording knows about the p99
// acquire wait of another configuration: the figure the recording's own
// holds give, and the range it takes when the holds are drawn again from
// the recorded ones (a bootstrap: each caller asks at its recorded instant
// and holds for a hold drawn from the recorded holds, with replacement).
// The holds are drawn in blocks of consecutive callers (a moving-block
// bootstrap), so that holds that ran long together, as in a stall of the
// backend or the machine, stay together: in a resampled run such a block
// may land elsewhere, twice, or not at all, as a stall may in the next
// run. The spread says how much the figure rests on which callers happened
// to hold long; it says nothing of what the recording does not show (a
// stall longer than any it has, a load that changes).
type Interval struct {
	// Point is the p99 replaying the recording as it is.
	Point time.Duration
	// Lo and Hi bound the middle Level of the resampled runs' p99s: the
	// (1-Level)/2 and (1+Level)/2 quantiles (nearest rank).
	Lo, Hi time.Duration
	// Level is the share of the resampled runs within [Lo, Hi], such as
	// 0.9.
	Level float64
	// Each holds every resampled run's p99, in the order run.
	Each []time.Duration
}

// Contains reports whether d falls within [Lo, Hi].
func (iv Interval) Contains(d time.Duration) bool { return d >= iv.Lo && d <= iv.Hi }

// ErrNoHolds is returned by Resample for a recording with no complete
// loan to draw holds from.
var ErrNoHolds = errors.New("sim: the recording has no complete loan to resample")

// Resample predicts s's p99 acquire wait on the recording rec, as it
// stands and with its holds resampled n times (see Interval), the middle
// level of them bounding the interval. Blocks are the callers who asked
// within block of each other on average (0 or less: each hold drawn on
// its own). hold is the hold given callers the recording never saw served
// (as Recording.Load). opt, when not nil, makes the options of every run
// (its Load is replaced). The draws come from s.Seed, so the same
// arguments give the same interval.
//
// extra, when not nil, holds for each caller of the recording (in its
// order) a delay beyond the pool's to add to its wait: what the machine
// added on top of the model for that caller when the recording was made
// (see the accuracy harness), drawn in the same blocks as the holds, so
// that the interval carries the model's error as the recording saw it.
// The sum is held at zero or more.
func Resample(s Scenario, rec *Recording, hold time.Duration, opt func() Options, n int, level float64, block time.Duration, extra []time.Duration) (Interval, error) {
	if n < 1 || !(level > 0 && level < 1) {
		return Interval{}, errors.New("sim: resample needs at least one run and a level between 0 and 1")
	}
	if extra != nil && len(extra) != len(rec.Rows) {
		return Interval{}, errors.New("sim: resample needs one extra delay for each caller of the recording")
	}
	// The complete loans, by their row: the holds a resampled run draws.
	var rows []int
	for i, r := range rec.Rows {
		if r.Acquired >= 0 && r.Release >= 0 {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return Interval{}, ErrNoHolds
	}
	// run runs load; from[i] is the row whose delay caller i carries.
	var waits []time.Duration
	run := func(load Load, from []int) (time.Duration, error) {
		var o Options
		if opt != nil {
			o = opt()
		}
		o.Load = load
		if extra != nil {
			waits = waits[:0]
			o.Wait = func(c uint64, w time.Duration) {
				waits = append(waits, max(w+extra[from[c]], 0))
			}
		}
		r, err := Run(s, o)
		if err != nil {
			return 0, err
		}
		if extra == nil {
			return r.Sum.P99, nil
		}
		slices.Sort(waits)
		return rank(waits, 0, 99), nil
	}
	iv := Interval{Level: level, Each: make([]time.Duration, n)}
	own := make([]int, len(rec.Rows))
	for i := range own {
		own[i] = i
	}
	var err error
	if iv.Point, err = run(rec.Load(hold), own); err != nil {
		return Interval{}, err
	}
	rng := rand.New(rand.NewPCG(s.Seed^0x2545f4914f6cdd1d, 0x9fb21c651e98df25))
	base := rec.Load(hold).(*Slice).A
	size := 1
	if span := rec.End(); block > 0 && span > 0 {
		size = int(math.Round(float64(len(rows)) * float64(block) / float64(span)))
		size = min(max(size, 1), len(rows))
	}
	from := make([]int, len(base))
	for i := range n {
		a := slices.Clone(base)
		for j := 0; j < len(a); {
			start := rng.IntN(len(rows) - size + 1)
			for k := start; k < start+size && j < len(a); k++ {
				row := rec.Rows[rows[k]]
				a[j].Hold, a[j].Recorded = time.Duration(row.Release-row.Acquired), true
				from[j] = rows[k]
				j++
			}
		}
		if iv.Each[i], err = run(&Slice{A: a}, from); err != nil {
			return Interval{}, err
		}
	}
	sorted := slices.Clone(iv.Each)
	slices.Sort(sorted)
	at := func(q float64) time.Duration {
		k := int(math.Ceil(q*float64(n))) - 1
		return sorted[min(max(k, 0), n-1)]
	}
	iv.Lo, iv.Hi = at((1-level)/2), at((1+level)/2)
	return iv, nil
}
