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
	all := append(append([]series{retired, resets, maxResources, maxIdle, leaked}, table...), classSeries[:]...)
	var prom, otel []string
	for _, s := range all {
		prom = append(prom, "wardpool_"+s.prom)
		otel = append(otel, otelNameOf(s))
	}
	// The wait histogram (WaitHistogram) is Prometheus only, and its own
	// collector: it may be named, and need not be.
	prom = append(prom, "wardpool_acquire_duration_seconds", "wardpool_acquire_duration_seconds_bucket")
	promName := regexp.MustCompile(`wardpool_[a-z_]+`)
	otelName := regexp.MustCompile(`(wardpool|db\.client\.connection)\.[a-z_.]*[a-z_]`)
	// The conventions' instruments that no wardpool series maps to, and
	// the attribute names the docs quote.
	otelExtra := []string{"db.client.connection.idle.min", "db.client.connection.create_time",
		"db.client.connection.wait_time", "db.client.connection.use_time",
		"db.client.connection.pool.name", "db.client.connection.state"}
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
			if !slices.Contains(otel, name) && !slices.Contains(otelExtra, name) {
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

// TestDocsListEachSeriesUnderItsKind holds the lists of doc.go and the
// README to the series' kinds: a gauge is listed under the gauges, a
// counter under the counters (the shared guards' list in doc.go has both,
// and is left out).
func TestDocsListEachSeriesUnderItsKind(t *testing.T) {
	all := append(append([]series{retired, resets, maxResources, maxIdle, leaked}, table...), classSeries[:]...)
	for _, f := range []struct {
		file, gauges, counters, end string
	}{
		{"doc.go", "// Gauges:", "// Counters:", "// With guards shared"},
		{"README.md", "## Gauges", "## Counters", "## The wait histogram"},
	} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		g, c, e := strings.Index(text, f.gauges), strings.Index(text, f.counters), strings.Index(text, f.end)
		if g < 0 || c < g || e < c {
			t.Fatalf("%s: want %q, %q and %q in that order", f.file, f.gauges, f.counters, f.end)
		}
		sections := map[kind]string{gauge: text[g:c], counter: text[c:e]}
		for _, s := range all {
			name := "wardpool_" + s.prom
			other := gauge
			if s.kind == gauge {
				other = counter
			}
			if containsWord(sections[other], name) {
				t.Errorf("%s lists the %s %s with the %ss", f.file, kindName(s.kind), name, kindName(other))
			}
			if s.shared && f.file == "doc.go" {
				continue
			}
			if !containsWord(sections[s.kind], name) {
				t.Errorf("%s does not list the %s %s with the %ss", f.file, kindName(s.kind), name, kindName(s.kind))
			}
		}
	}
}

func kindName(k kind) string {
	if k == gauge {
		return "gauge"
	}
	return "counter"
}

// otelNameOf is the name Observe gives series s: the conventions' for the
// figures they name, wardpool.* otherwise.
func otelNameOf(s series) string {
	switch {
	case s.prom == maxResources.prom:
		return "db.client.connection.max"
	case s.prom == maxIdle.prom:
		return "db.client.connection.idle.max"
	case !convFields[s.field] || s.field == 0:
		return "wardpool." + s.otel
	case s.field == fWaiting:
		return "db.client.connection.pending_requests"
	case s.field == fCanceled:
		return "db.client.connection.timeouts"
	}
	return "db.client.connection.count" // live, idle, busy
}
