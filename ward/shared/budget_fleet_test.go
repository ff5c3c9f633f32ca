package shared

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// errCut is the error of a replica's store call while it is cut off.
var errCut = errors.New("connection refused")

// way is one replica's way to a shared store; while cut, every call fails.
type way struct {
	Store
	cut bool
}

func (w *way) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	if w.cut {
		return BudgetReply{}, errCut
	}
	return w.Store.Budget(ctx, op)
}

// member is one replica of the property test's fleet.
type member struct {
	b      *Budget
	way    *way
	up     bool // running (false: crashed or left, holding nothing)
	paused bool // alive but silent: it makes no call
}

// claims returns, per replica the store has a record of (one whose slots
// have not yet been dropped, at now), what it counts as taken for it: the
// slots it holds, or its Room if more; and the sum of the slots held.
func claims(store *MemStore, key string, now time.Time, ttl time.Duration) (map[string]int, int) {
	store.mu.Lock()
	defer store.mu.Unlock()
	out, held := map[string]int{}, 0
	if b := store.budgets[key]; b != nil {
		for r, h := range b.held {
			if now.Before(b.members[r].Add(ttl)) {
				out[r] = max(h, b.room[r])
				held += h
			}
		}
	}
	return out, held
}

// TestBudgetFleetProperty drives a fleet of replicas over one MemStore on a
// fake clock through random leases, returns, renewals (each giving back
// what is owed), store outages for some replicas or all, pauses, crashes,
// leaves, joins and the passing of time, and holds the budget's invariant
// (see Budget) after every step:
//
//   - every running replica the store has a record of holds no more than
//     the store counts as taken for it (its slots, or its Room if more):
//     what it takes alone stays within what the store set aside;
//   - what the store sets aside adds up to at most Slots, and so the
//     fleet's real total (the sum of what the replicas hold) is at most
//     Slots, unless a replica held slots while the store had no record of
//     it (cut off or paused for longer than two TTLs);
//   - that excess is bounded: once every replica reaches the store again
//     and, for three TTLs, renews every RenewEvery and gives back what it
//     owes, the fleet is within Slots and the store's total is the real
//     one.
func TestBudgetFleetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		clock := &fakeClock{t: t0}
		store := NewMemStore(clock.Now)
		n := rapid.IntRange(1, 5).Draw(t, "replicas")
		cfg := BudgetConfig{
			Slots:  rapid.IntRange(0, 12).Draw(t, "slots"),
			TTL:    time.Second,
			Borrow: rapid.Bool().Draw(t, "borrow"),
			Clock:  clock.Now,
		}
		ms := make([]*member, n)
		for i := range ms {
			w := &way{Store: store}
			ms[i] = &member{b: NewBudget(Link{Store: w, Timeout: time.Minute}, "db", fmt.Sprintf("r%d", i), cfg), way: w, up: true}
			ms[i].b.Renew(ctx)
		}
		forgotten := false // a replica held slots the store had no record of
		// lost is, per replica, the most it held while the store had no
		// record of it: the fleet may be over Slots by at most their sum.
		lost := map[string]int{}
		known := map[string]bool{} // the replicas the store had a record of at the last check
		var rebuild time.Time      // the store's rebuild deadline at the last check
		for r := range func() map[string]int { c, _ := claims(store, "{db}", clock.Now(), cfg.TTL); return c }() {
			known[r] = true
		}
		pay := func(m *member) {
			for range min(m.b.Owed(), m.b.Held()) {
				m.b.Return(ctx)
			}
		}
		round := func() {
			clock.Add(ms[0].b.RenewEvery())
			for _, m := range ms {
				if m.up && !m.paused {
					m.b.Renew(ctx)
					pay(m)
				}
			}
		}
		check := func(when string) {
			c, _ := claims(store, "{db}", clock.Now(), cfg.TTL)
			store.mu.Lock()
			rebuilt := false // a rebuild began since the last check
			if b := store.budgets["{db}"]; b != nil {
				if clock.Now().Before(b.rebuild) {
					forgotten = true // it met a replica it had no record of, holding slots
				}
				rebuilt, rebuild = !b.rebuild.Equal(rebuild), b.rebuild
			}
			store.mu.Unlock()
			sum, set := 0, 0
			for _, x := range c {
				set += x
			}
			for _, m := range ms {
				h := m.b.Held()
				sum += h
				if !m.up && h != 0 {
					t.Fatalf("%s: %s is down holding %d", when, m.b.replica, h)
				}
				x, ok := c[m.b.replica]
				if h > 0 && (!ok || (rebuilt && !known[m.b.replica])) {
					// Held without a record, or back with slots the store had
					// no record of at the last look.
					forgotten = true
					lost[m.b.replica] = max(lost[m.b.replica], h)
				}
				if ok && h > x {
					t.Fatalf("%s: %s holds %d, the store sets aside %d for it", when, m.b.replica, h, x)
				}
			}
			if !forgotten && (set > cfg.Slots || sum > cfg.Slots) {
				t.Fatalf("%s: the fleet holds %d, the store sets aside %d, of %d", when, sum, set, cfg.Slots)
			}
			excess := 0
			for _, n := range lost {
				excess += n
			}
			if sum > cfg.Slots+excess {
				t.Fatalf("%s: the fleet holds %d of %d, more than the %d held without the store's record", when, sum, cfg.Slots, excess)
			}
			clear(known)
			for r := range c {
				known[r] = true
			}
		}
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for s := range steps {
			m := ms[rapid.IntRange(0, n-1).Draw(t, "who")]
			act := rapid.IntRange(0, 10).Draw(t, "act")
			active := m.up && !m.paused
			switch act {
			case 0, 1: // a caller wants a connection
				if active {
					m.b.Lease(ctx)
				}
			case 2: // a connection closes
				if active {
					m.b.Return(ctx)
				}
			case 3: // a renewal, and what is owed
				if active {
					m.b.Renew(ctx)
					pay(m)
				}
			case 4: // time passes; everyone running renews
				round()
			case 5: // this replica loses (or finds again) its way to the store
				m.way.cut = !m.way.cut
			case 6: // the store goes away for everyone, or comes back
				cut := !ms[0].way.cut
				for _, x := range ms {
					x.way.cut = cut
				}
			case 7: // a pause (a long GC, a stopped process), or its end
				m.paused = !m.paused
			case 8: // the replica crashes: its connections die with it
				if m.up {
					m.up, m.paused = false, false
					m.b = NewBudget(Link{Store: m.way, Timeout: time.Minute}, "db", m.b.replica, cfg)
				}
			case 9: // the replica closes and leaves, or (re)joins
				if active {
					m.b.Leave(ctx)
					m.up = false
				} else if !m.up {
					m.up = true
					m.b.Renew(ctx)
				}
			case 10: // time passes in a lump, nobody renewing
				clock.Add(time.Duration(rapid.IntRange(1, 2500).Draw(t, "ms")) * time.Millisecond)
			}
			check(fmt.Sprintf("step %d (act %d by %s)", s, act, m.b.replica))
		}
		// Every replica reaches the store again and renews for three TTLs,
		// giving back what it owes: the fleet is within its budget, and the
		// store counts what the replicas hold.
		for _, m := range ms {
			m.way.cut, m.paused = false, false
		}
		for range 3 * 3 {
			round()
		}
		sum := 0
		for _, m := range ms {
			sum += m.b.Held()
		}
		if sum > cfg.Slots {
			t.Fatalf("settled, the fleet holds %d of %d", sum, cfg.Slots)
		}
		c, held := claims(store, "{db}", clock.Now(), cfg.TTL)
		set := 0
		for _, x := range c {
			set += x
		}
		if held != sum || set > cfg.Slots {
			t.Fatalf("settled, the store counts %d held and %d set aside; the replicas hold %d of %d", held, set, sum, cfg.Slots)
		}
	})
}
