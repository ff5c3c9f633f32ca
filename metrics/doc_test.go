package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsListEverySeries holds the package documentation and the README
// to the series exported: each names every series in both forms, and no
// series that does not exist.
func TestDocsListEverySeries(t *testing.T) {
	all := append([]series{retired, maxResources, maxIdle, leaked}, table...)
	var prom, otel []string
	for _, s := range all {
		prom = append(prom, "wardpool_"+s.prom)
		otel = append(otel, "wardpool."+s.otel)
	}
	// The wait histogram (WaitHistogram) is Prometheus only, and its own
	// collector: it may be named, and need not be.
	prom = append(prom, "wardpool_acquire_duration_seconds", "wardpool_acquire_duration_seconds_bucket")
	promName := regexp.MustCompile(`wardpool_[a-z_]+`)
	otelName := regexp.MustCompile(`wardpool\.[a-z_.]*[a-z_]`)
	for _, file := range []string{"doc.go", "README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for i := range all {
			for _, name := range []string{prom[i], otel[i]} {
				if !containsWord(text, name) {
					t.Errorf("%s does not list %s", file, name)
				}
			}
		}
		for _, name := range promName.FindAllString(text, -1) {
			if !slices.Contains(prom, name) {
				t.Errorf("%s names %s, which is not exported", file, name)
			}
		}
		for _, name := range otelName.FindAllString(text, -1) {
			if !slices.Contains(otel, name) {
				t.Errorf("%s names %s, which is not exported", file, name)
			}
		}
	}
}

// containsWord reports whether name occurs in text not as part of a longer
// name.
func containsWord(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz_.", rune(text[end])) ||
			(text[end] == '.' && (end+1 == len(text) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz", rune(text[end+1])))) {
			return true
		}
		i = end
	}
}
