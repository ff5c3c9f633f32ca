package engine

// event kinds, in no particular order: ties are broken by seq alone.
const (
	evArrive = iota
	evRelease
	evDialed
	evEvict
	evRetry
	evWake
	evTimeout
	evTick
	evMark   // a second after the failover: its figures are read
	evRotate // the scenario's rotation: Pool.Reset(now, RotateOver)
	evAgain  // one of a class's population asks (again): res is its class, 1 + index
)

// event is one thing due at an instant of virtual time (ns since the start).
type event struct {
	at    int64
	seq   uint64 // ties broken by insertion order
	c     *caller
	gen   uint32 // c's generation when the event was made
	res   int32  // the resource, for release and dialed
	kind  uint8
	ok    bool   // dialed: the dial worked
	old   bool   // dialed: the dial began before the failover (Scenario.Failover)
	rgen  uint32 // dialed: the reservation's generation (Taken.Gen), for Made
	full  bool   // dialed: the backend refused it for want of room (Scenario.ServerMax)
	class int32  // dialed: the class the reservation was opened for (MadeAs, UnmadeAs)
}

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// events is a binary min-heap of events, typed to spare the interface
// calls of container/heap: it is the simulator's inner loop.
type events []event

func (h *events) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
}

func (h *events) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	e := s[n]
	s[n] = event{}
	s = s[:n]
	*h = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].before(&s[l]) {
			m = r
		}
		if !s[m].before(&e) {
			break
		}
		s[i] = s[m]
		i = m
	}
	s[i] = e
	return top
}
