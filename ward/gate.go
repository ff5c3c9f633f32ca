package ward

// Gate is a count with a ceiling: the concurrency limit a server puts on
// itself. It never asks what time it is.
//
// The zero Gate has no ceiling. A Gate is not safe for concurrent use.
type Gate struct {
	limit int
	held  int
}

// NewGate returns a gate nothing has entered, letting limit in at once. A
// limit of zero or less means no ceiling.
func NewGate(limit int) *Gate { return &Gate{limit: max(limit, 0)} }

// Enter reports whether there is room, taking it if there is.
func (g *Gate) Enter() bool {
	if g.limit > 0 && g.held >= g.limit {
		return false
	}
	g.held++
	return true
}

// Leave gives one place back. Leaving an empty gate does nothing.
func (g *Gate) Leave() { g.held = max(g.held-1, 0) }

// Held returns how many are inside.
func (g *Gate) Held() int { return g.held }

// Limit returns the ceiling, zero meaning none.
func (g *Gate) Limit() int { return g.limit }
