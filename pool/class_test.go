package pool

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
	"pgregory.net/rapid"
)

// The classes of the proof: interactive has 2 of 8 reserved, batch
// none and no ceiling of its own.
const (
	interactive = 0
	batch       = 1
)

// fataler is what the helpers here need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func classPool(t fataler, size int, cs ...Class) *Pool[*conn] {
	t.Helper()
	p, err := New[*conn](Limits{Size: size, Idle: size}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetClasses(cs); err != nil {
		t.Fatal(err)
	}
	return p
}

func proofClasses() []Class {
	return []Class{{Name: "interactive", Reserve: 2}, {Name: "batch"}}
}

// takeMade takes for class c and makes what the pool says to make.
func takeMade(t *testing.T, p *Pool[*conn], now time.Time, c int, next *int) (*conn, Taken[*conn]) {
	t.Helper()
	tk := p.TakeAs(now, 0, 0, c)
	switch tk.Kind {
	case Ready:
		return tk.Item, tk
	case Make:
		*next++
		x := &conn{*next}
		if !p.MadeAs(x, tk.Gen, c, now, 0) {
			t.Fatalf("MadeAs refused %v", x)
		}
		return x, tk
	}
	return nil, tk
}

func TestValidateClasses(t *testing.T) {
	for _, tc := range []struct {
		cs   []Class
		size int
		want string // in the error; "" for none
	}{
		{proofClasses(), 8, ""},
		{[]Class{{Name: "a", Reserve: 8}}, 0, ""},
		{[]Class{{Name: ""}}, 8, "class 0 has no name"},
		{[]Class{{Name: "a"}, {Name: "a"}}, 8, `class "a" is named twice`},
		{[]Class{{Name: "a", Reserve: -1}}, 8, `class "a": Reserve is -1`},
		{[]Class{{Name: "a", Ceiling: -1}}, 8, `class "a": Ceiling is -1`},
		{[]Class{{Name: "a", Reserve: 3, Ceiling: 2}}, 8, `class "a": Reserve 3 is above its Ceiling 2`},
		{[]Class{{Name: "a", Reserve: 9}}, 8, `class "a": Reserve 9 is above Size 8`},
		{[]Class{{Name: "a", Reserve: 5}, {Name: "b", Reserve: 4}}, 8, `class "b": the reserves add up to 9`},
	} {
		err := ValidateClasses(tc.cs, tc.size)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.cs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrClasses)):
			t.Errorf("%v: error %v, want one wrapping ErrClasses with %q", tc.cs, err, tc.want)
		}
		p := mustNew(t, Limits{Size: tc.size})
		if err2 := p.SetClasses(tc.cs); (err2 == nil) != (err == nil) {
			t.Errorf("%v: SetClasses %v, Validate %v", tc.cs, err2, err)
		}
	}
}

func TestSetClassesRefusedWhileBusy(t *testing.T) {
	p := mustNew(t, Limits{Size: 8})
	if tk := p.Take(at(0), 0, 0); tk.Kind != Make {
		t.Fatal(tk.Kind)
	}
	if err := p.SetClasses(proofClasses()); !errors.Is(err, ErrClasses) {
		t.Fatalf("SetClasses while making: %v", err)
	}
}

// While interactive is present, batch is held to Size less its reserve;
// interactive still gets its 2.
func TestClassReserveHeldWhilePresent(t *testing.T) {
	p := classPool(t, 8, proofClasses()...)
	n := 0
	takeMade(t, p, at(0), interactive, &n) // interactive asks: present
	var batchLoans []*conn
	for i := range 7 {
		x, tk := takeMade(t, p, at(1), batch, &n)
		if i < 6 && x == nil {
			t.Fatalf("batch take %d: %v", i, tk.Kind)
		}
		if i >= 6 {
			if tk.Kind != Wait || tk.Guard != ward.GuardClass {
				t.Fatalf("batch take %d: %v (%v), want Wait (class)", i, tk.Kind, tk.Guard)
			}
			continue
		}
		batchLoans = append(batchLoans, x)
	}
	// Interactive holds 1 and has 1 more of its reserve, which batch left.
	if x, tk := takeMade(t, p, at(2), interactive, &n); x == nil {
		t.Fatalf("interactive's second: %v", tk.Kind)
	}
	b := p.ClassBooks()
	if b[interactive].Held != 2 || b[batch].Held != 6 || b[2].Held != 0 {
		t.Fatalf("class books %+v", b)
	}
	// A batch loan back: interactive may borrow beyond its reserve (its
	// ceiling is Size), and batch may take it back in its turn.
	p.Give(batchLoans[0], at(3))
	if x, tk := takeMade(t, p, at(3), interactive, &n); x != batchLoans[0] {
		t.Fatalf("interactive's third: %v %v", x, tk.Kind)
	}
	if _, tk := takeMade(t, p, at(3), interactive, &n); tk.Kind != Wait || tk.Guard != ward.GuardNone {
		t.Fatalf("on a full pool: %v %v", tk.Kind, tk.Guard)
	}
	checkClassBooks(t, p)
}

