//go:build !(js && wasm)

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardpool/wardpool/examples/sim/internal/engine"
)

// chromium returns the Chromium to drive: WARDPOOL_CHROMIUM, which
// ./scripts/test sets after installing Debian's chromium, or
// /usr/bin/chromium. The test skips, saying so, when there is none and the
// environment did not promise one.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("WARDPOOL_CHROMIUM")
	promised := path != "" && os.Getenv("WARDPOOL_SKIP_SERVICES") != "1"
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		if promised {
			t.Fatalf("WARDPOOL_CHROMIUM=%s: %v", path, err)
		}
		t.Skipf("no Chromium at %s: skipping the browser test (./scripts/test installs Debian's chromium unless WARDPOOL_SKIP_SERVICES=1)", path)
	}
	return path
}

// shown is what the page shows after a run.
type shown struct {
	Runs    string   `json:"runs"`
	Args    []string `json:"args"`
	Summary string   `json:"summary"`
	Error   string   `json:"error"`
	Command string   `json:"command"`
	Series  int      `json:"series"`
}

const readPage = `({
	runs: document.body.dataset.runs || "",
	args: JSON.parse(document.body.dataset.args || "[]"),
	summary: document.getElementById("summary").textContent,
	error: document.getElementById("error").textContent,
	command: document.getElementById("command").textContent,
	series: document.querySelectorAll("#chart polyline[data-series]").length,
})`

