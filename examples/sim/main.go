// Command sim drives a real pool.Pool in virtual time and shows what it did:
// a table of one row a second, a summary a capacity planner reads (p50, p99
// and max acquire wait, time saturated, connections opened, dials to a dead
// backend), and, on request, a chart.
//
// Time is virtual: a queue of events ordered by instant, no sleeping and no
// clock, so a run of an hour at 1,000 callers a second takes about a second
// and the same -seed gives the same table and the same chart, byte for byte,
// on every machine. The simulator decides nothing itself: callers act on the
// pool's answers as wardpool.Keeper's callers do (see internal/engine).
//
//	go run ./examples/sim                            # the burst scenario, as a table
//	go run ./examples/sim -svg sim.svg -html sim.html
//	go run ./examples/sim -scenario outage -compare ward=none -svg outage.svg
//	go run ./examples/sim -scenario slowdown -compare size=24
//	go run ./examples/sim -scenario failover -compare classify=none
//	go run ./examples/sim -scenario steady -rotate-at 10s -rotate-over 5s -compare rotate-over=0
//	go run ./examples/sim -scenario scenarios/switchover.txt -compare hold-for=0
//	go run ./examples/sim -scenario scenarios/full.txt -compare full=fail
//	go run ./examples/sim -scenario scenarios/classes.txt -compare classes=none
//	go run ./examples/sim -scenario my.txt           # a scenario file (see below)
//	go run ./examples/sim -record load.csv           # write the run's load as CSV
//	go run ./examples/sim -replay load.csv -size 8 -compare size=16
//	go run ./examples/sim -replay pool.rec           # a Keeper's recording
//	go run ./examples/sim -suggest -target 10ms      # smallest Size, Idle, Keep
//	go run ./examples/sim -serve 127.0.0.1:8080      # the same, in the browser
//
// Scenarios. -scenario names a built-in (burst, steady, slowdown, outage,
// failover) or a file of "key value" lines (engine.Parse documents every
// key: rate, hold, dial, size, idle, keep, life, timeout, burst, slow,
// outage, break, ward and the guards' knobs, failover, classify,
// hold-for, hold-every, rotate-at, rotate-over, server-max, full, class,
// class-load, classes; scenarios/failover.txt, a
// database that fails and slows, is an example).
//
// The ward. -ward puts any of the guards a pool can hold in front of it:
// breaker, backoff, bucket, shedder, limiter (joined by +, "on" for the
// first two, "all" for every one), each with its knobs as flags
// (-bucket-rate, -bucket-burst; -shed-cpu, -shed-floor; -limit-initial,
// -limit-min, -limit-max, -limit-slow, -limit-backoff). The shedder reads
// a CPU model the load drives: -cpu-idle thousandths with nothing busy and
// -cpu-per-loan more for each resource busy, so a burst heats the host.
// The summary says what each guard did, and the chart gives each a panel.
//
// Failover. The failover built-in (or "failover 8s" in a file) moves the
// backend at an instant: connections opened before it reach the old node,
// which turned read-only, and every write on one fails. What follows is
// the classifier's doing, as the drivers' Config.Classify: "classify reset"
// (the drivers' default) retires every connection of the failing one's
// generation at the first error, once; "destroy" drops the failing
// connection alone; "none" keeps it, as pgxpool does. The summary and a
// comparison report the writes failed, how long after the failover the
// first write succeeded, and how many connections to the old node were
// still open a second after it. scenarios/promotion.txt adds half a second
// in which no node takes a connection, where the ward shows what it buys
// (-compare ward=none). A hold (-hold-for, or "hold-for 2s" in a file, as
// the Keeper's Config.Hold) has the classifier's reset hold the callers:
// one dial every -hold-every (100ms unless set) looks for the new node
// while the others wait, and a caller whose dial fails goes back to the
// front of the queue; the first connection made, or hold-for running
// out, ends it. scenarios/switchover.txt compares it with the at-once
// form (-compare hold-for=0): calls failed, the dials that failed before
// the new node took one, and how soon it did.
//
// A full backend. -server-max (or "server-max 4" in a file) is how many
// connections the backend takes from the pool, below its Size (a role's
// CONNECTION LIMIT, Redis's maxclients): a dial past it is refused for
// want of room, which the drivers' classifiers call wardpool.Full. With
// -full wait (the default) the Keeper tells the pool so, and while others
// are live the caller goes back to the front of the queue and waits for a
// return, the pool trying one more dial a second; with -full fail the
// caller gets the error, as pgxpool's do. scenarios/full.txt compares the
// two (-compare full=fail): calls failed, dials refused, the waits.
//
// Classes of callers. In a file, "class NAME reserve R" (and ceiling C,
// lend D) gives the pool a class of callers (pool.Class, as the Keeper's
// Config.Classes), and "class-load NAME rate R hold D" (Poisson) or
// "class-load NAME callers N hold D" (N callers back to back) its load.
// The simulator keeps one queue a class and serves them in the order the
// pool says (Pool.Serve), as the Keeper does; the summary and a
// comparison give each class's waits, callers served a second, and the
// most it held. "classes none" gives the pool no classes: the same
// callers, first come first served in one queue. scenarios/classes.txt
// (-compare classes=none) is issue 34's proof load: batch, 64 callers
// holding 200 ms back to back, beside interactive, 100 a second holding
// 2 ms with 2 of the 8 reserved.
// Flags given on the command line override the scenario, whatever their
// value. -compare runs a
// second configuration, written as the scenario's settings ("size=16" or
// "ward=none, size=8"), on the same seeded load, and charts the two side by
// side.
//
// Recorded load. -replay reads a CSV of acquire and release times (the
// format is documented in internal/engine/csv.go) and replays it against the
// limits, dial time and ward given. The instants callers asked and how long
// they held are as recorded; the dial time is a parameter; a caller that was
// never served holds for -hold if served now. So the answer is an estimate
// of what other limits would have done to the same work, not a measurement.
//
// -replay also reads a Keeper's own recording (Config.Recorder, written out
// by Keeper.Recording; told from a CSV by its first bytes) and rebuilds its
// callers from the recorded calls (internal/engine/keeper.go says how). It
// starts from the recorded limits, ward (every guard, rebuilt as it stood)
// and dial time (the median from Make to Made), which flags override,
// replays the recording itself first (pool.Replay) and says whether every
// step came out the same, reads the CPU as recorded (for a shedder), and
// prints what it read exactly (callers
// lent at once, after a recorded Wait, by their own dial, or by a return
// while dialing: asked, lent and returned at recorded instants) and what it estimated: the lane's loans,
// recorded only as counts, are spread evenly between recorded instants, and
// a caller that queued behind others is first seen when the Keeper asked
// for it at the head of its queue. With the
// recorded limits it also says how many of the recorded Take answers the
// replay gives back, in order and at their instants.
//
//	go run ./examples/sim -replay pool.rec -compare size=16
//
// Sizing. -suggest searches the smallest Size, then Idle, then Keep whose
// p99 wait is within -target on at least 90% of -seeds seeds (20), prints
// the spread over the seeds and the margin to the target, and with -svg or
// -html draws the search. It first says the load it answers for: Poisson
// arrivals and exponential holds (or the recording's), the mean number
// busy by Little's law (rate × mean hold), and each burst, plainly. It
// tries no Keep under -min-keep (30s): a run of seconds rewards an idle
// timeout of a second, which in a service closes and reopens connections
// all day.
//
// The browser. -serve builds this command with GOOS=js GOARCH=wasm and
// serves it with a page (web/index.html) that runs it on the settings of
// its controls and on a recording dropped on it; -page writes the page's
// files instead. In the browser the command is the same code (wasm.go), so
// it prints the same report for the same arguments.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

