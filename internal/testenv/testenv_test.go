package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of acting on
// the real test. Like the real ones, Skip and Fatal end the calling
// goroutine, so run the function under test with recorder.run.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	skipped string
	failed  string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.mu.Lock()
	r.skipped = fmt.Sprint(args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with r on a goroutine of its own and reports whether f
// returned normally (rather than skipping or failing).
func (r *recorder) run(f func(testing.TB)) (returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
		returned = true
	}()
	<-done
	return returned
}

func TestSkipsWhenUnset(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		call      func(testing.TB)
	}{
		{"PostgresDSN", PostgresDSNVar, func(tb testing.TB) { PostgresDSN(tb) }},
		{"RedisAddr", RedisAddrVar, func(tb testing.TB) { RedisAddr(tb) }},
		{"Reference", ReferenceVar, Reference},
		{"Java", JavaVar, func(tb testing.TB) { Java(tb) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, "")
			r := &recorder{TB: t}
			if r.run(tc.call) {
				t.Fatalf("%s returned with %s empty; want a skip", tc.name, tc.env)
			}
			if r.failed != "" {
				t.Fatalf("%s failed (%q); want a skip", tc.name, r.failed)
			}
			if !strings.HasPrefix(r.skipped, tc.env+" ") || strings.Contains(r.skipped, "\n") ||
				!strings.Contains(r.skipped, "./scripts/test") {
				t.Errorf("skip message = %q; want one line naming %s and ./scripts/test", r.skipped, tc.env)
			}
		})
	}
}

// TestRealSkip checks the skip through a real testing.T: the sub-test ends
// as skipped, not failed, and the code after the call does not run.
func TestRealSkip(t *testing.T) {
	t.Setenv(PostgresDSNVar, "")
	var sub *testing.T
	after := false
	t.Run("unset", func(t *testing.T) {
		sub = t
		PostgresDSN(t)
		after = true
	})
	if !sub.Skipped() || sub.Failed() || after {
		t.Errorf("skipped=%v failed=%v ran past the call=%v; want a skip only", sub.Skipped(), sub.Failed(), after)
	}
}

func TestReturnsWhenSet(t *testing.T) {
	const dsn = "postgres://u:p@127.0.0.1:1/d?sslmode=disable"
	t.Setenv(PostgresDSNVar, dsn)
	t.Setenv(RedisAddrVar, "127.0.0.1:1")
	t.Setenv(ReferenceVar, "1")
	if got := PostgresDSN(t); got != dsn {
		t.Errorf("PostgresDSN = %q; want %q", got, dsn)
	}
	if got := RedisAddr(t); got != "127.0.0.1:1" {
		t.Errorf("RedisAddr = %q; want 127.0.0.1:1", got)
	}
	Reference(t) // must not skip: reaching the end of this test shows it
}

func TestReferenceNeedsExactlyOne(t *testing.T) {
	for _, v := range []string{"0", "true", "yes", " 1"} {
		t.Setenv(ReferenceVar, v)
		r := &recorder{TB: t}
		if r.run(Reference) {
			t.Errorf("Reference did not skip with %s=%q", ReferenceVar, v)
		}
	}
}

func TestRedisAddrMalformed(t *testing.T) {
	t.Setenv(RedisAddrVar, "localhost")
	r := &recorder{TB: t}
	if r.run(func(tb testing.TB) { RedisAddr(tb) }) {
		t.Fatal("RedisAddr returned for a value without a port")
	}
	if r.skipped != "" || !strings.Contains(r.failed, "localhost") {
		t.Errorf("skipped=%q failed=%q; want a failure naming the value", r.skipped, r.failed)
	}
}

func TestPython(t *testing.T) {
	t.Setenv(PythonVar, "")
	if got := Python(); got != "/usr/bin/python3" {
		t.Errorf("Python() with %s empty = %q; want /usr/bin/python3", PythonVar, got)
	}
	t.Setenv(PythonVar, "/opt/py/bin/python3")
	if got := Python(); got != "/opt/py/bin/python3" {
		t.Errorf("Python() = %q; want the variable's value", got)
	}
}

func TestThrowaway(t *testing.T) {
	for _, tc := range []struct {
		env string
		f   func() bool
	}{
		{PostgresThrowawayVar, PostgresThrowaway},
		{RedisThrowawayVar, RedisThrowaway},
	} {
		for v, want := range map[string]bool{"": false, "0": false, "yes": false, "1": true} {
			t.Setenv(tc.env, v)
			if got := tc.f(); got != want {
				t.Errorf("with %s=%q: %v; want %v", tc.env, v, got, want)
			}
		}
	}
}

// TestJava checks that Java returns javac from beside java and the jar the
// environment names, and fails (not skips) when WARDPOOL_JAVA is set but
// javac or the jar is not there.
func TestJava(t *testing.T) {
	dir := t.TempDir()
	java, javac, jar := filepath.Join(dir, "java"), filepath.Join(dir, "javac"), filepath.Join(dir, "pool.jar")
	for _, f := range []string{java, jar} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(JavaVar, java)
	t.Setenv(CommonsPoolJarVar, jar)
	r := &recorder{TB: t}
	if r.run(func(tb testing.TB) { Java(tb) }) || r.skipped != "" || !strings.Contains(r.failed, "javac") {
		t.Errorf("no javac beside java: skipped %q, failed %q; want a failure naming javac", r.skipped, r.failed)
	}
	if err := os.WriteFile(javac, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	gotJava, gotJavac, gotJar := Java(t)
	if gotJava != java || gotJavac != javac || gotJar != jar {
		t.Errorf("Java = %q, %q, %q; want %q, %q, %q", gotJava, gotJavac, gotJar, java, javac, jar)
	}
	t.Setenv(CommonsPoolJarVar, filepath.Join(dir, "missing.jar"))
	r = &recorder{TB: t}
	if r.run(func(tb testing.TB) { Java(tb) }) || !strings.Contains(r.failed, "missing.jar") {
		t.Errorf("no jar: failed %q; want a failure naming the jar", r.failed)
	}
}
