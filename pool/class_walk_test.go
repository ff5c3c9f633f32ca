package pool

import (
	"fmt"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

// TestClassWalk walks every state a small pool with classes can reach
// (Size 4; a: 2 reserved; b: at most 3; the default class), breadth
// first, by every call from each state: a take of each class (its Make
// made at once, or failed), a loan of each class given back or dropped,
// a Serve of every set of fronts, and a Lend passing. In every state
// reached it holds the rule against the walk's own reckoning: ceilings
// never exceeded; a take never leaves less room than the present
// classes' unused reserves; a take held back only when one of those
// holds; a class below its reserve chosen by Serve first; the classes'
// books adding up to the pool's.
func TestClassWalk(t *testing.T) {
	cs := []Class{{Name: "a", Reserve: 2}, {Name: "b", Ceiling: 3}}
	const size = 4
	const all = 3 // with the default class
	ceiling := [all]int{size, 3, size}
	reserve := [all]int{2, 0, 0}

	// A state is reached by a path of calls from a fresh pool; the walk
	// replays the path to stand in it. A call: 'T'+class (take, made),
	// 'F'+class (take, failed make), 'G'+class / 'D'+class (give / drop
	// the class's oldest loan), 'S'+mask (Serve those fronts), 'L' (a
	// Lend passes).
	type call struct {
		op byte
		c  int
	}
	type world struct {
		p     *Pool[*conn]
		now   time.Time
		loans [all][]*conn
		asked [all]bool // asked since the last Lend passed
		n     int
	}
	held := func(w *world, c int) int { return len(w.loans[c]) }
	present := func(w *world, c int) bool { return held(w, c) > 0 || w.asked[c] }
	need := func(w *world, c int) int {
		n := 0
		for j := range 2 {
			if j != c && present(w, j) {
				n += max(0, reserve[j]-held(w, j))
			}
		}
		return n
	}
	mayTake := func(w *world, c int) bool {
		busy := w.p.Books().Busy
		// A class without a ceiling of its own is held to Size by the
		// pool's own Wait; on a full pool the rule holds nobody back.
		own := c == 1
		return (!own || held(w, c) < ceiling[c]) && (busy >= size || size-busy-1 >= need(w, c))
	}
	var fail func(path []call, format string, args ...any)
	apply := func(w *world, k call, path []call) {
		c := k.c
		switch k.op {
		case 'T', 'F':
			want := mayTake(w, c)
			busy := w.p.Books().Busy
			needBefore := need(w, c)
			tk := w.p.TakeAs(w.now, 0, 0, c)
			w.asked[c] = true
			switch tk.Kind {
			case Ready, Make:
				if !want || held(w, c)+1 > ceiling[c] || busy+1 > size || size-busy-1 < needBefore {
					fail(path, "class %d took (%v) against the rule: held %d, busy %d, reserved for others %d", c, tk.Kind, held(w, c), busy, needBefore)
				}
				x := tk.Item
				if tk.Kind == Make {
					if k.op == 'F' {
						w.p.UnmadeAs(w.now, 0, ward.GuardNone, c)
						return
					}
					w.n++
					x = &conn{w.n}
					if !w.p.MadeAs(x, tk.Gen, c, w.now, 0) {
						fail(path, "MadeAs refused")
					}
				}
				w.loans[c] = append(w.loans[c], x)
			case Wait:
				if tk.Guard == ward.GuardClass && want && busy < size {
					fail(path, "class %d held back with room: held %d, busy %d, reserved for others %d", c, held(w, c), busy, needBefore)
				}
				if tk.Guard != ward.GuardClass && busy < size {
					fail(path, "class %d: Wait (%v) with room", c, tk.Guard)
				}
			}
		case 'G', 'D':
			if len(w.loans[c]) == 0 {
				return
			}
			x := w.loans[c][0]
			w.loans[c] = w.loans[c][1:]
			if k.op == 'G' {
				w.p.Give(x, w.now)
			} else {
				w.p.Drop(x, w.now)
			}
		case 'S':
			var fronts []Front
			for j := range all {
				if k.c&(1<<j) != 0 {
					fronts = append(fronts, Front{Class: j, Since: w.now.Add(-time.Duration(j) * time.Millisecond)})
					w.asked[j] = true
				}
			}
			i, _ := w.p.Serve(w.now, fronts)
			if i < 0 {
				for _, f := range fronts {
					if mayTake(w, f.Class) {
						fail(path, "Serve chose none, class %d may take", f.Class)
					}
				}
				return
			}
			if ch := fronts[i].Class; !mayTake(w, ch) {
				fail(path, "Serve chose class %d, which may not take", ch)
			} else if held(w, ch) >= reserve[ch] {
				for _, f := range fronts {
					if held(w, f.Class) < reserve[f.Class] && mayTake(w, f.Class) {
						fail(path, "Serve chose class %d over class %d below its reserve", ch, f.Class)
					}
				}
			}
		case 'L':
			w.now = w.now.Add(DefaultLend)
			w.asked = [all]bool{}
			w.p.Evict(w.now) // the pool sees the time: its books' Present is at its latest instant
		}
		b := w.p.ClassBooks()
		sum := 0
		for j := range all {
			if b[j].Held != held(w, j) || b[j].Held > ceiling[j] || b[j].Present != present(w, j) {
				fail(path, "class %d: books %+v, the walk holds %d (present %v)", j, b[j], held(w, j), present(w, j))
			}
			sum += b[j].Held
		}
		if sum != w.p.Books().Busy {
			fail(path, "the classes hold %d, the pool %d busy", sum, w.p.Books().Busy)
		}
	}
	fail = func(path []call, format string, args ...any) {
		t.Helper()
		t.Fatalf("after %v: %s", path, fmt.Sprintf(format, args...))
	}
	replay := func(path []call) *world {
		w := &world{p: classPool(t, size, cs...), now: at(0)}
		for i, k := range path {
			apply(w, k, path[:i+1])
		}
		return w
	}
	key := func(w *world) string {
		return fmt.Sprint(held(w, 0), held(w, 1), held(w, 2), w.asked, w.p.Books().Idle)
	}
	var calls []call
	for c := range all {
		for _, op := range []byte{'T', 'F', 'G', 'D'} {
			calls = append(calls, call{op, c})
		}
	}
	for mask := 1; mask < 1<<all; mask++ {
		calls = append(calls, call{'S', mask})
	}
	calls = append(calls, call{'L', 0})

	seen := map[string]bool{}
	queue := [][]call{nil}
	seen[key(replay(nil))] = true
	edges := 0
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		for _, k := range calls {
			next := append(path[:len(path):len(path)], k)
			w := replay(next)
			edges++
			if kk := key(w); !seen[kk] {
				seen[kk] = true
				queue = append(queue, next)
			}
		}
	}
	t.Logf("%d states, %d calls walked", len(seen), edges)
	if len(seen) < 100 {
		t.Fatalf("only %d states reached", len(seen))
	}
}