// An absent class lends its reserve: batch takes all 8 once interactive
// has not asked for Lend; when interactive asks again, the next resource
// that frees is its, ahead of an older batch waiter.
func TestClassReserveLentAndComesBack(t *testing.T) {
	p := classPool(t, 8, proofClasses()...)
	n := 0
	x, _ := takeMade(t, p, at(0), interactive, &n)
	p.Give(x, at(1))
	tk := Taken[*conn]{}
	var loans []*conn
	for range 6 {
		var l *conn
		l, tk = takeMade(t, p, at(10), batch, &n)
		loans = append(loans, l)
	}
	if _, tk = takeMade(t, p, at(10), batch, &n); tk.Kind != Wait || tk.Guard != ward.GuardClass {
		t.Fatalf("7th batch while interactive present: %v", tk.Kind)
	}
	if tk.Delay != 990*time.Millisecond {
		t.Fatalf("Delay %v, want 990ms: until interactive's ask at 0 is a second old", tk.Delay)
	}
	// A second after interactive's ask: lent.
	for i := range 2 {
		l, tk := takeMade(t, p, at(1000), batch, &n)
		if l == nil {
			t.Fatalf("batch %d after Lend: %v", 7+i, tk.Kind)
		}
		loans = append(loans, l)
	}
	if b := p.Books(); b.Busy != 8 {
		t.Fatalf("busy %d, want 8", b.Busy)
	}
	// Interactive returns: it waits (full), and a batch waiter older than it.
	if _, tk := takeMade(t, p, at(1100), interactive, &n); tk.Kind != Wait {
		t.Fatalf("interactive on a full pool: %v", tk.Kind)
	}
	fronts := []Front{{Class: batch, Since: at(1050)}, {Class: interactive, Since: at(1100)}}
	if i, _ := p.Serve(at(1150), fronts); i != 1 {
		t.Fatalf("Serve on a full pool: %d, want interactive (1), below its reserve", i)
	}
	if _, tk := takeMade(t, p, at(1150), interactive, &n); tk.Kind != Wait || tk.Guard != ward.GuardNone {
		t.Fatalf("interactive on a full pool: %v %v", tk.Kind, tk.Guard)
	}
	p.Give(loans[0], at(1200))
	if i, _ := p.Serve(at(1200), fronts); i != 1 {
		t.Fatalf("Serve after a return: %d, want interactive (1)", i)
	}
	if _, tk := takeMade(t, p, at(1200), batch, &n); tk.Kind != Wait || tk.Guard != ward.GuardClass {
		t.Fatalf("batch took interactive's returning reserve: %v", tk.Kind)
	}
	if l, tk := takeMade(t, p, at(1200), interactive, &n); l != loans[0] {
		t.Fatalf("interactive got %v (%v), want %v", l, tk.Kind, loans[0])
	}
	checkClassBooks(t, p)
}

func TestClassCeiling(t *testing.T) {
	p := classPool(t, 8, Class{Name: "interactive", Reserve: 2}, Class{Name: "batch", Ceiling: 3})
	n := 0
	for i := range 4 {
		l, tk := takeMade(t, p, at(5000), batch, &n)
		if (l != nil) != (i < 3) {
			t.Fatalf("batch %d: %v", i, tk.Kind)
		}
		if i == 3 && (tk.Guard != ward.GuardClass || tk.Delay != 0) {
			t.Fatalf("batch at its ceiling: %v %v", tk.Guard, tk.Delay)
		}
	}
	// The default class is not held by batch's ceiling.
	if tk := p.Take(at(5000), 0, 0); tk.Kind != Make {
		t.Fatalf("default class: %v", tk.Kind)
	}
	fronts := []Front{{Class: batch, Since: at(1)}, {Class: 5, Since: at(2)}}
	if i, _ := p.Serve(at(5000), fronts); i != 1 {
		t.Fatalf("Serve chose %d, want the default class past batch at its ceiling", i)
	}
}

