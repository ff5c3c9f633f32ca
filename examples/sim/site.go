//go:build !(js && wasm)

package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// indexHTML is the simulator's page: controls, the summary and the chart,
// all from the engine compiled to WebAssembly. It fetches nothing but
// wasm_exec.js and sim.wasm from beside itself.
//
//go:embed web/index.html
var indexHTML []byte

func init() { site = serveOrWrite }

// serveOrWrite builds the page into o.page, or into a temporary directory
// that it serves at o.serve until the process ends.
func serveOrWrite(o options, out io.Writer) error {
	dir := o.page
	if dir == "" {
		tmp, err := os.MkdirTemp("", "wardpool-sim-page-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := buildPage(dir, ""); err != nil {
		return err
	}
	if o.serve == "" {
		fmt.Fprintf(out, "wrote %s (index.html, wasm_exec.js, sim.wasm); serve it over HTTP, as -serve does\n", dir)
		return nil
	}
	ln, err := net.Listen("tcp", o.serve)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the simulator in the browser: http://%s/ (Ctrl-C ends it)\n", ln.Addr())
	// An interrupt ends the server, so the page's directory is removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// buildPage writes index.html, wasm_exec.js (the Go toolchain's own,
// from GOROOT) and sim.wasm (this command, built with GOOS=js GOARCH=wasm
// by the go command, run in src: a directory of the wardpool module, ""
// for the current one) into dir.
func buildPage(dir, src string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	goroot, err := goOutput("env", "GOROOT")
	if err != nil {
		return err
	}
	var glue []byte
	for _, p := range []string{"lib/wasm/wasm_exec.js", "misc/wasm/wasm_exec.js"} {
		if glue, err = os.ReadFile(filepath.Join(goroot, p)); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("no wasm_exec.js under %s: %w", goroot, err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "sim.wasm"), "github.com/wardpool/wardpool/examples/sim")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	cmd.Dir = src
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building sim.wasm (run from within the wardpool module): %v\n%s", err, stderr.String())
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "wasm_exec.js"), glue, 0o644),
		os.WriteFile(filepath.Join(dir, "index.html"), indexHTML, 0o644))
}

func goOutput(args ...string) (string, error) {
	b, err := exec.Command("go", args...).Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
