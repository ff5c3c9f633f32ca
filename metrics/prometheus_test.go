package metrics

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// want is one expected series: its name after the prefix, its type, and
// its samples (label text, value) in exposition order.
type want struct {
	name    string
	typ     string
	samples [][2]string
}

// wantAll lists what the Collector must export for st, written out here
// rather than derived from the package's table, so a renamed, retyped or
// miswired series fails the test. runtime false leaves out the Keeper's own
// series, as for FromBooks.
func wantAll(st wardpool.Stats, runtime bool) []want {
	n := func(v any) [][2]string { return [][2]string{{"", fmt.Sprint(v)}} }
	stalled, holding := 0, 0
	if st.Stalled {
		stalled = 1
	}
	if st.Holding {
		holding = 1
	}
	w := []want{
		{"live_resources", "gauge", n(st.Live)},
		{"idle_resources", "gauge", n(st.Idle)},
		{"busy_resources", "gauge", n(st.Busy)},
		{"made_total", "counter", n(st.Made)},
		{"make_failures_total", "counter", n(st.Failed)},
		{"loans_total", "counter", n(st.Loans)},
		{"reused_loans_total", "counter", n(st.Reused)},
		{"dropped_total", "counter", n(st.Dropped)},
		{"waited_total", "counter", n(st.Waited)},
		{"deferred_total", "counter", n(st.Deferred)},
		{"shed_total", "counter", n(st.Shed)},
		{"retired_total", "counter", [][2]string{
			{`reason="idle"`, fmt.Sprint(st.IdleRetired)},
			{`reason="life"`, fmt.Sprint(st.LifeRetired)},
			{`reason="other"`, fmt.Sprint(st.Retired - st.IdleRetired - st.LifeRetired)},
		}},
	}
	if runtime {
		w = append(w,
			want{"waiting_acquires", "gauge", n(st.Waiting)},
			want{"dialing_resources", "gauge", n(st.Dialing)},
			want{"acquires_total", "counter", n(st.Acquires)},
			want{"acquire_wait_seconds_total", "counter", n(st.AcquireWait.Seconds())},
			want{"empty_acquires_total", "counter", n(st.EmptyAcquires)},
			want{"canceled_acquires_total", "counter", n(st.Canceled)},
			want{"checks_total", "counter", n(st.Checks)},
			want{"check_failures_total", "counter", n(st.CheckFailures)},
			want{"leaks_total", "counter", n(st.Leaks)},
			want{"double_releases_total", "counter", n(st.DoubleReleases)},
			want{"panics_total", "counter", n(st.Panics)},
			want{"closing_resources", "gauge", n(st.Closing)},
			want{"closed_total", "counter", n(st.Closed)},
			want{"dial_timeouts_total", "counter", n(st.DialTimeouts)},
			want{"acquire_timeouts_total", "counter", n(st.AcquireTimeouts)},
			want{"stalls_total", "counter", n(st.Stalls)},
			want{"rotating_resources", "gauge", n(st.Rotating)},
			want{"holding", "gauge", n(holding)},
			want{"stalled", "gauge", n(stalled)},
			// A known label value starts at 0: no reset yet in these readings.
			want{"resets_total", "counter", [][2]string{{`cause="manual"`, "0"}}},
			want{"breaker_refusal_ratio", "gauge", n(st.Refusal)},
		)
	}
	return w
}

// helpOf returns the help text the package gives the series named name.
func helpOf(t *testing.T, name string) string {
	t.Helper()
	for _, s := range append([]series{retired, resets, maxResources, maxIdle, leaked}, table...) {
		if s.prom == name {
			return s.help
		}
	}
	t.Fatalf("no series %q", name)
	return ""
}

// exposition writes ws as the text format, each series named prefix_name
// and every sample carrying labels (already formatted, e.g. `pool="a"`).
func exposition(t *testing.T, prefix, labels string, ws []want) (text string, names []string) {
	t.Helper()
	var b strings.Builder
	for _, w := range ws {
		full := prefix + "_" + w.name
		names = append(names, full)
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", full, helpOf(t, w.name), full, w.typ)
		for _, s := range w.samples {
			ls := s[0]
			if labels != "" {
				if ls != "" {
					// In the order the exposition gives them: by name.
					all := append(strings.Split(labels, ","), ls)
					sort.Strings(all)
					ls = strings.Join(all, ",")
				} else {
					ls = labels
				}
			}
			if ls != "" {
				ls = "{" + ls + "}"
			}
			fmt.Fprintf(&b, "%s%s %s\n", full, ls, s[1])
		}
	}
	return b.String(), names
}

func TestCollectorExportsEveryFigure(t *testing.T) {
	st := sampleStats()
	src := &fixed{st: st}
	c := NewCollector(src, Options{})
	text, names := exposition(t, "wardpool", "", wantAll(st, true))
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(c); got != len(names)+2 { // retired has three samples
		t.Errorf("collected %d samples, want %d", got, len(names)+2)
	}
}