func TestClassNeverLent(t *testing.T) {
	p := classPool(t, 4, Class{Name: "a", Reserve: 2, Lend: -1}, Class{Name: "b"})
	n := 0
	for i := range 3 {
		l, tk := takeMade(t, p, at(i*100000), 1, &n)
		if (l != nil) != (i < 2) {
			t.Fatalf("b %d: %v", i, tk.Kind)
		}
	}
}

// Without classes TakeAs and Serve are Take and first come first served.
func TestTakeAsWithoutClasses(t *testing.T) {
	p := mustNew(t, Limits{Size: 1})
	if tk := p.TakeAs(at(0), 0, 0, 3); tk.Kind != Make {
		t.Fatal(tk.Kind)
	}
	if i, d := p.Serve(at(0), []Front{{Class: 1, Since: at(5)}, {Class: 0, Since: at(3)}}); i != 1 || d != 0 {
		t.Fatal(i, d)
	}
	if p.ClassBooks() != nil || p.Classes() != nil {
		t.Fatal("class books without classes")
	}
}

// checkClassBooks checks that the classes' books add up to the pool's.
func checkClassBooks(t fataler, p *Pool[*conn]) {
	t.Helper()
	b := p.Books()
	held, making := 0, 0
	for _, c := range p.ClassBooks() {
		if c.Held != c.Lent+c.Making || c.Lent < 0 || c.Making < 0 {
			t.Fatalf("class %q: %+v", c.Name, c)
		}
		held += c.Held
		making += c.Making
	}
	if held != b.Busy || making != p.making {
		t.Fatalf("classes hold %d (%d making), the pool %d busy (%d making)", held, making, b.Busy, p.making)
	}
}

