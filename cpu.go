package wardpool

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"time"
)

// cpuEvery is how often a Keeper with a shedder reads the CPU.
const cpuEvery = 250 * time.Millisecond

// sampleCPU is the CPU sampler's timer callback: read (outside the lock),
// store, and set itself again while the pool is in use. An idle pool (no
// loan out, nobody waiting) stops it, and the next take starts it again
// (wakeCPULocked): a shedder sheds only a pool that is full, so an idle
// pool needs no reading, and nothing ticks while it sits idle.
func (k *Keeper[T]) sampleCPU() {
	v := k.safeCPU()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setCPU(v)
	if k.closed || (k.p.Books().Busy == 0 && k.q.live == 0) {
		k.cpuTimer = nil
		k.bgDoneLocked()
		return
	}
	k.cpuTimer.Reset(cpuEvery)
}

// wakeCPULocked starts the CPU sampler, with the ward's shedder, if it is
// not running (at the first take, or the first after the pool sat idle).
// Until its first reading, cpuEvery later, the last one stands.
func (k *Keeper[T]) wakeCPULocked() {
	if !k.shedder || k.cpuTimer != nil || k.closed {
		return
	}
	k.bg++ // the sampler; ended by Close or by an idle pool
	k.cpuTimer = k.clock.AfterFunc(cpuEvery, k.sampleCPU)
}

// setCPU stores a reading, held to 0..1000.
func (k *Keeper[T]) setCPU(v int) { k.tally.cpu.Store(int64(min(max(v, 0), 1000))) }

func (k *Keeper[T]) safeCPU() (v int) {
	defer func() {
		if r := recover(); r != nil {
			k.countPanic("CPU", r)
			v = 0
		}
	}()
	return k.cpuRead()
}

// cpuReader measures the CPU use of the process's container, or of the host,
// between two calls, in thousandths: the first reading is 0. It tries, in
// order, cgroup v2 (cpu.stat's usage_usec over the cpu.max quota), cgroup v1
// (cpuacct.usage over cpu.cfs_quota_us / cpu.cfs_period_us) and /proc/stat
// (busy over total jiffies). A source that is missing or reads oddly
// (garbage, a counter going backwards, no time passed) gives 0, "not hot",
// and never a panic: a shedder that cannot read the CPU must not refuse work.
//
// Not safe for concurrent use; a Keeper calls it from its one sampler.
type cpuReader struct {
	readFile func(name string) ([]byte, error)
	cores    float64 // CPUs available when no quota says otherwise

	// the previous sample, by source
	source    int // 0 none yet, 1 cgroup v2, 2 cgroup v1, 3 /proc/stat
	prevAt    time.Time
	prevUse   uint64 // µs (v2), ns (v1) or busy jiffies (/proc/stat)
	prevTotal uint64 // total jiffies (/proc/stat)
}

func newCPUReader() *cpuReader {
	return &cpuReader{readFile: os.ReadFile, cores: float64(runtime.NumCPU())}
}

// read is sample at time.Now.
func (r *cpuReader) read() int { return r.sample(time.Now()) }

// Files the reader looks at.
const (
	cg2Stat   = "/sys/fs/cgroup/cpu.stat"
	cg2Max    = "/sys/fs/cgroup/cpu.max"
	cg1Usage  = "/sys/fs/cgroup/cpuacct/cpuacct.usage"
	cg1Quota  = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
	cg1Period = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"
	procStat  = "/proc/stat"
)

// sample returns the CPU use since the previous sample, in thousandths.
func (r *cpuReader) sample(now time.Time) int {
	if b, err := r.readFile(cg2Stat); err == nil {
		if use, ok := parseCgroup2Usage(b); ok {
			cores := r.cores
			if m, err := r.readFile(cg2Max); err == nil {
				if q, ok := parseCPUMax(m); ok && q > 0 {
					cores = q
				}
			}
			return r.fromUsage(1, now, use, float64(time.Microsecond), cores)
		}
	}
	if b, err := r.readFile(cg1Usage); err == nil {
		if use, ok := parseUint(b); ok {
			cores := r.cores
			if q, ok := r.cfsQuota(); ok {
				cores = q
			}
			return r.fromUsage(2, now, use, 1, cores)
		}
	}
	if b, err := r.readFile(procStat); err == nil {
		if busy, total, ok := parseProcStat(b); ok {
			return r.fromJiffies(now, busy, total)
		}
	}
	r.source = 0
	return 0
}

