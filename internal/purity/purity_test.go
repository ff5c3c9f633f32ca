package purity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoreIsPure holds every non-test file of pool and ward to the rules,
// and of the recorder and its encoding, which the pool's users import
// beside it.
func TestCoreIsPure(t *testing.T) {
	least := map[string]int{"../../pool": 8, "../../ward": 8, "../../pool/record": 3, "../../pool/internal/wire": 1}
	for _, dir := range []string{"../../pool", "../../ward", "../../pool/record", "../../pool/internal/wire"} {
		breaches, files, err := Check(dir)
		if err != nil {
			t.Fatal(err)
		}
		if files < least[dir] {
			t.Fatalf("%s: read %d files: the check is not looking at the package", dir, files)
		}
		for _, b := range breaches {
			t.Errorf("%s: %s", dir, b)
		}
	}
}

// TestCheckCatchesEachRule writes a file breaking each rule and one
// breaking none, and holds Check to finding exactly the breaches.
func TestCheckCatchesEachRule(t *testing.T) {
	cases := map[string]string{
		"sync":      `import "sync"; var mu sync.Mutex`,
		"atomic":    `import "sync/atomic"; var n atomic.Int64`,
		"os":        `import "os"; var _ = os.Getpid`,
		"net":       `import "net/http"; var _ = http.Get`,
		"runtime":   `import "runtime"; var _ = runtime.Gosched`,
		"unsafe":    `import "unsafe"; var _ = unsafe.Sizeof(0)`,
		"mathrand":  `import "math/rand/v2"; var _ = rand.Float64`,
		"cryptorng": `import "crypto/rand"; var _ = rand.Read`,
		"maphash":   `import "hash/maphash"; var _ = maphash.MakeSeed`,
		"context":   `import "context"; var _ = context.Background`,
		"now":       `import "time"; func f() time.Time { return time.Now() }`,
		"renamed":   `import clk "time"; func f() { clk.Sleep(1) }`,
		"since":     `import t "time"; var _ = t.Since`,
		"dot":       `import . "time"; var _ = Second`,
		"go":        `func f() { go f() }`,
		"select":    `func f(c chan int) { select { case <-c: } }`,
		"send":      `func f(c chan int) { c <- 1 }`,
	}
	dir := t.TempDir()
	for name, body := range cases {
		write(t, dir, name+".go", body)
	}
	write(t, dir, "clean.go", `import "time"; func f(now time.Time, d time.Duration) time.Time { return now.Add(d) }`)
	write(t, dir, "ignored_test.go", `import "os"; var _ = os.Getpid`)
	breaches, files, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != len(cases)+1 {
		t.Fatalf("read %d files, want %d (test files are not read)", files, len(cases)+1)
	}
	for name := range cases {
		n := 0
		for _, b := range breaches {
			if strings.HasPrefix(b, name+".go:") {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s.go breaks a rule and Check did not say so", name)
		}
	}
	for _, b := range breaches {
		if strings.HasPrefix(b, "clean.go:") || strings.HasPrefix(b, "ignored_test.go:") {
			t.Errorf("a breach in a file that breaks nothing: %s", b)
		}
	}
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("package p\n\n"+body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