// options are the command's flags beyond the scenario.
type options struct {
	scenario string
	compare  string
	replay   string
	record   string
	svg      string
	html     string
	suggest  bool
	target   time.Duration
	maxSize  int
	minKeep  time.Duration
	// resamples and level make a replay's p99 an interval (see
	// engine.Resample); 0 resamples: none.
	resamples int
	level     float64
	seeds     int
	table     bool
	serve     string
	page      string
}

// files is where the command reads scenarios and recordings and writes
// charts and records: the machine's files on the command line, an
// in-memory set in the browser (see wasm.go).
type files interface {
	ReadFile(name string) ([]byte, error)
	Create(name string) (io.WriteCloser, error)
}

// site builds the page (-page) or serves it (-serve): serveOrWrite on the
// command line (site.go), nil in the browser.
var site func(o options, out io.Writer) error

// osFiles are the machine's files.
type osFiles struct{}

func (osFiles) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFiles) Create(name string) (io.WriteCloser, error) { return os.Create(name) }

// main runs the command (start_cli.go) or, compiled to WebAssembly, hands
// it to the browser's page (wasm.go).
func main() { start() }

// cli runs the command with args on the machine's files, writing its
// report to out.
func cli(args []string, out io.Writer) error { return command(osFiles{}, args, out) }

