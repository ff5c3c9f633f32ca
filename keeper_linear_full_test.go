package wardpool

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/wardpool/wardpool/pool"
)

// linRaw is a history written operation by operation, each with the
// instants it began and ended.
type linRaw struct{ h *linHistory }

func (r linRaw) add(call, ret int64, in linIn, out linOut) linRaw {
	r.h.ops = append(r.h.ops, porcupine.Operation{ClientId: len(r.h.ops), Input: in, Output: out, Call: call, Return: ret})
	return r
}

// linRefusedWhileLent is c1 dialed and lent (#1), then an Acquire (#2)
// whose dial the backend refuses as full while c1 is live, answered with
// out; then, while #2 waits, the clock moves move and the timer runs,
// and c1 comes back (#3) unless back is false.
func linRefusedWhileLent(out linOut, move time.Duration, back bool) *linHistory {
	r := linRaw{newLinScript(pool.Limits{Size: 3}).h}
	r.add(1, 4, linIn{kind: linAcquire, n: 1}, linOut{id: 1, dialed: 1}).
		add(2, 3, linIn{kind: linLand, n: 1, id: 1, own: true}, linOut{}).
		add(5, 30, linIn{kind: linAcquire, n: 2}, out).
		add(6, 7, linIn{kind: linRefuse, n: 2}, linOut{}).
		add(8, 9, linIn{kind: linAdvance, n: 4, d: move}, linOut{}).
		add(10, 11, linIn{kind: linTimer, n: 5}, linOut{})
	if out.dialed != 0 {
		r.add(12, 13, linIn{kind: linLand, n: 2, id: out.dialed, own: true}, linOut{})
	}
	if back {
		r.add(20, 21, linIn{kind: linRelease, n: 3, id: 1}, linOut{})
	}
	r.h.full = true
	return r.h
}

// linRefusedBoth is two Acquires (#1, #2) whose dials the backend
// refuses as full one after the other: #1's while #2's is being made (it
// waits, and the room is the none made), then #2's with nothing else live
// (it fails). Then the clock moves move, the timer runs, and #1 dials c1.
// Nothing is live, yet #1 waits for the room to grow: the Pool's answer,
// and the documentation's ("while as many are live").
func linRefusedBoth(move time.Duration) *linHistory {
	r := linRaw{newLinScript(pool.Limits{Size: 3}).h}
	r.add(1, 30, linIn{kind: linAcquire, n: 1}, linOut{id: 1, dialed: 1, refused: 1}).
		add(2, 10, linIn{kind: linAcquire, n: 2}, linOut{err: linOther, refused: 1}).
		add(3, 4, linIn{kind: linRefuse, n: 1}, linOut{}).
		add(5, 6, linIn{kind: linRefuse, n: 2}, linOut{}).
		add(11, 12, linIn{kind: linAdvance, n: 3, d: move}, linOut{}).
		add(13, 14, linIn{kind: linTimer, n: 4}, linOut{}).
		add(15, 16, linIn{kind: linLand, n: 1, id: 1, own: true}, linOut{})
	r.h.full = true
	return r.h
}

// linHeld is c1 dialed and lent (#1), then its Loan.Reset (#2) with
// Config.Hold h, then an Acquire (#3) whose first dial fails and is
// answered with out; the clock moves move and the timer runs meanwhile.
func linHeld(h pool.Hold, out linOut, move time.Duration) *linHistory {
	r := linRaw{newLinScript(pool.Limits{Size: 2}).h}
	r.add(1, 4, linIn{kind: linAcquire, n: 1}, linOut{id: 1, dialed: 1}).
		add(2, 3, linIn{kind: linLand, n: 1, id: 1, own: true}, linOut{}).
		add(5, 6, linIn{kind: linFailover, n: 2, id: 1}, linOut{}).
		add(7, 30, linIn{kind: linAcquire, n: 3}, out).
		add(8, 9, linIn{kind: linRefuse, n: 3, down: true}, linOut{}).
		add(10, 11, linIn{kind: linAdvance, n: 4, d: move}, linOut{}).
		add(12, 13, linIn{kind: linTimer, n: 5}, linOut{})
	if out.dialed != 0 {
		r.add(14, 15, linIn{kind: linLand, n: 3, id: out.dialed, own: true}, linOut{})
	}
	r.h.hold = h
	return r.h
}

// TestLinearSpecFullHold holds the specification to what the documentation
// says of a full backend and of a hold after a failover, on histories
// written by hand.
func TestLinearSpecFullHold(t *testing.T) {
	hold := pool.Hold{For: 10 * time.Second, Every: time.Second}
	cases := []struct {
		name string
		h    *linHistory
		want bool
	}{
		{"refused as full with nothing else live: the caller gets the error",
			linRaw{newLinScript(pool.Limits{Size: 2}).h}.
				add(1, 4, linIn{kind: linAcquire, n: 1}, linOut{err: linOther, refused: 1}).
				add(2, 3, linIn{kind: linRefuse, n: 1}, linOut{}).h, true},
		{"refused as full with nothing else live: the caller waits on",
			linRaw{newLinScript(pool.Limits{Size: 2}).h}.
				add(1, 4, linIn{kind: linAcquire, n: 1}, linOut{id: 2, dialed: 2, refused: 1}).
				add(2, 3, linIn{kind: linRefuse, n: 1}, linOut{}).
				add(3, 4, linIn{kind: linLand, n: 1, id: 2, own: true}, linOut{}).h, false},
		{"refused as full with c1 live: the caller waits for c1",
			linRefusedWhileLent(linOut{id: 1, refused: 1}, 0, true), true},
		{"refused as full with c1 live: the caller gets the error",
			linRefusedWhileLent(linOut{err: linOther, refused: 1}, 0, true), false},
		{"refused as full: a second later the room grows by one",
			linRefusedWhileLent(linOut{id: 2, dialed: 2, refused: 1}, time.Second, false), true},
		{"refused as full: a dial before the second",
			linRefusedWhileLent(linOut{id: 2, dialed: 2, refused: 1}, time.Second-1, false), false},
		{"refused as full twice: the first waits a second with nothing live",
			linRefusedBoth(time.Second), true},
		{"refused as full twice: the first dials before the second",
			linRefusedBoth(time.Second - 1), false},
		{"a failed dial while held: the caller waits for the next make, Every later",
			linHeld(hold, linOut{id: 2, dialed: 2, refused: 1}, time.Second), true},
		{"a failed dial while held: the next make before Every",
			linHeld(hold, linOut{id: 2, dialed: 2, refused: 1}, time.Second-1), false},
		{"a failed dial while held: the caller gets the error",
			linHeld(hold, linOut{err: linOther, refused: 1}, time.Second), false},
		{"a failed dial with no hold: the caller gets the error",
			linHeld(pool.Hold{}, linOut{err: linOther, refused: 1}, time.Second), true},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(c.h.model(), c.h.ops); got != c.want {
			t.Errorf("%s: linearizable %v, want %v\n%s", c.name, got, c.want, c.h.describe())
		}
	}
}
