package engine

import "slices"

// wake returns the caller told Later that is due by t (the earliest), or nil.
func (kr *keeperReader) wake(t int64) *kcaller {
	best := -1
	for i, c := range kr.sleepers {
		if c.wake <= t && (best < 0 || c.wake < kr.sleepers[best].wake) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	c := kr.sleepers[best]
	kr.sleepers = slices.Delete(kr.sleepers, best, best+1)
	return c
}

// dialer returns the oldest caller dialing that no return served yet, or
// nil: the one the Keeper asks for at a return when nobody is queued.
func (kr *keeperReader) dialer() *kcaller {
	for _, c := range kr.dialing {
		if !c.bg && !c.served {
			return c
		}
	}
	return nil
}

// landed takes the dial a Made settles off the dials in flight: the oldest
// (dials end in the order they began), or, when the new resource is lent
// (lends), the oldest whose caller still waits for it, if any: a dial
// whose caller a return served lands for nobody.
func (kr *keeperReader) landed(lends bool) *kcaller {
	if len(kr.dialing) == 0 {
		return nil
	}
	i := 0
	if lends {
		for j, c := range kr.dialing {
			if !c.bg && !c.served {
				i = j
				break
			}
		}
	}
	c := kr.dialing[i]
	kr.dialing = slices.Delete(kr.dialing, i, i+1)
	return c
}

// lend begins c's loan at t in seat (-1: not known yet).
func (kr *keeperReader) lend(c *kcaller, seat int32, t int64, line int) {
	how := c.how
	switch {
	case c.served && how == "dialed":
		how = "returned"
	case how == "lock", how == "queued", how == "dialed":
	default:
		how = "atreturn"
	}
	kr.count(how, 1)
	kr.rows = append(kr.rows, Row{Line: line, Asked: c.asked, Acquired: t, Release: -1, Answers: how, Last: c.last})
	r := len(kr.rows) - 1
	if seat < 0 {
		kr.unseated = append(kr.unseated, r)
		return
	}
	if old, ok := kr.open[seat]; ok {
		// The seat was lent twice with no return between: the return
		// is not on record (it cannot be); end the older loan here.
		kr.rows[old].Release = t
	}
	kr.open[seat] = r
}

// fail records c as a caller never served.
func (kr *keeperReader) fail(c *kcaller, line int) {
	switch c.how {
	case "gaveup":
		kr.counts.GaveUp++
	case "waiting":
		kr.counts.Waiting++
	default:
		c.how = "failed"
		kr.counts.Failed++
	}
	kr.rows = append(kr.rows, Row{Line: line, Asked: c.asked, Acquired: -1, Release: -1, Answers: c.how, Last: c.last})
}

// loanAt returns the row of the loan out in seat, learning the seat of a
// loan made when seat is not known, or -1 when none is out.
func (kr *keeperReader) loanAt(seat int32) int {
	if r, ok := kr.open[seat]; ok {
		return r
	}
	if len(kr.unseated) == 0 {
		return -1
	}
	if len(kr.unseated) > 1 {
		kr.counts.Guessed++
	}
	r := kr.unseated[0]
	kr.unseated = kr.unseated[1:]
	kr.open[seat] = r
	return r
}

// end ends the loan out in seat at t.
func (kr *keeperReader) end(seat int32, t int64) {
	r := kr.loanAt(seat)
	if r < 0 {
		kr.counts.Before++
		kr.seats.ok = false // the pool was not empty when the recording began
		return
	}
	kr.rows[r].Release = t
	delete(kr.open, seat)
}

// count adds d to the count of callers read as how.
func (kr *keeperReader) count(how string, d int) {
	c := &kr.counts
	switch how {
	case "lock":
		c.Lock += d
	case "queued":
		c.Queued += d
	case "dialed":
		c.Dialed += d
	case "returned":
		c.Returned += d
	case "atreturn":
		c.AtReturn += d
	}
}