// command runs the command with args, reading and writing fsys, and
// writing its report to out. The browser runs it too (wasm.go), so the
// same arguments print the same report, byte for byte, in both.
func command(fsys files, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.scenario, "scenario", "burst", "a built-in scenario ("+strings.Join(engine.Builtins, ", ")+") or a scenario file")
	fs.StringVar(&o.compare, "compare", "", `run a second configuration on the same load: settings such as "size=16" or "ward=none, size=8"`)
	fs.StringVar(&o.replay, "replay", "", "replay the load of this CSV (asked,acquired,released[,answers]) or Keeper recording (pool.Recorder) instead of the synthetic one")
	fs.StringVar(&o.record, "record", "", "write the run's load and the pool's answers to this CSV")
	fs.StringVar(&o.svg, "svg", "", "write the chart to this SVG file")
	fs.StringVar(&o.html, "html", "", "write the chart and tables to this self-contained HTML file")
	fs.BoolVar(&o.suggest, "suggest", false, "search the smallest Size, Idle and Keep keeping the p99 wait within -target on 90% of -seeds seeds")
	fs.DurationVar(&o.target, "target", 10*time.Millisecond, "p99 acquire wait to stay within, for -suggest")
	fs.IntVar(&o.maxSize, "max-size", 256, "largest Size -suggest tries")
	fs.DurationVar(&o.minKeep, "min-keep", 30*time.Second, "shortest Keep -suggest tries: a shorter idle timeout fits a run of seconds and churns connections in a service (0: no floor)")
	fs.IntVar(&o.seeds, "seeds", 20, "how many seeds -suggest runs each configuration on, from -seed on")
	fs.BoolVar(&o.table, "table", true, "print the table of one row a second")
	fs.IntVar(&o.resamples, "resamples", 100, "with -replay: runs with the recorded holds resampled, behind the p99's interval (0: none)")
	fs.Float64Var(&o.level, "level", 0.9, "with -replay: the share of the resampled runs the p99's interval spans")
	fs.StringVar(&o.serve, "serve", "", "serve the simulator's page (this engine compiled to WebAssembly) at this address, such as 127.0.0.1:8080")
	fs.StringVar(&o.page, "page", "", "write the simulator's page (index.html, wasm_exec.js, sim.wasm) to this directory")
	// Settings of the scenario, applied over it when given.
	fs.Uint64("seed", 1, "random seed: the same seed gives the same run")
	fs.Int("size", 12, "most resources live at once (idle follows it unless -idle is given)")
	fs.Int("idle", 12, "most resources idle at once")
	fs.Duration("keep", 2*time.Second, "idle time after which a resource is retired")
	fs.Duration("life", 0, "age at which a resource is retired (0: none)")
	fs.Float64("rate", 100, "callers arriving per second (a burst multiplies it)")
	fs.Duration("hold", 40*time.Millisecond, "mean time a caller holds a resource")
	fs.Duration("dial", 20*time.Millisecond, "time to make a resource")
	fs.Int("seconds", 24, "virtual seconds to run")
	fs.Duration("timeout", 0, "how long a caller waits before giving up (0: for ever)")
	fs.String("ward", "none", "guards in front of the backend: none, on (breaker+backoff), all, or any of breaker, backoff, bucket, shedder, limiter joined by +")
	// The guards' knobs: they apply when -ward turns the guard on.
	fs.Float64("bucket-rate", engine.DefaultBucketRate, "bucket: makes a second it lets through")
	fs.Float64("bucket-burst", engine.DefaultBucketBurst, "bucket: makes it lets through at once, after a quiet spell")
	fs.Int("shed-cpu", ward.DefaultShed.CPU, "shedder: CPU in thousandths at or over which the host is hot")
	fs.Float64("shed-floor", ward.DefaultShed.Floor, "shedder: least share of its capacity it admits however hot")
	fs.Int("cpu-idle", engine.DefaultCPUIdle, "CPU model for the shedder: thousandths used with nothing busy")
	fs.Int("cpu-per-loan", engine.DefaultCPUPerLoan, "CPU model for the shedder: thousandths more for each busy resource")
	fs.Int("limit-initial", ward.DefaultAimd.Initial, "limiter: the concurrency limit it starts at")
	fs.Int("limit-min", ward.DefaultAimd.Min, "limiter: the lowest limit")
	fs.Int("limit-max", ward.DefaultAimd.Max, "limiter: the highest limit")
	fs.Duration("limit-slow", ward.DefaultAimd.Slow, "limiter: a hold longer than this shrinks the limit, as a failure does")
	fs.Float64("limit-backoff", ward.DefaultAimd.Backoff, "limiter: the factor a slow hold or a failure multiplies the limit by")
	// A hold through a failover (it holds only after a failover's reset).
	fs.Duration("hold-for", 0, "with a failover: hold the callers after the reset up to this long, one dial at a time (pool.Hold; 0: no hold)")
	fs.Duration("hold-every", 0, "with -hold-for: the least time between two dials of the hold (0: pool.DefaultHoldEvery, 100ms)")
	// A backend with a connection limit below the pool's Size.
	fs.Int("server-max", 0, "the backend takes at most this many connections from the pool; a dial past it is refused for want of room, as PostgreSQL's 53300 (0: no limit)")
	fs.String("full", engine.FullWait, "with -server-max, what a dial refused for want of room does: wait (the Keeper tells the pool, which has the caller wait for a return or the next dial, one a second) or fail (the caller gets the error, as pgxpool)")
	// A rotation: on the command line, not (yet) on the page.
	fs.Duration("rotate-at", 0, "replace every resource at this instant, as after rotated credentials (Pool.Reset; 0: no rotation)")
	fs.Duration("rotate-over", 0, "with -rotate-at: retire the old resources at a bounded pace over this window (0: all at once)")
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./examples/sim [flags]")
		fmt.Fprintln(out, "The flags from -seed to -ward override the scenario's settings; the defaults shown are the burst scenario's.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.serve != "" || o.page != "" {
		if site == nil {
			return errors.New("-serve and -page build the page with the go command: not from the page itself")
		}
		return site(o, out)
	}
	s, err := scenario(fsys, o.scenario)
	if err != nil {
		return err
	}
	var rec *engine.Recording
	var kl *engine.KeeperLoad // of a Keeper's recording
	var origin time.Time      // of a recording with wall-clock times
	if o.replay != "" {
		data, err := fsys.ReadFile(o.replay)
		if err != nil {
			return err
		}
		if engine.IsKeeperRecording(data) {
			if kl, err = engine.ReadKeeper(data); err != nil {
				return fmt.Errorf("%s: %w", o.replay, err)
			}
			rec = &kl.Recording
			// The recorded pool's limits, its ward (rebuilt from the
			// recording, guard for guard: see recordedWard) and its dial
			// time, unless flags say others.
			w := kl.Source.Ward()
			s.Limits, s.Breaker, s.Backoff = kl.Limits, w.Breaker != nil, kl.Backoff
			s.Bucket, s.Shedder, s.Limiter = w.Bucket != nil, w.Shedder != nil, w.Limiter != nil
			if kl.Dials > 0 {
				s.Dial = kl.Dial
			}
			s.Note = fmt.Sprintf("%d callers rebuilt from a Keeper recording; holds as recorded, lane loans spread, dial time a parameter", len(rec.Rows))
		} else {
			if rec, err = engine.ReadCSV(bytes.NewReader(data)); err != nil {
				return fmt.Errorf("%s: %w", o.replay, err)
			}
			s.Note = fmt.Sprintf("%d recorded callers; holds as recorded, dial time a parameter", len(rec.Rows))
		}
		s.Name = "replay of " + o.replay
		s.Bursts = nil // a recording has its own bursts
		s.Seconds = max(int(math.Ceil(rec.End().Seconds())), 1)
		origin = rec.Origin
	}
	// Flags given on the command line override the scenario (and the
	// recording's length), whatever their value, the default's included.
	if s, err = given(fs, s); err != nil {
		return err
	}
	load := func() engine.Load {
		if rec == nil {
			return nil
		}
		return rec.Load(s.Hold)
	}
	if o.suggest {
		return suggest(fsys, out, s, rec, o)
	}
	// The recorded ward runs unless -ward says another.
	useRecorded := kl != nil && !flagGiven(fs, "ward")
	if kl != nil {
		keeperNotes(out, kl, s)
		exactReplay(out, kl, useRecorded)
	}
	var csvOut *engine.CSVWriter
	var recFile io.WriteCloser
	if o.record != "" {
		if recFile, err = fsys.Create(o.record); err != nil {
			return err
		}
		defer recFile.Close()
		csvOut = engine.NewCSVWriter(recFile)
	}
	opt := engine.Options{Load: load(), Record: csvOut, RotationRead: rotationRead(s, o.compare)}
	if useRecorded {
		opt.Ward = kl.Source.Ward
	}
	if kl != nil {
		// The host's CPU and the backend's dial outcomes, whatever the ward.
		opt.CPU, opt.DialFails, opt.DialFull = recordedCPU(kl.Source), recordedDials(kl.Source), recordedFull(kl.Source)
	}
	switch {
	case kl == nil || !useRecorded || s.Limits != kl.Limits:
	case kl.Counts.Lane > 0:
		fmt.Fprintf(out, "decisions      not compared: the Keeper's lane lent %d times without asking the pool, which the replay asks each time\n\n", kl.Counts.Lane)
	default:
		// Replayed with the limits it was recorded with: say how many of
		// the recorded decisions the replay gives back.
		opt.Recorder = record.New(min(256*len(kl.Rows)+record.DefaultLimit, 1<<30))
	}
	a, err := engine.Run(s, opt)
	if err != nil {
		return err
	}
	if opt.Recorder != nil {
		got, err := record.ReadRecording(a.Recording)
		if err != nil {
			return fmt.Errorf("the replay's own recording: %w", err)
		}
		if len(got.Steps) > 0 && got.Steps[0].Index > 0 {
			fmt.Fprintf(out, "decisions      not compared: the replay made more calls than its recorder kept\n\n")
		} else {
			fmt.Fprintf(out, "decisions      with the recorded limits and a dial of %v: %v\n\n", s.Dial, engine.Reproduced(kl.Source, got))
		}
	}
	if csvOut != nil {
		if err := errors.Join(csvOut.Close(), recFile.Close()); err != nil {
			return err
		}
	}
	runs := []*engine.Result{a}
	labels := []string{label(s, "")}
	if useRecorded {
		labels[0] = recordedLabel(s, "", kl)
	}
	if o.compare != "" {
		sb, err := engine.Override(s, o.compare)
		if err != nil {
			return fmt.Errorf("-compare: %w", err)
		}
		if sb.Name == s.Name {
			sb.Name = s.Name + ", " + o.compare
		}
		optB := engine.Options{Load: load(), CPU: opt.CPU, DialFails: opt.DialFails, DialFull: opt.DialFull, RotationRead: opt.RotationRead}
		keep := useRecorded && !strings.Contains(o.compare, "ward")
		if keep {
			optB.Ward = kl.Source.Ward // the other limits, the same ward
		}
		b, err := engine.Run(sb, optB)
		if err != nil {
			return err
		}
		runs = append(runs, b)
		if keep {
			labels = append(labels, recordedLabel(sb, o.compare, kl))
		} else {
			labels = append(labels, label(sb, o.compare))
		}
		compare(out, runs, labels, origin)
		if rec != nil && o.resamples > 0 {
			if err := intervals(out, rec, []engine.Scenario{s, sb}, []func() engine.Options{again(opt), again(optB)}, o); err != nil {
				return err
			}
		}
	} else {
		if o.table {
			table(out, a)
			fmt.Fprintln(out)
		}
		summary(out, a)
		if rec != nil && o.resamples > 0 {
			if err := intervals(out, rec, []engine.Scenario{s}, []func() engine.Options{again(opt)}, o); err != nil {
				return err
			}
		}
	}
	target := time.Duration(0)
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "target" {
			target = o.target
		}
	})
	fig := figure(runs, labels, target)
	if o.svg != "" {
		if err := writeFile(fsys, o.svg, fig.WriteSVG); err != nil {
			return err
		}
	}
	if o.html != "" {
		var sum bytes.Buffer
		if len(runs) > 1 {
			compare(&sum, runs, labels, origin)
		} else {
			summary(&sum, runs[0])
		}
		if err := writeFile(fsys, o.html, func(w io.Writer) error { return page(w, fig, sum.String(), runs, labels) }); err != nil {
			return err
		}
	}
	return nil
}