func TestCollectorNamesAndLabels(t *testing.T) {
	st := sampleStats()
	c := NewCollector(&fixed{st: st}, Options{
		Namespace: "shop",
		Subsystem: "orders",
		Labels:    map[string]string{"pool": "primary", "az": "b"},
	})
	text, _ := exposition(t, "shop_orders", `az="b",pool="primary"`, wantAll(st, true))
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	// A subsystem alone keeps the default namespace.
	c = NewCollector(&fixed{st: st}, Options{Subsystem: "cache"})
	text, _ = exposition(t, "wardpool_cache", "", wantAll(st, true))
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorLint(t *testing.T) {
	src := fixedLimits{&fixed{st: sampleStats()}, pool.Limits{Size: 10, Idle: 5}}
	problems, err := testutil.CollectAndLint(NewCollector(src, Options{Labels: map[string]string{"pool": "a"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestCollectorOneReadingPerScrape(t *testing.T) {
	src := &fixed{st: sampleStats()}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(src, Options{}))
	for i := 1; i <= 3; i++ {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
		if got := src.reads.Load(); got != int64(i) {
			t.Fatalf("after %d scrapes the source was read %d times", i, got)
		}
	}
}

func TestCollectorReadsEachScrapeAfresh(t *testing.T) {
	src := &fixed{st: sampleStats()}
	c := NewCollector(src, Options{})
	st := sampleStats()
	st.Live, st.Idle, st.Made, st.AcquireWait = 1, 1, 1000, 90*time.Second
	src.set(st)
	text, _ := exposition(t, "wardpool", "", wantAll(st, true))
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorRetiredReasons(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		retired, idle, life      uint64
		wantIdle, wantLife, want uint64
	}{
		{"none", 0, 0, 0, 0, 0, 0},
		{"all other", 5, 0, 0, 0, 0, 5},
		{"mixed", 10, 3, 2, 3, 2, 5},
		{"only ages", 4, 1, 3, 1, 3, 0},
		// Books that do not add up must not wrap around to 2^64.
		{"broken books", 1, 2, 2, 2, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := wardpool.Stats{Books: pool.Books{Retired: tc.retired, IdleRetired: tc.idle, LifeRetired: tc.life}}
			text, _ := exposition(t, "wardpool", "", []want{{"retired_total", "counter", [][2]string{
				{`reason="idle"`, fmt.Sprint(tc.wantIdle)},
				{`reason="life"`, fmt.Sprint(tc.wantLife)},
				{`reason="other"`, fmt.Sprint(tc.want)},
			}}})
			c := NewCollector(&fixed{st: st}, Options{})
			if err := testutil.CollectAndCompare(c, strings.NewReader(text), "wardpool_retired_total"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCollectorLimits(t *testing.T) {
	st := sampleStats()
	for _, tc := range []struct {
		name   string
		limits pool.Limits
		want   []want
	}{
		{"both", pool.Limits{Size: 12, Idle: 6}, []want{
			{"max_resources", "gauge", [][2]string{{"", "12"}}},
			{"max_idle_resources", "gauge", [][2]string{{"", "6"}}},
		}},
		{"size only", pool.Limits{Size: 3}, []want{
			{"max_resources", "gauge", [][2]string{{"", "3"}}},
		}},
		{"none", pool.Limits{Keep: time.Minute}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(fixedLimits{&fixed{st: st}, tc.limits}, Options{Labels: map[string]string{"pool": "x"}})
			ws := append(wantAll(st, true), tc.want...)
			text, _ := exposition(t, "wardpool", `pool="x"`, ws)
			if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(c); err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A Source without Limits exports none.
	c := NewCollector(&fixed{st: st}, Options{})
	if n := testutil.CollectAndCount(c, "wardpool_max_resources", "wardpool_max_idle_resources"); n != 0 {
		t.Errorf("a Source without Limits exported %d limit samples", n)
	}
}

func TestCollectorFromBooks(t *testing.T) {
	// A real state machine, driven by hand: three made, two reused, one
	// past Keep, one dropped, one told to wait.
	p, err := pool.New[int](pool.Limits{Size: 3, Idle: 3, Keep: time.Minute}, ward.Ward{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		if k := p.Take(now, 0, 0).Kind; k != pool.Make {
			t.Fatalf("Take %d: %v", i, k)
		}
		p.Made(i, 0, now, 0)
	}
	if k := p.Take(now, 0, 0).Kind; k != pool.Wait {
		t.Fatalf("full pool answered %v", k)
	}
	p.Give(1, now)
	p.Give(2, now)
	p.Drop(3, now)
	later := now.Add(30 * time.Second)
	for range 2 {
		tk := p.Take(later, 0, 0)
		p.Give(tk.Item, later)
	}
	p.Evict(later.Add(2 * time.Minute))

	var mu sync.Mutex
	src := FromBooks(func() pool.Books { mu.Lock(); defer mu.Unlock(); return p.Books() })
	c := NewCollector(src, Options{Labels: map[string]string{"pool": "sim"}})
	b := p.Books()
	if b.Made != 3 || b.Reused != 2 || b.Dropped != 1 || b.IdleRetired != 2 || b.Waited != 1 {
		t.Fatalf("the scenario did not go as planned: %+v", b)
	}
	text, _ := exposition(t, "wardpool", `pool="sim"`, wantAll(wardpool.Stats{Books: b}, false))
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "wardpool_acquires_total", "wardpool_waiting_acquires"); n != 0 {
		t.Errorf("FromBooks exported %d runtime samples, want none", n)
	}
}

func TestCollectorKeeper(t *testing.T) {
	clk := clocktest.New(clockStart)
	k := newKeeper(t, clk, pool.Limits{Size: 4, Idle: 2}, 0, nil)
	ctx := context.Background()
	var loans []wardpool.Loan[*conn]
	for range 3 {
		l, err := k.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		loans = append(loans, l)
	}
	loans[0].Release()
	loans[1].Destroy()
	loans[1].Release() // a double release, counted
	l, err := k.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	for deadline := time.Now().Add(10 * time.Second); k.Stats().Closing > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the Keeper's background closes did not finish")
		}
		runtime.Gosched() // closing runs in the background
	}

	c := NewCollector(k, Options{Labels: map[string]string{"pool": "k"}})
	st := k.Stats()
	if st.Made != 3 || st.Reused != 1 || st.Dropped != 1 || st.DoubleReleases != 1 || st.Acquires != 4 || st.Busy != 1 {
		t.Fatalf("the scenario did not go as planned: %+v", st)
	}
	ws := append(wantAll(st, true),
		want{"max_resources", "gauge", [][2]string{{"", "4"}}},
		want{"max_idle_resources", "gauge", [][2]string{{"", "2"}}},
		want{"leaked_loans", "gauge", [][2]string{{"", "0"}}})
	text, _ := exposition(t, "wardpool", `pool="k"`, ws)
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	loans[2].Release()
}

func TestCollectorTwoPoolsOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a, b := sampleStats(), sampleStats()
	b.Live = 1
	reg.MustRegister(NewCollector(&fixed{st: a}, Options{Labels: map[string]string{"pool": "a"}}))
	reg.MustRegister(NewCollector(&fixed{st: b}, Options{Labels: map[string]string{"pool": "b"}}))
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wardpool_live_resources" {
			continue
		}
		for _, m := range mf.Metric {
			got[labelValue(m, "pool")] = m.GetGauge().GetValue()
		}
	}
	if got["a"] != float64(a.Live) || got["b"] != 1 || len(got) != 2 {
		t.Errorf("live by pool = %v, want a=%d b=1", got, a.Live)
	}
	// The same labels twice are a conflict the registry refuses.
	if err := reg.Register(NewCollector(&fixed{}, Options{Labels: map[string]string{"pool": "a"}})); err == nil {
		t.Error("a second collector with the same names and labels was registered")
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestCollectorBadNamesPanic(t *testing.T) {
	for _, o := range []Options{
		{Namespace: "bad\xffname"},                 // not UTF-8
		{Labels: map[string]string{"__pool": "a"}}, // reserved
		{Labels: map[string]string{"": "a"}},
		{Labels: map[string]string{"reason": "a"}}, // clashes with retired's own label
		{Labels: map[string]string{"cause": "a"}},  // clashes with resets' own label
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewCollector(%+v) did not panic", o)
				}
			}()
			NewCollector(&fixed{}, o)
		}()
	}
}

func TestCollectorConcurrentScrapes(t *testing.T) {
	src := &fixed{st: sampleStats()}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(src, Options{}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if g == 0 {
					st := sampleStats()
					st.Made += uint64(i)
					src.set(st)
				}
				mfs, err := reg.Gather()
				if err != nil {
					t.Error(err)
					return
				}
				for _, mf := range mfs {
					for _, m := range mf.Metric {
						_ = m.String() // reads every field the exposition would
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestCollectorWriteIsRepeatable(t *testing.T) {
	c := NewCollector(&fixed{st: sampleStats()}, Options{})
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var a, b dto.Metric
		if err := m.Write(&a); err != nil {
			t.Fatal(err)
		}
		if err := m.Write(&b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: two writes differ: %v and %v", m.Desc(), &a, &b)
		}
	}
}

func TestCollectorDescribeMatchesCollect(t *testing.T) {
	st := sampleStats()
	st.ResetCauses = map[string]uint64{"25006": 1} // resets has samples once there was one
	st.Classes = classStats()                      // and the class series with classes
	c := NewCollector(fixedLimits{&fixed{st: st}, pool.Limits{Size: 1, Idle: 1}}, Options{})
	dch := make(chan *prometheus.Desc, 64)
	c.Describe(dch)
	close(dch)
	var described []string
	for d := range dch {
		described = append(described, d.String())
	}
	mch := make(chan prometheus.Metric, 64)
	c.Collect(mch)
	close(mch)
	seen := map[string]bool{}
	var collected []string
	for m := range mch {
		if s := m.Desc().String(); !seen[s] {
			seen[s] = true
			collected = append(collected, s)
		}
	}
	sort.Strings(described)
	sort.Strings(collected)
	if strings.Join(described, "\n") != strings.Join(collected, "\n") {
		t.Errorf("Describe sent\n%s\nCollect used\n%s", strings.Join(described, "\n"), strings.Join(collected, "\n"))
	}
}

func TestCollectAllocations(t *testing.T) {
	c := NewCollector(fixedLimits{&fixed{st: sampleStats()}, pool.Limits{Size: 1, Idle: 1}}, Options{Labels: map[string]string{"pool": "a"}})
	ch := make(chan prometheus.Metric, 64)
	allocs := testing.AllocsPerRun(100, func() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	})
	if allocs > 1 {
		t.Errorf("Collect allocated %v times, want at most 1 (one block for the samples)", allocs)
	}
}

// TestCollectorConsistentUnderLoad scrapes a busy Keeper: every scrape is
// one reading, so its gauges add up (live = idle + busy) and no counter is
// lower than in the scrape before.
func TestCollectorConsistentUnderLoad(t *testing.T) {
	k := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 3, Idle: 1}, 0, nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(k, Options{}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				l, err := k.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if (g+i)%5 == 0 {
					l.Destroy()
				} else {
					l.Release()
				}
			}
		})
	}
	last := map[string]float64{}
	for range 200 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		v := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				name := mf.GetName()
				if r := labelValue(m, "reason"); r != "" {
					name += "/" + r
				}
				if mf.GetType() == dto.MetricType_COUNTER {
					v[name] = m.GetCounter().GetValue()
					if v[name] < last[name] {
						t.Errorf("%s fell from %v to %v", name, last[name], v[name])
					}
				} else {
					v[name] = m.GetGauge().GetValue()
				}
			}
		}
		if live, idle, busy := v["wardpool_live_resources"], v["wardpool_idle_resources"], v["wardpool_busy_resources"]; live != idle+busy || live > 3 {
			t.Fatalf("a scrape read live %v, idle %v, busy %v", live, idle, busy)
		}
		for name, x := range v {
			if strings.HasSuffix(name, "_total") || strings.Contains(name, "_total/") {
				last[name] = x
			}
		}
	}
	close(stop)
	wg.Wait()
	if last["wardpool_made_total"] < 2 || last["wardpool_dropped_total"] < 1 {
		t.Errorf("the load did little: %v", last)
	}
}