// cfsQuota reads cgroup v1's quota in CPUs; false when there is none.
func (r *cpuReader) cfsQuota() (float64, bool) {
	qb, err := r.readFile(cg1Quota)
	if err != nil {
		return 0, false
	}
	pb, err := r.readFile(cg1Period)
	if err != nil {
		return 0, false
	}
	q, err1 := strconv.ParseInt(string(bytes.TrimSpace(qb)), 10, 64)
	p, err2 := strconv.ParseInt(string(bytes.TrimSpace(pb)), 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return float64(q) / float64(p), true
}

// fromUsage turns a cumulative CPU time (in units of unit nanoseconds) into
// thousandths of cores over the time since the previous sample.
func (r *cpuReader) fromUsage(source int, now time.Time, use uint64, unit, cores float64) int {
	prevSource, prevAt, prevUse := r.source, r.prevAt, r.prevUse
	r.source, r.prevAt, r.prevUse = source, now, use
	elapsed := now.Sub(prevAt)
	if prevSource != source || elapsed <= 0 || use < prevUse || !(cores > 0) {
		return 0
	}
	busy := float64(use-prevUse) * unit
	return thousandths(busy / (float64(elapsed) * cores))
}

// fromJiffies turns /proc/stat's counters into thousandths busy since the
// previous sample.
func (r *cpuReader) fromJiffies(now time.Time, busy, total uint64) int {
	prevSource, prevUse, prevTotal := r.source, r.prevUse, r.prevTotal
	r.source, r.prevAt, r.prevUse, r.prevTotal = 3, now, busy, total
	if prevSource != 3 || total <= prevTotal || busy < prevUse {
		return 0
	}
	return thousandths(float64(busy-prevUse) / float64(total-prevTotal))
}

// thousandths turns a share into thousandths held to 0..1000; NaN is 0.
func thousandths(share float64) int {
	if !(share > 0) {
		return 0
	}
	if share >= 1 {
		return 1000
	}
	return int(share * 1000)
}

// parseCgroup2Usage reads usage_usec out of a cgroup v2 cpu.stat.
func parseCgroup2Usage(b []byte) (uint64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == "usage_usec" {
			return parseUint(f[1])
		}
	}
	return 0, false
}

// parseCPUMax reads a cgroup v2 cpu.max ("quota period", or "max period"
// for no limit) as CPUs; 0 with true means no limit.
func parseCPUMax(b []byte) (float64, bool) {
	f := bytes.Fields(b)
	if len(f) < 1 || len(f) > 2 {
		return 0, false
	}
	if string(f[0]) == "max" {
		return 0, true
	}
	q, ok := parseUint(f[0])
	period := uint64(100000) // the kernel's default when only the quota is given
	if len(f) == 2 {
		var ok2 bool
		period, ok2 = parseUint(f[1])
		ok = ok && ok2
	}
	if !ok || q == 0 || period == 0 {
		return 0, false
	}
	return float64(q) / float64(period), true
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: busy and total
// jiffies (idle and iowait are not busy; guest time is already in user).
func parseProcStat(b []byte) (busy, total uint64, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	var idle uint64
	for i, s := range f[1:] {
		if i >= 8 { // guest and guest_nice are counted in user and nice
			break
		}
		v, ok := parseUint(s)
		if !ok {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	if total == 0 {
		return 0, 0, false
	}
	return total - idle, total, true
}

// parseUint reads one unsigned decimal, spaces around it allowed.
func parseUint(b []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return v, err == nil
}