// rotationRead is how long after its instant a rotation's figures are
// read when s is compared with its settings overridden by compare: over
// the longer of the two windows and engine.RotationTail, so that both runs
// are read over the same stretch. Zero (the engine's own reading) without
// a comparison.
func rotationRead(s engine.Scenario, compare string) time.Duration {
	if compare == "" {
		return 0
	}
	read := s.RotateOver
	if sb, err := engine.Override(s, compare); err == nil { // an error is reported with the comparison
		read = max(read, sb.RotateOver)
	}
	return read + engine.RotationTail
}

// again makes the options of a run like one run with opt, for the
// resampled runs behind an interval: the same ward, CPU and dial
// outcomes, nothing recorded.
func again(opt engine.Options) func() engine.Options {
	return func() engine.Options {
		return engine.Options{Ward: opt.Ward, CPU: opt.CPU, DialFails: opt.DialFails, DialFull: opt.DialFull}
	}
}

// settingFlags are the flags that set the scenario, in the order they are
// applied: size before idle, since a size sets idle too while the two are
// equal (flag.Visit's own order is by name, idle first).
var settingFlags = []string{"seed", "seconds", "rate", "hold", "dial", "size", "idle", "keep", "life", "timeout", "ward",
	"bucket-rate", "bucket-burst", "shed-cpu", "shed-floor", "cpu-idle", "cpu-per-loan",
	"limit-initial", "limit-min", "limit-max", "limit-slow", "limit-backoff", "hold-for", "hold-every",
	"server-max", "full"}

