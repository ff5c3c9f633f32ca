package trace

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRoutes checks that every committed trace goes only to references that
// can express it, and to at least one.
func TestRoutes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*.steps"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no step files in conformance/testdata (%v)", err)
	}
	for _, file := range files {
		traces, err := ReadSteps(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range traces {
			if len(tr.Compare) == 0 {
				t.Errorf("%s: trace %s is compared with nothing", file, tr.Name)
			}
			for _, ref := range tr.Compare {
				if why := cannot(ref, tr); why != "" {
					t.Errorf("%s: trace %s is compared with %s, which %s", file, tr.Name, ref, why)
				}
			}
		}
	}
}

// cannot says why ref cannot stand for the pool in t, or "".
func cannot(ref string, t Trace) string {
	has := func(v Verb) bool {
		for _, s := range t.Steps {
			if s.Verb == v {
				return true
			}
		}
		return false
	}
	switch ref {
	case SQLAlchemy:
		switch {
		case t.Policy.Idle > 0:
			return "is run with no idle ceiling (pool_size is its ceiling on live connections)"
		case t.Policy.Age == IdleAge:
			return "has no idle age"
		case has(Evict):
			return "has no evictor"
		case has(Drop) && !strings.HasPrefix(t.Name, "plan-"):
			return "keeps an empty record for a dropped connection (only the plans drop with nothing idle below)"
		}
	case GenericPool:
		switch {
		case t.Policy.Idle > 0:
			return "has no idle ceiling"
		case t.Policy.Age == LifeAge && has(Evict):
			return "evicts by idle time only (its lifetime is a validate at a borrow)"
		}
	case CommonsPool:
		if t.Policy.Age == LifeAge {
			return "has no lifetime (its evictor knows idle time only)"
		}
	default:
		return "is not a reference"
	}
	return ""
}

// TestCannot pins which traces each reference can stand for: generic-pool
// takes a lifetime (a validate at a borrow) but not with an evict, whose
// evictor knows idle time only; SQLAlchemy takes no idle age and no evict;
// Commons Pool takes no lifetime; only Commons Pool takes an idle ceiling.
func TestCannot(t *testing.T) {
	life := Trace{Name: "t", Policy: Policy{Size: 1, Age: LifeAge, AgeMS: 10}, Steps: []Step{{Verb: Take, Seat: 1}}}
	lifeEvict := life
	lifeEvict.Steps = append([]Step{{Verb: Evict}}, life.Steps...)
	idle := life
	idle.Policy.Age = IdleAge
	idleEvict := lifeEvict
	idleEvict.Policy.Age = IdleAge
	ceiling := Trace{Name: "t", Policy: Policy{Size: 2, Idle: 1}, Steps: []Step{{Verb: Take, Seat: 1}}}
	for _, c := range []struct {
		ref  string
		tr   Trace
		want bool
	}{
		{GenericPool, life, true},
		{GenericPool, lifeEvict, false},
		{GenericPool, idle, true},
		{SQLAlchemy, life, true},
		{SQLAlchemy, lifeEvict, false},
		{SQLAlchemy, idle, false},
		{CommonsPool, life, false},
		{CommonsPool, idle, true},
		{CommonsPool, idleEvict, true},
		{CommonsPool, ceiling, true},
		{GenericPool, ceiling, false},
		{SQLAlchemy, ceiling, false},
		{Wardpool, life, false},
	} {
		if got := cannot(c.ref, c.tr) == ""; got != c.want {
			t.Errorf("%s with age %v and %d steps: can %v, want %v (%q)", c.ref, c.tr.Policy.Age, len(c.tr.Steps), got, c.want, cannot(c.ref, c.tr))
		}
	}
}
