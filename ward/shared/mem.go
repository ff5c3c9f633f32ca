package shared

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// MemStore is a [Store] in one process's memory: it shares state between the
// guards of one process, not between replicas, which is the trade every
// in-memory adapter makes. It is what tests and the virtual-time fleet
// (examples/fleet) run on: expiry runs on the clock passed to [NewMemStore]
// and is checked when a key is touched, so the store starts no goroutine.
//
// A MemStore is safe for concurrent use. The zero MemStore is an empty store
// whose keys never expire.
type MemStore struct {
	clock func() time.Time

	mu      sync.Mutex // guards keys and budgets
	keys    map[string]memEntry
	budgets map[string]*memBudget
}

type memEntry struct {
	value   string
	expires time.Time // zero: never
}

// memBudget is one budget's keys: members and want map a replica to the
// moment its entry expires (a member's lease; it lapses then, and its
// slots stay counted for one more TTL), held maps it to its count of slots
// and room to the Room its last reply gave it.
type memBudget struct {
	members, want map[string]time.Time
	held, room    map[string]int
	rebuild       time.Time // leases are refused until then; zero: none
}

// NewMemStore returns an empty store whose expiries run on clock (time.Now in
// production, a fake in tests). A nil clock means keys never expire.
func NewMemStore(clock func() time.Time) *MemStore {
	return &MemStore{clock: clock}
}

// liveLocked returns the entry at key if it exists and has not expired,
// removing it if it has. mu must be held.
func (s *MemStore) liveLocked(key string, now time.Time) (memEntry, bool) {
	e, ok := s.keys[key]
	if !ok {
		return memEntry{}, false
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		delete(s.keys, key)
		return memEntry{}, false
	}
	return e, true
}

// now reads the store's clock; the zero time when it has none.
func (s *MemStore) now() time.Time {
	if s.clock == nil {
		return time.Time{}
	}
	return s.clock()
}

// expiry returns when a key given ttl at now expires; zero for none.
func (s *MemStore) expiry(now time.Time, ttl time.Duration) time.Time {
	if s.clock == nil || ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

func (s *MemStore) setLocked(key string, e memEntry) {
	if s.keys == nil {
		s.keys = make(map[string]memEntry)
	}
	s.keys[key] = e
}

// intLocked returns the integer at key (zero when absent) and its entry.
// mu must be held.
func (s *MemStore) intLocked(key string, now time.Time) (int64, memEntry, bool, error) {
	e, ok := s.liveLocked(key, now)
	if !ok {
		return 0, e, false, nil
	}
	v, err := strconv.ParseInt(e.value, 10, 64)
	if err != nil {
		return 0, e, true, ErrNotInteger
	}
	return v, e, true, nil
}

// Incr implements [Store]. A ttl of zero or less leaves a new key without
// expiry.
func (s *MemStore) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n, e, ok, err := s.intLocked(key, now)
	if err != nil {
		return 0, err
	}
	if !ok {
		e.expires = s.expiry(now, ttl)
	}
	n++
	e.value = strconv.FormatInt(n, 10)
	s.setLocked(key, e)
	return n, nil
}

// IncrUnder implements [Store]. A ttl of zero or less leaves a new key
// without expiry.
func (s *MemStore) IncrUnder(ctx context.Context, key, prev string, weight float64, limit int64, ttl time.Duration) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _, _, err := s.intLocked(prev, now)
	if err != nil {
		return 0, false, err
	}
	n, e, ok, err := s.intLocked(key, now)
	if err != nil {
		return 0, false, err
	}
	if !(float64(n)+float64(p)*weight < float64(limit)) {
		return n, false, nil
	}
	if !ok {
		e.expires = s.expiry(now, ttl)
	}
	n++
	e.value = strconv.FormatInt(n, 10)
	s.setLocked(key, e)
	return n, true, nil
}

// SetIfAbsent implements [Store]. A ttl of zero or less stores the key
// without expiry.
func (s *MemStore) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.liveLocked(key, now); ok {
		return false, nil
	}
	s.setLocked(key, memEntry{value: value, expires: s.expiry(now, ttl)})
	return true, nil
}

// Get implements [Store].
func (s *MemStore) Get(ctx context.Context, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.liveLocked(key, now)
	return e.value, ok, nil
}

// Del implements [Store].
func (s *MemStore) Del(ctx context.Context, keys ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		delete(s.keys, k)
	}
	return nil
}