// commandFlags set the scenario too, after settingFlags, but only on the
// command line: the page has no controls for them.
var commandFlags = []string{"rotate-at", "rotate-over"}

// given applies to s every setting flag fs was given, as flag.Visit tells
// them: a flag given with its default value applies as any other.
func given(fs *flag.FlagSet, s engine.Scenario) (engine.Scenario, error) {
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() })
	var settings []string
	for _, name := range append(settingFlags[:len(settingFlags):len(settingFlags)], commandFlags...) {
		if v, ok := set[name]; ok {
			settings = append(settings, name+" "+v)
		}
	}
	if len(settings) == 0 {
		return s, nil
	}
	s, err := engine.Override(s, strings.Join(settings, ";"))
	if err != nil {
		return s, fmt.Errorf("flags: %w", err)
	}
	return s, nil
}

// scenario returns the built-in called name, or the scenario in file name
// (over the burst scenario's defaults).
func scenario(fsys files, name string) (engine.Scenario, error) {
	if s, ok := engine.Builtin(name); ok {
		return s, nil
	}
	data, err := fsys.ReadFile(name)
	if err != nil {
		return engine.Scenario{}, fmt.Errorf("-scenario %q is neither a built-in (%s) nor a readable file: %w", name, strings.Join(engine.Builtins, ", "), err)
	}
	base, _ := engine.Builtin("steady")
	base.Name, base.Note = name, ""
	s, err := engine.Parse(bytes.NewReader(data), base)
	if err != nil {
		return engine.Scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// label is a configuration's short name: its limits and ward, and the
// settings that made it the second of a comparison.
func label(s engine.Scenario, settings string) string {
	w := "ward off"
	if on := s.GuardsOn(); len(on) > 0 {
		w = strings.Join(on, "+")
	}
	l := fmt.Sprintf("Size %d, Idle %d, Keep %v, ", s.Limits.Size, s.Limits.Idle, s.Limits.Keep)
	if s.Limits.Life > 0 {
		l += fmt.Sprintf("Life %v, ", s.Limits.Life)
	}
	l += w
	if settings != "" {
		l += " (" + settings + ")"
	}
	return l
}

func writeFile(fsys files, name string, write func(io.Writer) error) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// flagGiven reports whether flag name was given on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