// set changes a control as a planner does (a new value, then its change
// event); the page reruns the engine before the event returns.
func set(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => {
		const e = document.getElementById(` + jsString(id) + `);
		e.value = ` + jsString(value) + `;
		e.dispatchEvent(new Event("change"));
	})()`)
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// The page runs the command's own engine compiled to WebAssembly: the same
// arguments give the same summary in the browser as on the command line,
// byte for byte, for the default run, a changed control, a comparison and
// a dropped recording replayed with other limits.
func TestBrowserRunsTheSameEngine(t *testing.T) {
	exe := chromium(t)
	began := time.Now()
	dir := t.TempDir()
	src, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if err := buildPage(filepath.Join(dir, "page"), src); err != nil {
		t.Fatal(err)
	}
	built := time.Since(began)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "page")))) // 127.0.0.1
	defer srv.Close()

	var browserLog bytes.Buffer
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1300, 1000),
		chromedp.CombinedOutput(&browserLog),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// Start the browser on the context that lives for the test, then
	// bound the work.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v\n%s", exe, err, browserLog.String())
	}
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	read := func(what string) shown {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[shown](readPage))
		if err != nil {
			t.Fatalf("%s: reading the page: %v", what, err)
		}
		if s.Error != "" {
			t.Fatalf("%s: the page says %s", what, s.Error)
		}
		return s
	}
	// same runs the page's arguments on the command line and holds the
	// page's summary to its output.
	same := func(what string, s shown, want ...string) {
		t.Helper()
		var out bytes.Buffer
		if err := cli(s.Args, &out); err != nil {
			t.Fatalf("%s: sim %v: %v", what, s.Args, err)
		}
		if s.Summary != out.String() {
			t.Errorf("%s: the page's summary for %v differs from the command's:\npage:\n%s\ncommand:\n%s", what, s.Args, s.Summary, out.String())
		}
		if s.Series == 0 {
			t.Errorf("%s: no chart drawn", what)
		}
		if !strings.HasPrefix(s.Command, "go run ./examples/sim ") {
			t.Errorf("%s: the page shows the command line %q", what, s.Command)
		}
		for _, w := range want {
			if !strings.Contains(s.Summary, w) {
				t.Errorf("%s: no %q in the page's summary:\n%s", what, w, s.Summary)
			}
		}
	}

	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`body[data-ready="1"]`),
	); err != nil {
		t.Fatalf("loading the page: %v\n%s", err, browserLog.String())
	}
	first := read("the default run")
	if !slices.Equal(first.Args, []string{"-scenario", "burst", "-table=false"}) {
		t.Errorf("the default run's arguments are %v", first.Args)
	}
	same("the default run", first, "burst: Size 12, Idle 12, Keep 2s, ward off")

	// The search, from its button, on 4 seeds a configuration (20 take
	// five times as long, and the same code).
	searched := time.Now()
	if err := chromedp.Do(ctx,
		chromedp.SetValue("#seeds", "4"),
		chromedp.Click("#suggest"),
		chromedp.Poll[chromedp.Void](`JSON.parse(document.body.dataset.args || "[]").includes("-suggest")`, chromedp.WithPollingTimeout(time.Minute)),
	); err != nil {
		t.Fatalf("the suggest button: %v", err)
	}
	same("the search", read("the search"), "this answer rests on 4 seeds (seeds 1 to 4)", "suggest: Size ")
	t.Logf("the search took %v in the page", time.Since(searched).Round(time.Millisecond))

	if err := chromedp.Do(ctx, set("size", "16")); err != nil {
		t.Fatal(err)
	}
	same("size 16", read("size 16"), "burst: Size 16, Idle 16,")
	if idle, err := chromedp.Run(ctx, chromedp.Value("#idle")); err != nil || idle != "16" {
		t.Errorf("the idle control shows %q (%v) where the run has Idle 16", idle, err)
	}

	// Every guard with its knobs: the shedder on a CPU the load drives
	// hot, and the limiter with a low ceiling, from their checkboxes.
	if err := chromedp.Do(ctx, set("cpu-per-loan", "100"), set("shed-cpu", "800"), set("limit-max", "6")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#g-shedder"), chromedp.Click("#g-limiter")); err != nil {
		t.Fatal(err)
	}
	guarded := read("the shedder and the limiter")
	same("the shedder and the limiter", guarded, "burst: Size 16, Idle 16, Keep 2s, shedder+limiter",
		"shedder (hot at 800‰, floor 0.1; CPU 200‰ + 100‰ a busy resource", "limiter (AIMD from 6 in [1, 6]")
	if !slices.Contains(guarded.Args, "shedder+limiter") {
		t.Errorf("the checkboxes gave the arguments %v", guarded.Args)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#g-shedder"), chromedp.Click("#g-limiter")); err != nil {
		t.Fatal(err)
	}

	var shot []byte
	if err := chromedp.Do(ctx, set("scenario", "outage"), set("compare", "ward=none")); err != nil {
		t.Fatal(err)
	}
	outage := read("the outage compared")
	same("the outage compared", outage, "A: Size 12, Idle 12, Keep 500ms, breaker+backoff", "trade: A's ward made")
	if slices.Contains(outage.Args, "-size") {
		t.Errorf("a new scenario kept the last one's changed size: %v", outage.Args)
	}
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	art := t.ArtifactDir()
	if err := os.WriteFile(filepath.Join(art, "outage.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	// A recording dropped on the page (through its file input), replayed,
	// then re-run with another Size.
	if err := cli([]string{"-record", "load.csv", "-table=false"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	before := read("before the drop").Runs
	if err := chromedp.Do(ctx,
		set("compare", ""),
		chromedp.SetUploadFiles("#file", []string{filepath.Join(dir, "load.csv")}),
		chromedp.Poll[chromedp.Void](`document.body.dataset.runs > `+before+` + 1 && JSON.parse(document.body.dataset.args).includes("-replay")`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("dropping a recording: %v", err)
	}
	same("the replay", read("the replay"), "replay of load.csv: Size 12, Idle 12, Keep 500ms, breaker+backoff")
	if err := chromedp.Do(ctx, set("size", "8")); err != nil {
		t.Fatal(err)
	}
	same("the replay at Size 8", read("the replay at Size 8"), "replay of load.csv: Size 8, Idle 8")
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(art, "replay.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	// A Keeper's own recording, dropped the same way: its limits and
	// dial time, and what the replay read exactly.
	if err := os.WriteFile("pool.rec", poolRun(t, 300, 10*time.Millisecond, 23*time.Millisecond, 4*time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	before = read("before the second drop").Runs
	if err := chromedp.Do(ctx,
		chromedp.SetUploadFiles("#file", []string{filepath.Join(dir, "pool.rec")}),
		chromedp.Poll[chromedp.Void](`document.body.dataset.runs > `+before+` && JSON.parse(document.body.dataset.args).includes("pool.rec")`, chromedp.WithPollingTimeout(30*time.Second)),
	); err != nil {
		t.Fatalf("dropping a Keeper's recording: %v", err)
	}
	same("the Keeper's recording", read("the Keeper's recording"), "exact          297 callers lent at once", "replay of pool.rec: Size 8, Idle 8")
	t.Logf("browser test: page built in %v, all in %v; screenshots in %s", built.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), art)
}

// The page offers every setting flag as a control of its own, the
// guards' knobs included, and a checkbox for every guard.
func TestPageHasEveryFlag(t *testing.T) {
	m := regexp.MustCompile(`(?s)const flags = \[(.*?)\];`).FindSubmatch(indexHTML)
	if m == nil {
		t.Fatal("the page lists no flags")
	}
	var listed []string
	for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
		listed = append(listed, string(q[1]))
	}
	if !slices.Equal(listed, settingFlags) {
		t.Errorf("the page's flags %v, the command's %v", listed, settingFlags)
	}
	for _, f := range settingFlags {
		if !bytes.Contains(indexHTML, []byte(`id="`+f+`"`)) {
			t.Errorf("no control for -%s on the page", f)
		}
	}
	for _, g := range engine.Guards {
		if !bytes.Contains(indexHTML, []byte(`id="g-`+g+`" type="checkbox"`)) {
			t.Errorf("no checkbox for the %s on the page", g)
		}
	}
}

// -page writes the page, the toolchain's wasm_exec.js and the command
// compiled to WebAssembly, and the page loads nothing from anywhere else.
func TestPageFetchesNothingElse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command for the browser")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := cli([]string{"-page", dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "wasm_exec.js", "sim.wasm"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	wasm, _ := os.ReadFile(filepath.Join(dir, "sim.wasm"))
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		t.Error("sim.wasm is not WebAssembly")
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	for _, bad := range []string{"http:", "https:", "//cdn", "@import", "url(", "<link"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the page names %q", bad)
		}
	}
	var loads []string
	for _, m := range regexp.MustCompile(`(?:src=|fetch\()"([^"]*)"`).FindAllSubmatch(page, -1) {
		loads = append(loads, string(m[1]))
	}
	if !slices.Equal(loads, []string{"wasm_exec.js", "sim.wasm"}) {
		t.Errorf("the page loads %q, want only wasm_exec.js and sim.wasm beside it", loads)
	}
}
