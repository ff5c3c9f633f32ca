package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// promtool returns the path of Prometheus's promtool, or skips the test.
// ./scripts/test installs it (Debian's prometheus package).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH: skipping Prometheus's own checks (./scripts/test installs Debian's prometheus package for it)")
	}
	return p
}

// runPromtool runs promtool with args in this directory, stdin from the
// file in, and returns its combined output and exit code.
func runPromtool(t *testing.T, bin, in string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("promtool %v: %v", args, ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("promtool %v: %v", args, err)
	return "", -1
}

// promtoolLintProblems is promtool check metrics' exit code when the
// scrape parsed and its linter found problems (1 is a parse error).
const promtoolLintProblems = 3

// checkMetrics runs promtool check metrics on the scrape in file and
// reports what it found wrong, or "" when it passed. promtool (2.42 as in
// Debian 12, and the promlint of later ones) parses a scrape with the text
// format's parser. An OpenMetrics scrape parses (a second HELP line for one
// family is a parse error, which is what a histogram named like a
// counter's family brings), but OpenMetrics names a counter's family
// without _total in HELP and TYPE, so the text parser sees each X_total
// sample as a metric of its own with no help, and the linter says
// "X_total no help text". For an OpenMetrics scrape exactly those lines,
// for counters whose family X has its HELP in the scrape, are accepted;
// anything else promtool says fails.
func checkMetrics(t *testing.T, bin, file string, openMetrics bool) string {
	t.Helper()
	out, code := runPromtool(t, bin, file, "check", "metrics")
	if code == 0 {
		return ""
	}
	if code != promtoolLintProblems || !openMetrics {
		return fmt.Sprintf("exit %d:\n%s", code, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, ok := strings.CutSuffix(line, "_total no help text")
		if !ok || !bytes.Contains(b, []byte("\n# TYPE "+name+" counter\n")) || !bytes.Contains(b, []byte("\n# HELP "+name+" ")) {
			wrong = append(wrong, line)
		}
	}
	if len(wrong) > 0 {
		return fmt.Sprintf("exit %d:\n%s", code, strings.Join(wrong, "\n"))
	}
	return ""
}

// scrape writes what a Prometheus server scraping reg would get, in the
// format the Accept header asks for, to a file, and returns its name.
func scrape(t *testing.T, reg *prometheus.Registry, accept, name string) string {
	t.Helper()
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, rec.Body.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const (
	acceptText        = "text/plain;version=0.0.4"
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0"
)

// TestPromtoolCheckMetrics: a scrape of a Keeper's Collector and a
// WaitHistogram, as the README registers them, passes promtool check
// metrics in the text format and in OpenMetrics; and the check can fail:
// a histogram named acquire_wait_seconds beside the counter
// acquire_wait_seconds_total is refused in OpenMetrics.
func TestPromtoolCheckMetrics(t *testing.T) {
	bin := promtool(t)
	k := newKeeper(t, clocktest.New(clockStart), pool.Limits{Size: 4, Idle: 2}, time.Minute, nil)
	l, err := k.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	labels := map[string]string{"pool": "orders"}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(k, Options{Labels: labels}))
	waits := NewWaitHistogram(Options{Labels: labels})
	waits.Observe(3 * time.Millisecond)
	reg.MustRegister(waits)

	for _, f := range []struct{ accept, name string }{
		{acceptText, "scrape.txt"},
		{acceptOpenMetrics, "scrape.om.txt"},
	} {
		file := scrape(t, reg, f.accept, f.name)
		b, _ := os.ReadFile(file)
		if !bytes.Contains(b, []byte("wardpool_acquire_duration_seconds_bucket")) || !bytes.Contains(b, []byte("wardpool_acquire_wait_seconds_total")) {
			t.Fatalf("%s lacks the histogram or the wait total:\n%s", f.name, b)
		}
		if f.accept == acceptOpenMetrics && !bytes.HasSuffix(b, []byte("# EOF\n")) {
			t.Fatalf("%s is not OpenMetrics:\n%s", f.name, b)
		}
		if msg := checkMetrics(t, bin, file, f.accept == acceptOpenMetrics); msg != "" {
			t.Errorf("promtool check metrics on the %s scrape: %s", f.name, msg)
		}
	}

	// The old name: one OpenMetrics family for two metrics.
	old := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "wardpool", Name: "acquire_wait_seconds", Help: "The old name.",
		ConstLabels: labels, Buckets: waitBuckets,
	})
	old.Observe(0.003)
	reg.MustRegister(old)
	file := scrape(t, reg, acceptOpenMetrics, "old.om.txt")
	if msg := checkMetrics(t, bin, file, true); !strings.Contains(msg, "second HELP line") {
		t.Errorf("promtool check metrics on a histogram acquire_wait_seconds beside acquire_wait_seconds_total in OpenMetrics: %q, want the parse error \"second HELP line\"; the check above proves nothing", msg)
	}
}