// Budget implements [Store] with the rules [Budget] documents, on the
// store's clock. Without a clock, memberships never expire.
func (s *MemStore) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	if err := ctx.Err(); err != nil {
		return BudgetReply{}, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.budgets[op.Key]
	if b == nil {
		b = &memBudget{members: map[string]time.Time{}, want: map[string]time.Time{}, held: map[string]int{}, room: map[string]int{}}
		if s.budgets == nil {
			s.budgets = make(map[string]*memBudget)
		}
		s.budgets[op.Key] = b
	}
	return b.step(op, now, s.clock != nil), nil
}

// step is one budget step at now; expire says whether entries expire. It is
// the same algorithm as drivers/redis's script, line for line.
func (b *memBudget) step(op BudgetOp, now time.Time, expire bool) BudgetReply {
	ttl := max(op.TTL, time.Millisecond)
	if expire {
		// A member whose lease ran out has lapsed: it counts for no share
		// and waits for nothing, but its slots stay counted for one more
		// TTL (it may be alive and cut off); then they are free.
		for r, t := range b.members {
			if !now.Before(t.Add(ttl)) {
				delete(b.members, r)
				delete(b.held, r)
				delete(b.room, r)
				delete(b.want, r)
			} else if !now.Before(t) {
				delete(b.want, r)
			}
		}
		for r, t := range b.want {
			if !now.Before(t) {
				delete(b.want, r)
			}
		}
	}
	me := op.Replica
	var granted, known bool
	if op.Step == StepLeave {
		delete(b.members, me)
		delete(b.held, me)
		delete(b.room, me)
		delete(b.want, me)
	} else {
		var t time.Time
		t, known = b.members[me]
		lapsed := known && expire && !now.Before(t)
		b.members[me] = now.Add(ttl)
		if !known && op.Held > 0 {
			// Slots the store did not know of: rebuild for one TTL.
			b.rebuild = now.Add(ttl)
		}
		if !known || lapsed || (op.Step == StepRenew && op.Overwrite) {
			b.held[me] = max(op.Held, 0)
		} else {
			if op.Step == StepReturn && b.held[me] > 0 {
				b.held[me]--
			}
			if op.Unsure {
				// Never below the replica's own count: slots it took
				// alone while the store was away count from its next step.
				b.held[me] = max(b.held[me], op.Held)
			}
		}
	}
	live := 0
	for _, t := range b.members {
		if !expire || now.Before(t) {
			live++
		}
	}
	share := 0
	if live > 0 {
		share = max(op.Budget, 0) / live
	}
	total, others := 0, 0
	for r, h := range b.held {
		total += h
		if r != me {
			others += max(h, b.room[r])
		}
	}
	if op.Step != StepLeave && !known && op.Room > 0 {
		// A replica the store has no record of, coming back from a
		// failed step with the Room its last reply gave it: that much is
		// set aside for it again, within its share and what the others'
		// set-asides leave free (so never past Budget).
		b.room[me] = max(min(op.Room, share, op.Budget-others), 0)
	}
	rebuilding := expire && now.Before(b.rebuild)
	if op.Step == StepLease {
		h := b.held[me]
		reserved := 0
		for r := range b.want {
			if r != me {
				reserved += max(share-b.held[r], 0)
			}
		}
		fits := h < share || (op.Borrow && total+reserved < op.Budget)
		if rebuilding {
			// While the store relearns the counts, a replica may take back
			// only what was set aside for it, within its share (a
			// connection closed for its age is dialled again): nothing new.
			fits = h < min(b.room[me], share)
		}
		granted = total < op.Budget && others+h < op.Budget && fits
		switch {
		case granted:
			b.held[me]++
			total++
			delete(b.want, me)
		case h < share:
			b.want[me] = now.Add(ttl)
		}
	}
	h := b.held[me]
	wanting := false
	for r := range b.want {
		if r != me && b.held[r] < share {
			wanting = true
		}
	}
	r := BudgetReply{Granted: granted, Held: h, Share: share, Live: live, Total: total, Room: h}
	if wanting || total > op.Budget {
		r.Owed = max(h-share, 0)
	}
	_, waiting := b.want[me]
	switch {
	case h >= share:
		// At or over its share it never grows alone.
	case rebuilding:
		// Nor past what was set aside for it while the store relearns the
		// counts, since others' may still be missing.
		r.Room = max(min(b.room[me], share), h)
	case waiting || !op.Borrow:
		r.Room = max(min(share, op.Budget-others), h)
	case op.Step != StepRenew:
		// A lease or a return keeps what the last reply allowed (a
		// connection closed for its age is dialled again); a renewal
		// lets what went unused go to the borrowers.
		r.Room = max(min(b.room[me], share), h)
	}
	if op.Step != StepLeave {
		b.room[me] = r.Room
	}
	return r
}