// namedSource is a Source with a Name, as a driver's pool has.
type namedSource struct {
	*fixed
	name string
}

func (n namedSource) Name() string { return n.name }

// TestCollectorPoolLabelFromName: a Source with a Name labels its series
// pool=<name> unless Options.Labels names the pool; two unlabelled pools
// in one registry so do not collide.
func TestCollectorPoolLabelFromName(t *testing.T) {
	st := sampleStats()
	a := namedSource{&fixed{st: st}, "orders"}
	b := namedSource{&fixed{st: st}, "sqlward-2"}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(a, Options{}), NewCollector(b, Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" {
					pools[l.GetValue()] = true
				}
			}
		}
	}
	if len(pools) != 2 || !pools["orders"] || !pools["sqlward-2"] {
		t.Errorf("pool labels %v, want orders and sqlward-2", pools)
	}
	labels := map[string]string{"pool": "mine", "team": "x"}
	o := Options{Labels: labels}.forSource(a)
	if o.Labels["pool"] != "mine" || len(o.Labels) != 2 {
		t.Errorf("a pool label given: %v", o.Labels)
	}
	o = Options{Labels: map[string]string{"team": "x"}}.forSource(a)
	if o.Labels["pool"] != "orders" || o.Labels["team"] != "x" {
		t.Errorf("another label given: %v", o.Labels)
	}
	if _, ok := labels["pool"]; !ok || len(labels) != 2 {
		t.Errorf("the caller's map was changed: %v", labels)
	}
	if o := (Options{}).forSource(&fixed{}); o.Labels != nil {
		t.Errorf("a Source without a Name got labels %v", o.Labels)
	}
}
