package ward

import "time"

// Deadline is a time budget measured from the moment it started. A budget of
// zero or less never expires, which is how most servers spell "no timeout":
// a configuration that leaves the timeout unset must not time everything out.
//
// The zero Deadline never expires. A Deadline is a value: copy it freely.
type Deadline struct {
	start  time.Time
	budget time.Duration
}

// StartDeadline returns a deadline of budget starting at now.
func StartDeadline(budget time.Duration, now time.Time) Deadline {
	return Deadline{start: now, budget: budget}
}

// Expired reports whether the budget is spent at now: at least budget has
// passed since the start.
func (d Deadline) Expired(now time.Time) bool {
	return d.budget > 0 && now.Sub(d.start) >= d.budget
}

// Remaining returns what is left of the budget at now, never negative, and
// true; or 0 and false when there is no budget, which has no finite remainder.
func (d Deadline) Remaining(now time.Time) (time.Duration, bool) {
	if d.budget <= 0 {
		return 0, false
	}
	spent := max(now.Sub(d.start), 0) // a clock read before the start spent nothing
	return max(d.budget-spent, 0), true
}
