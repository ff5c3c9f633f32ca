package pool_test

import (
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// This file walks the Pool's state space exhaustively, the way a model
// checker does: from an empty pool, every sequence of calls up to a depth,
// for small sizes and each limit on and off. The rapid model test and
// FuzzPool sample sequences at random; the walk leaves none out.
//
// The alphabet at each state is built from what the state holds: Take with
// each class of draws, Unmade, Made of a fresh handle (with and without a
// life extra, extreme ones included) and of each held one, Give and Drop of
// each held resource and of a foreign one (never seen, and one the pool has
// let go of), Evict, Close, Reset, ResetFor with a hold (where the
// configuration has one), Reserve, Unmade of a full backend, a
// reading earlier than the latest, and clock steps that land one before,
// on and one after each resource's Keep and Life edge (and the edges of a
// backoff's hold, of a full backend's room, and of a failover's hold and
// its next make), plus a
// step of one nanosecond and a step of decades. The walk may
// also begin with a stray zero time.Time as the pool's first reading.
//
// Resources are ints, numbered in the order the walk makes them (from 0, the
// zero value a pool must tell from an empty seat). A state is deduplicated by
// a canonical form that names no resource: the idle stack from the top with
// each resource's ages, and the lent ones' ages as a sorted multiset, where
// every age is clamped to one past its limit (past is past) and counters are
// left out (no decision reads them). Two paths to one canonical form lead to
// the same futures, as far as the reference model can tell, so one is
// expanded; every transition is checked, wherever it lands. (What the model
// cannot see, such as which seat of the arena a resource sits in, may differ
// between two paths merged this way; the walk expands the first path found,
// the shortest.)
//
// The pools walked (xConfigs): Size 1, 2, 3 and 0 (no limit), each with
// Idle off and 1, and Keep and Life each off and on; a few behind a ward
// Limiter with a fixed limit, and two behind a ward Backoff.
//
// At every state the walk checks the real Pool against a reference model
// written here from the documentation (xModel: slices and linear scans,
// nothing from the package's internals): every answer (kind, item, idle time,
// guard, what Evict and Close hand back), the full Books, Loans with their
// held times, Next, Holds of every handle the walk has used, the limiter's
// leases, and the Books identities. The Pool cannot be copied through its
// API, so each transition is checked on a pool rebuilt by replaying the path
// to its parent.
//
// Depth. The default depth is chosen so the walk finishes in about a minute
// on two slow cores; it is lower under -race, which scripts/test uses (see
// exhaustiveRaceDepth). Go deeper with
//
//	go test ./pool -run TestExhaustive -exhaustive.depth=9 -v
//
// which logs the distinct states, the transitions and the depth reached for
// every configuration.
//
// The model is in exhaustive_model_test.go, the walker in
// exhaustive_walk_test.go and the checks of each transition in
// exhaustive_check_test.go.

var exhaustiveDepth = flag.Int("exhaustive.depth", 0,
	"depth of TestExhaustivePool's walk (0: the default, lower under -race)")

// Ages of the walk, in nanoseconds: small, so that every edge is a few steps
// away, and different, so that Keep and Life edges are told apart.
const (
	xKeep = 2 * time.Nanosecond
	xLife = 3 * time.Nanosecond
	// xDecades is a clock step of about 36 years, far past any age above.
	// It is taken at most once on a path: a resource with an unbounded
	// extra is documented as never past Life only within the decades the
	// pool's clock spans.
	xDecades = time.Duration(1) << 60
)

// xConfig is one pool the walk explores.
type xConfig struct {
	lim pool.Limits
	// leases is the fixed limit of a ward Limiter in front of the pool
	// (its AIMD bounds all set to it, so the limit never moves); 0 for no
	// ward.
	leases int
	// backoff puts a ward Backoff in front of the pool: rigid waits of
	// xBackoff.Base doubling to its Cap after each failed make.
	backoff bool
	// hold offers ResetFor with xHold in the alphabet.
	hold bool
}

// xBackoff is the policy of the configurations with a backoff: waits of 2ns
// then 4ns (the cap), so that each edge is a step or two away.
var xBackoff = ward.Backoff{Base: 2, Factor: 2, Cap: 4, Attempts: 3}

// xHold is the hold of the configurations with one: five nanoseconds,
// a make every two, so that each edge is a step or two away.
var xHold = pool.Hold{For: 5, Every: 2}

func (c xConfig) String() string {
	s := fmt.Sprintf("size=%d idle=%d keep=%v life=%v", c.lim.Size, c.lim.Idle, c.lim.Keep > 0, c.lim.Life > 0)
	if c.leases > 0 {
		s += fmt.Sprintf(" leases=%d", c.leases)
	}
	if c.backoff {
		s += " backoff"
	}
	if c.hold {
		s += " hold"
	}
	return s
}

// xConfigs is every pool walked: each Size up to 3 (and 0, no limit), Idle
// off and on, Keep and Life each off and on; and a few behind a limiter.
func xConfigs() []xConfig {
	var out []xConfig
	for _, size := range []int{1, 2, 3, 0} {
		for _, idle := range []int{0, 1} {
			for _, ages := range [][2]time.Duration{{0, 0}, {xKeep, 0}, {0, xLife}, {xKeep, xLife}} {
				out = append(out, xConfig{lim: pool.Limits{Size: size, Idle: idle, Keep: ages[0], Life: ages[1]}})
			}
		}
	}
	for _, size := range []int{2, 0} {
		out = append(out, xConfig{lim: pool.Limits{Size: size, Keep: xKeep, Life: xLife}, leases: 1})
	}
	out = append(out, xConfig{lim: pool.Limits{Size: 3, Idle: 1, Keep: xKeep, Life: xLife}, leases: 2})
	for _, size := range []int{2, 0} {
		out = append(out, xConfig{lim: pool.Limits{Size: size, Keep: xKeep}, backoff: true})
	}
	out = append(out, xConfig{lim: pool.Limits{Size: 2}, hold: true},
		xConfig{lim: pool.Limits{Size: 3, Keep: xKeep}, hold: true, backoff: true})
	return out
}

// The default depths keep a plain go test quick: each level deeper costs
// about three times more. The full run (testenv.Full, which ./scripts/test
// asks for) walks two levels deeper: depth 7 without -race took 28 s of
// CPU on a shared two-core machine (698,085 states), depth 6 under -race
// 34 s (231,648 states).
const (
	exhaustiveNormalDepth = 5
	exhaustiveRaceDepth   = 4
)

// TestExhaustivePool walks every configuration of xConfigs to the depth of
// -exhaustive.depth, checks the pool at every transition, and logs the
// distinct states, transitions and depth reached.
func TestExhaustivePool(t *testing.T) {
	depth := *exhaustiveDepth
	if depth <= 0 {
		depth = exhaustiveNormalDepth
		if xRace {
			depth = exhaustiveRaceDepth
		}
		if testenv.Full() {
			depth += 2 // ./scripts/test: 7, or 6 under -race
		}
	}
	start := time.Now()
	total := xStats{reached: map[string]int{}}
	var mu sync.Mutex
	// One subtest per configuration, run in parallel: the walk uses every
	// core the machine gives the test.
	t.Run("walk", func(t *testing.T) {
		for _, c := range xConfigs() {
			t.Run(c.String(), func(t *testing.T) {
				t.Parallel()
				st := walk(t, c, depth)
				t.Logf("%d states, %d transitions, depth %d", st.states, st.transitions, st.depth)
				mu.Lock()
				defer mu.Unlock()
				total.states += st.states
				total.transitions += st.transitions
				total.depth = max(total.depth, st.depth)
				for k, v := range st.reached {
					total.reached[k] += v
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("all %d configurations to depth %d: %d states, %d transitions, deepest new state at depth %d, in %v",
		len(xConfigs()), depth, total.states, total.transitions, total.depth, time.Since(start).Round(time.Millisecond))
	want := []string{
		"Take Ready", "Take Stale", "Take Make", "Take Wait", "Take Wait limiter", "Take Closed", "Take Later backoff",
		"Made fresh true closed=false", "Made fresh false closed=false", "Made fresh false closed=true",
		"Made held true closed=false", "Made held true closed=true",
		"Give held true closed=false", "Give held false closed=false", "Give held false closed=true",
		"Give foreign false closed=false", "Give foreign true closed=false", "Give let go of false closed=false",
		"Drop held true closed=false", "Drop foreign false closed=false",
		"Evict 0", "Evict 1", "Close 1", "Reset 1", "Reserve true", "Reserve false", "Give of one lent before a Reset false", "clock decades", "far first reading",
		"MadeJitter -9223372036854775808", "MadeJitter 9223372036854775807",
		"Unmade full true", "Unmade full false", "Take Wait full",
		"ResetFor hold true", "ResetFor hold false", "Take Wait hold", "Unmade true", "Unmade false",
	}
	if depth >= 5 {
		want = append(want, "Evict 2", "Close 2")
	}
	for _, k := range want {
		if total.reached[k] == 0 {
			t.Errorf("the walk never reached %q", k)
		}
	}
	if t.Failed() {
		t.Logf("reached: %v", total.reached)
	}
}