// TestPromtoolRules: promtool check rules passes alerts.yml, and promtool
// test rules runs alerts_test.yml, the unit tests of its alerts beside it.
// Its cases fail when a rule fires where they say it must not, or not
// where they say it must; check that this one would notice by testing a
// copy of the rules with WardpoolShedding paging on the first shed.
func TestPromtoolRules(t *testing.T) {
	bin := promtool(t)
	if out, code := runPromtool(t, bin, "", "check", "rules", "alerts.yml"); code != 0 {
		t.Errorf("promtool check rules alerts.yml: exit %d:\n%s", code, out)
	}
	if out, code := runPromtool(t, bin, "", "test", "rules", "alerts_test.yml"); code != 0 {
		t.Errorf("promtool test rules alerts_test.yml: exit %d:\n%s", code, out)
	}

	rules, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	// Rules that fire on a blip must fail the tests: each eager form
	// below is what a hasty rule would say, and alerts_test.yml must
	// catch it, naming the alert.
	for _, c := range []struct{ alert, rule, eager string }{
		{"WardpoolShedding",
			"expr: rate(wardpool_shed_total[2m]) > 0\n        for: 3m\n",
			"expr: rate(wardpool_shed_total[5m]) > 0\n        for: 1m\n"},
		{"WardpoolCallersWaiting",
			"expr: wardpool_waiting_acquires > 0\n        for: 2m\n",
			"expr: wardpool_waiting_acquires > 0\n        for: 0m\n"},
		{"WardpoolResetsRepeated",
			"expr: rate(wardpool_resets_total{cause!~\"manual|rotate\"}[5m]) > 0\n        for: 10m\n",
			"expr: increase(wardpool_resets_total[15m]) > 0\n        for: 0m\n"},
		{"WardpoolResetsRepeated", // rotations page
			"expr: rate(wardpool_resets_total{cause!~\"manual|rotate\"}[5m]) > 0\n        for: 10m\n",
			"expr: rate(wardpool_resets_total{cause!=\"manual\"}[5m]) > 0\n        for: 10m\n"},
		{"WardpoolCallersHeld",
			"expr: min_over_time(wardpool_holding[1m]) == 1\n",
			"expr: max_over_time(wardpool_holding[1m]) == 1\n"},
		{"WardpoolBudgetStoreAway",
			"expr: wardpool_budget_alone == 1\n        for: 3m\n",
			"expr: max_over_time(wardpool_budget_alone[5m]) == 1\n        for: 1m\n"},
	} {
		if !bytes.Contains(rules, []byte(c.rule)) {
			t.Fatalf("alerts.yml no longer has %q: update this test", c.rule)
		}
		dir := t.TempDir()
		eager := bytes.Replace(rules, []byte(c.rule), []byte(c.eager), 1)
		if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), eager, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "alerts_test.yml"), tests, 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := runPromtool(t, bin, "", "test", "rules", filepath.Join(dir, "alerts_test.yml"))
		if code == 0 || !strings.Contains(out, c.alert) {
			t.Errorf("alerts_test.yml passed a %s that fires on a blip (%q):\n%s", c.alert, c.eager, out)
		}
	}
}
