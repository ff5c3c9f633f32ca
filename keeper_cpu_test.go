package wardpool

import (
	"io/fs"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

func shedderWard(c Clock) ward.Ward {
	return ward.Ward{Shedder: ward.NewShedder(ward.DefaultShed, c.Now())}
}

func TestParseCgroup2Usage(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n", 123456, true},
		{"user_usec 1\nusage_usec 7", 7, true},
		{"usage_usec\n", 0, false},
		{"usage_usec -5\n", 0, false},
		{"usage_usec 12x\n", 0, false},
		{"", 0, false},
		{"\x00\xff garbage", 0, false},
	}
	for _, c := range cases {
		got, ok := parseCgroup2Usage([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseCgroup2Usage(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"max 100000\n", 0, true},
		{"200000 100000\n", 2, true},
		{"50000 100000", 0.5, true},
		{"150000", 1.5, true},
		{"0 100000", 0, false},
		{"100000 0", 0, false},
		{"abc 100000", 0, false},
		{"1 2 3", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, ok := parseCPUMax([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		in          string
		busy, total uint64
		ok          bool
	}{
		{"cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n", 150, 1000, true},
		{"cpu 10 20 30 40", 60, 100, true}, // old kernels: four fields
		{"cpu0 100 0 50 800\n", 0, 0, false},
		{"cpu 1 2 x 4 5", 0, 0, false},
		{"cpu 0 0 0 0 0", 0, 0, false},
		{"cpu", 0, 0, false},
		{"", 0, 0, false},
		{"intr 12345\n", 0, 0, false},
	}
	for _, c := range cases {
		busy, total, ok := parseProcStat([]byte(c.in))
		if busy != c.busy || total != c.total || ok != c.ok {
			t.Errorf("parseProcStat(%q) = %d, %d, %v; want %d, %d, %v", c.in, busy, total, ok, c.busy, c.total, c.ok)
		}
	}
}

// files is a fake file system for cpuReader.
type files map[string]string

func (f files) read(name string) ([]byte, error) {
	if s, ok := f[name]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func TestCPUReaderSources(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sec := t0.Add(time.Second)

	// cgroup v2 with a quota of two CPUs: 1.5 CPU-seconds used in a second
	// is 750 thousandths.
	f := files{cg2Stat: "usage_usec 1000000\n", cg2Max: "200000 100000\n"}
	r := &cpuReader{readFile: f.read, cores: 8}
	if got := r.sample(t0); got != 0 {
		t.Fatalf("first sample %d, want 0", got)
	}
	f[cg2Stat] = "usage_usec 2500000\n"
	if got := r.sample(sec); got != 750 {
		t.Fatalf("cgroup v2 sample %d, want 750", got)
	}

	// cgroup v2 without a quota: the machine's cores.
	f = files{cg2Stat: "usage_usec 0", cg2Max: "max 100000"}
	r = &cpuReader{readFile: f.read, cores: 4}
	r.sample(t0)
	f[cg2Stat] = "usage_usec 1000000"
	if got := r.sample(sec); got != 250 {
		t.Fatalf("cgroup v2 unlimited sample %d, want 250", got)
	}

	// cgroup v1: ns of usage over the CFS quota.
	f = files{cg1Usage: "0\n", cg1Quota: "100000\n", cg1Period: "100000\n"}
	r = &cpuReader{readFile: f.read, cores: 4}
	r.sample(t0)
	f[cg1Usage] = "500000000\n"
	if got := r.sample(sec); got != 500 {
		t.Fatalf("cgroup v1 sample %d, want 500", got)
	}
	f[cg1Quota] = "-1\n" // no quota: four cores
	f[cg1Usage] = "1500000000\n"
	if got := r.sample(sec.Add(time.Second)); got != 250 {
		t.Fatalf("cgroup v1 unlimited sample %d, want 250", got)
	}

	// /proc/stat.
	f = files{procStat: "cpu 100 0 100 800 0 0 0 0 0 0\n"}
	r = &cpuReader{readFile: f.read, cores: 2}
	r.sample(t0)
	f[procStat] = "cpu 190 0 100 810 0 0 0 0 0 0\n"
	if got := r.sample(sec); got != 900 {
		t.Fatalf("/proc/stat sample %d, want 900", got)
	}
}

func TestCPUReaderDegradesToNotHot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name          string
		before, after files
	}{
		{"nothing there", files{}, files{}},
		{"garbage everywhere",
			files{cg2Stat: "\xff\xfe", cg1Usage: "lots", procStat: "cpu a b c d"},
			files{cg2Stat: "\x00", cg1Usage: "more", procStat: "cpu e f g h"}},
		{"counter going backwards", files{cg2Stat: "usage_usec 900"}, files{cg2Stat: "usage_usec 100"}},
		{"source changing", files{cg2Stat: "usage_usec 900"}, files{procStat: "cpu 1 1 1 1"}},
		{"jiffies not moving", files{procStat: "cpu 1 1 1 1"}, files{procStat: "cpu 1 1 1 1"}},
		{"zero quota", files{cg2Stat: "usage_usec 0", cg2Max: "0 0"}, files{cg2Stat: "usage_usec 10", cg2Max: "0 0"}},
	}
	for _, c := range cases {
		cur := c.before
		r := &cpuReader{readFile: func(n string) ([]byte, error) { return cur.read(n) }, cores: 2}
		r.sample(t0)
		cur = c.after
		if got := r.sample(t0.Add(time.Second)); got != 0 {
			t.Errorf("%s: %d, want 0", c.name, got)
		}
	}
	// No time passing, and a clock stepping back, read as not hot.
	f := files{cg2Stat: "usage_usec 0"}
	r := &cpuReader{readFile: f.read, cores: 1}
	r.sample(t0)
	f[cg2Stat] = "usage_usec 5000"
	if got := r.sample(t0); got != 0 {
		t.Errorf("no time passed: %d", got)
	}
	if got := r.sample(t0.Add(-time.Second)); got != 0 {
		t.Errorf("time went back: %d", got)
	}
	// Over 100% (a quota smaller than the use) is held to 1000.
	f[cg2Stat], f[cg2Max] = "usage_usec 0", "10000 100000"
	r = &cpuReader{readFile: f.read, cores: 1}
	r.sample(t0)
	f[cg2Stat] = "usage_usec 1000000"
	if got := r.sample(t0.Add(time.Second)); got != 1000 {
		t.Errorf("over quota: %d, want 1000", got)
	}
}

func TestCPUReaderOnThisMachine(t *testing.T) {
	r := newCPUReader()
	r.read()
	if got := r.read(); got < 0 || got > 1000 {
		t.Fatalf("reading %d out of range", got)
	}
}

func TestKeeperSurvivesAPanickingCPUReader(t *testing.T) {
	d := &dialer{}
	c := newFakeClock()
	k, _ := newTestKeeper(t, d, Config[*res]{
		Ward:   shedderWard(c),
		Clock:  c,
		CPU:    func() int { panic("no /proc") },
		Logger: quietLogger(),
	})
	c.Advance(time.Second)
	if s := k.Stats(); s.Panics == 0 {
		t.Fatal("panics not counted")
	}
	if k.cpuNow() != 0 {
		t.Fatal("a failed reading is not 'not hot'")
	}
	mustAcquire(t, k).Release()
}
