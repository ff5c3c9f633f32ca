package engine

import (
	"math/rand/v2"
	"time"
)

// Arrival is one caller of a load: when it asks for a resource and how long
// it keeps one once it has it.
type Arrival struct {
	// At is when the caller asks, since the start of the run.
	At time.Duration
	// Hold is how long the caller keeps the resource. A negative Hold means
	// it keeps it past the end of the run (a recording cut off mid-loan).
	Hold time.Duration
	// Recorded says the hold was measured, not drawn: a slowdown in the
	// scenario does not stretch it.
	Recorded bool
	// Last says the caller asks after everything else that happens at its
	// instant (a return, a dial ending): a recording shows it asked after
	// them, at one reading of a clock.
	Last bool
	// Class is the caller's class: 1 + its index in Scenario.Classes, or 0
	// for none (the pool's default class).
	Class int
}

// Load is the seam through which the simulator takes its callers: a
// synthetic stream (Poisson), a CSV of acquire and release times (ReadCSV),
// a Keeper's own recording (ReadKeeper), or any other recording adapted to
// it: per acquire, when it was asked for and how long it was held (release
// minus grant) is all a replay needs. Next returns the arrivals in order
// of At (equal instants in the order given), and false when there are no
// more. A Load is used by one run at a time.
type Load interface {
	Next() (Arrival, bool)
}

// poisson is the synthetic load of a scenario: arrivals at the scenario's
// rate (times any burst in force), holds exponential around its mean.
type poisson struct {
	s   *Scenario
	rng *rand.Rand
	at  time.Duration
	end time.Duration
	// With classes: the classes with a rate (1 + index), their rates
	// summed, and the sum of their rates so far, for the draw of a class.
	classes []int
	rate    float64
	cum     []float64
}

// Synthetic returns the scenario's own load: a Poisson stream drawn from
// s.Seed alone, so any two scenarios with the same seed, rate, hold and
// bursts see the same callers at the same instants with the same holds.
//
// With classes (Scenario.Classes), it is the classes with a rate, merged:
// one Poisson stream at the sum of their rates, each arrival of a class
// drawn in proportion to its rate, holding around that class's hold. The
// classes' populations (ClassLoad.Callers) are the run's: they ask again
// as their calls end.
func Synthetic(s *Scenario) Load {
	p := &poisson{
		s:   s,
		rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15)),
		end: time.Duration(s.Seconds) * time.Second,
	}
	if len(s.Classes) > 0 {
		p.rate = 0
		for i, c := range s.Classes {
			if c.Rate > 0 {
				p.rate += c.Rate
				p.classes = append(p.classes, i+1)
				p.cum = append(p.cum, p.rate)
			}
		}
		if len(p.classes) == 0 {
			p.at = p.end + 1 // populations alone
		}
	}
	return p
}

func (p *poisson) Next() (Arrival, bool) {
	for {
		if p.at > p.end {
			return Arrival{}, false
		}
		r := p.s.rateAt(p.at)
		if p.classes != nil {
			r *= p.rate / p.s.Rate // the bursts, on the classes' rates
		}
		if r <= 0 {
			// A burst of factor 0 stops the load: skip to the end of the
			// silent span (or of the run).
			next := p.end + 1
			for _, b := range p.s.Bursts {
				if b.In(p.at) && b.Factor == 0 {
					next = min(next, b.To)
				}
			}
			p.at = next
			continue
		}
		p.at += time.Duration(p.rng.ExpFloat64() * float64(time.Second) / r)
		if p.classes == nil {
			hold := time.Duration(p.rng.ExpFloat64() * float64(p.s.Hold))
			return Arrival{At: p.at, Hold: hold}, true
		}
		k := 0
		if len(p.classes) > 1 {
			x := p.rng.Float64() * p.rate
			for k < len(p.cum)-1 && x >= p.cum[k] {
				k++
			}
		}
		c := p.classes[k]
		hold := time.Duration(p.rng.ExpFloat64() * float64(p.s.Classes[c-1].Hold))
		return Arrival{At: p.at, Hold: hold, Class: c}, true
	}
}

// Slice is a load held in memory, in order of At.
type Slice struct {
	A []Arrival
	i int
}

// Next returns the next arrival of the slice.
func (s *Slice) Next() (Arrival, bool) {
	if s.i >= len(s.A) {
		return Arrival{}, false
	}
	s.i++
	return s.A[s.i-1], true
}
