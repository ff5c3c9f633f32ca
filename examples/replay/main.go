// Command replay checks a recording of a pool: it reads the file, replays
// every step into a fresh pool.Pool and says whether each answer came out
// the same as recorded, or names the first step that did not.
//
//	go run ./examples/replay -demo pool.rec   # record a small Keeper run into pool.rec
//	go run ./examples/replay pool.rec         # replay it
//	go run ./examples/replay -steps pool.rec  # and print every step
//	go run ./examples/replay http://127.0.0.1:8080/debug/pool.wprc
//
// The last fetches a running service's recording from the handler it
// mounted (Keeper.RecordingHandler) and replays it.
//
// A program records its own Keeper by setting Config.Recorder and writing
// Keeper.Recording() to a file when something goes wrong (a failed health
// check, a signal, a test that broke); that file is what goes with a bug
// report. The exit status is 0 when the replay matches, 1 when it differs
// and 2 when the file is not a recording.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
	"github.com/wardpool/wardpool/ward"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	demo := fs.Bool("demo", false, "record a small Keeper run into the file instead of replaying it")
	steps := fs.Bool("steps", false, "print every step held")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: replay [-demo] [-steps] file")
		return 2
	}
	file := fs.Arg(0)
	if *demo {
		data, err := demoRun()
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "replay:", err)
			return 2
		}
		fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", file, len(data))
		return 0
	}
	data, err := readFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	rc, err := record.ReadRecording(data)
	if err != nil {
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
	held := len(rc.Steps)
	fmt.Fprintf(stdout, "limits %+v, ward %s: %d steps recorded, the last %d held\n", rc.Limits, describeWard(rc.Ward()), rc.Total, held)
	if *steps {
		for _, s := range rc.Steps {
			fmt.Fprintln(stdout, s)
		}
	}
	var d *record.Divergence
	switch err := rc.Replay(); {
	case err == nil:
		fmt.Fprintln(stdout, "replayed: every answer the same")
		return 0
	case errors.As(err, &d):
		fmt.Fprintf(stdout, "differs at step %d (%v)\n  recorded: %s\n  replayed: %s\n", d.Index, d.Op, d.Want, d.Got)
		return 1
	default:
		fmt.Fprintln(stderr, "replay:", err)
		return 2
	}
}

// demoRun runs a small Keeper with a Recorder (dials that fail now and
// then, a breaker and a backoff, destroys, a Reset) and returns its
// recording.
func demoRun() ([]byte, error) {
	dials := 0
	b := ward.DefaultBackoff
	b.Base, b.Cap = time.Millisecond, 4*time.Millisecond
	k, err := wardpool.NewKeeper(wardpool.Config[*int]{
		Limits: pool.Limits{Size: 4, Keep: time.Minute},
		Ward:   ward.Ward{Backoff: &b, Breaker: ward.NewBreaker(ward.DefaultSre, time.Now())},
		Dial: func(context.Context) (*int, error) {
			dials++
			if dials%4 == 0 {
				return nil, errors.New("connection refused")
			}
			v := dials
			return &v, nil
		},
		Close:    func(*int) error { return nil },
		Recorder: record.New(64 << 10),
	})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var out []wardpool.Loan[*int]
	for i := range 200 {
		if l, err := k.Acquire(ctx); err == nil {
			out = append(out, l)
		}
		if len(out) > 2 || i%7 == 0 {
			for j, l := range out {
				if j == 0 && i%5 == 0 {
					l.Destroy()
				} else {
					l.Release()
				}
			}
			out = out[:0]
		}
		if i == 100 {
			k.Reset()
		}
	}
	for _, l := range out {
		l.Release()
	}
	if err := k.Close(ctx); err != nil {
		return nil, err
	}
	return k.Recording(), nil
}

// readFile reads a recording from a file, or from a URL (a service's
// Keeper.RecordingHandler).
func readFile(name string) ([]byte, error) {
	if !strings.HasPrefix(name, "http://") && !strings.HasPrefix(name, "https://") {
		return os.ReadFile(name)
	}
	resp, err := http.Get(name)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", name, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<30))
}

// describeWard names the guards of w with their policies.
func describeWard(w ward.Ward) string {
	var parts []string
	if w.Breaker != nil {
		parts = append(parts, fmt.Sprintf("breaker %+v", w.Breaker.Policy()))
	}
	if w.Shedder != nil {
		parts = append(parts, fmt.Sprintf("shedder %+v", w.Shedder.Policy()))
	}
	if w.Bucket != nil {
		parts = append(parts, fmt.Sprintf("bucket %v/s burst %v", w.Bucket.Rate(), w.Bucket.Burst()))
	}
	if w.Limiter != nil {
		parts = append(parts, fmt.Sprintf("limiter %+v", w.Limiter.Policy()))
	}
	if w.Backoff != nil {
		parts = append(parts, fmt.Sprintf("backoff %v", w.Backoff.Jitter))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