// TestClassProperties drives a pool with classes through random calls and
// holds the rule against a model of presence kept here: ceilings never
// exceeded; a present class's unused reserve never taken by another; an
// absent class's reserve lent; a class below its reserve served first;
// the classes' books adding up to the pool's.
func TestClassProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(1, 6).Draw(rt, "size")
		nc := rapid.IntRange(1, 3).Draw(rt, "classes")
		var cs []Class
		left := size
		for i := range nc {
			r := rapid.IntRange(0, left).Draw(rt, "reserve")
			left -= r
			ceil := rapid.SampledFrom([]int{0, max(r, 1), size}).Draw(rt, "ceiling")
			if ceil > 0 && ceil < r {
				ceil = r
			}
			lend := rapid.SampledFrom([]time.Duration{0, 10 * time.Millisecond, -1}).Draw(rt, "lend")
			cs = append(cs, Class{Name: string(rune('a' + i)), Reserve: r, Ceiling: ceil, Lend: lend})
		}
		p := classPool(rt, size, cs...)
		all := nc + 1 // with the default class
		def := nc
		asked := make([]time.Time, all)
		seen := make([]bool, all)
		lentTo := map[*conn]int{}
		making := make([]int, all)
		held := func(c int) int {
			h := making[c]
			for _, k := range lentTo {
				if k == c {
					h++
				}
			}
			return h
		}
		present := func(c int, now time.Time) bool {
			if c == def {
				return false
			}
			lend := cs[c].Lend
			if lend == 0 {
				lend = DefaultLend
			}
			return held(c) > 0 || lend < 0 || seen[c] && now.Sub(asked[c]) < lend
		}
		room := func(c int, now time.Time) (need int) {
			for j := range nc {
				if j != c && present(j, now) {
					need += max(0, cs[j].Reserve-held(j))
				}
			}
			return need
		}
		ceiling := func(c int) int {
			if c == def || cs[c].Ceiling == 0 {
				return size
			}
			return cs[c].Ceiling
		}
		reserve := func(c int) int {
			if c == def {
				return 0
			}
			return cs[c].Reserve
		}
		now := at(0)
		n := 0
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "ms")) * time.Millisecond)
			busy := p.Books().Busy
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0: // take
				c := rapid.IntRange(0, nc).Draw(rt, "class")
				need := room(c, now) // before the ask: c's own ask does not count for others
				tk := p.TakeAs(now, 0, 0, c)
				asked[c], seen[c] = now, true
				switch tk.Kind {
				case Ready, Make:
					if held(c)+1 > ceiling(c) {
						rt.Fatalf("class %d past its ceiling %d", c, ceiling(c))
					}
					if size-(busy+1) < need {
						rt.Fatalf("class %d took into reserves: size %d, busy %d after, %d reserved for others", c, size, busy+1, need)
					}
					if tk.Kind == Ready {
						lentTo[tk.Item] = c
					} else if rapid.Bool().Draw(rt, "made") {
						n++
						x := &conn{n}
						if !p.MadeAs(x, tk.Gen, c, now, 0) {
							rt.Fatal("MadeAs refused")
						}
						lentTo[x] = c
					} else {
						p.UnmadeAs(now, 0, ward.GuardNone, c)
					}
				case Wait:
					if tk.Guard == ward.GuardClass {
						if held(c) < ceiling(c) && size-(busy+1) >= need && busy < size {
							rt.Fatalf("class %d held back with room: busy %d of %d, %d reserved for others, held %d of %d", c, busy, size, need, held(c), ceiling(c))
						}
					} else if busy < size {
						rt.Fatalf("Wait (%v) with room: busy %d of %d", tk.Guard, busy, size)
					}
				default:
					rt.Fatalf("answer %v", tk.Kind)
				}
			case 1, 2: // give back, or drop
				if len(lentTo) == 0 {
					continue
				}
				var items []*conn
				for x := range lentTo {
					items = append(items, x)
				}
				// The map's order is random: pick by number for a
				// reproducible run.
				slices.SortFunc(items, func(a, b *conn) int { return a.n - b.n })
				x := rapid.SampledFrom(items).Draw(rt, "item")
				delete(lentTo, x)
				if rapid.Bool().Draw(rt, "drop") {
					p.Drop(x, now)
				} else {
					p.Give(x, now)
				}
			case 3: // serve
				var fronts []Front
				for c := range all {
					if rapid.Bool().Draw(rt, "front") {
						fronts = append(fronts, Front{Class: c, Since: now.Add(-time.Duration(rapid.IntRange(0, 50).Draw(rt, "age")) * time.Millisecond)})
					}
				}
				for _, f := range fronts {
					asked[f.Class], seen[f.Class] = now, true
				}
				i, _ := p.Serve(now, fronts)
				if i < 0 {
					for _, f := range fronts {
						if held(f.Class) < ceiling(f.Class) && busy < size && size-(busy+1) >= room(f.Class, now) {
							rt.Fatalf("Serve chose none; class %d may take", f.Class)
						}
					}
					continue
				}
				c := fronts[i].Class
				if held(c) >= reserve(c) {
					for _, f := range fronts {
						if held(f.Class) < reserve(f.Class) && busy < size && size-(busy+1) >= room(f.Class, now) && held(f.Class) < ceiling(f.Class) {
							rt.Fatalf("Serve chose class %d (at its reserve) over class %d below its reserve", c, f.Class)
						}
					}
				}
			case 4: // a class absent for long
				now = now.Add(DefaultLend)
			}
			for c, b := range p.ClassBooks() {
				if b.Held != held(c) {
					rt.Fatalf("class %d: books hold %d, the model %d", c, b.Held, held(c))
				}
				if b.Held > ceiling(c) {
					rt.Fatalf("class %d holds %d, above its ceiling %d", c, b.Held, ceiling(c))
				}
			}
			checkClassBooks(rt, p)
		}
	})
}

func TestSetLimitsKeepsReservesWithinSize(t *testing.T) {
	p := classPool(t, 8, proofClasses()...)
	if _, err := p.SetLimits(Limits{Size: 1}, at(0)); !errors.Is(err, ErrClasses) || !strings.Contains(err.Error(), `"interactive"`) {
		t.Fatalf("Size 1 under a reserve of 2: %v", err)
	}
	if _, err := p.SetLimits(Limits{Size: 2}, at(0)); err != nil {
		t.Fatal(err)
	}
}
