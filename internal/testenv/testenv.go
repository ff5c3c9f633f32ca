// Package testenv tells tests where the servers that ./scripts/test starts
// can be reached, and skips a test cleanly when they cannot.
//
// ./scripts/test starts a throw-away PostgreSQL and Redis on 127.0.0.1 and
// exports their addresses in environment variables; a plain `go test ./...`
// without those variables still passes, with the integration tests skipped
// and one line saying why. Every function here reads the environment only,
// so it is safe for concurrent use (as long as the test does not change the
// variables it reads while other tests run).
package testenv

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Names of the environment variables that ./scripts/test sets.
const (
	// PostgresDSNVar holds a PostgreSQL URL with user and password, for
	// example postgres://wardpool:secret@127.0.0.1:5432/wardpool?sslmode=disable.
	PostgresDSNVar = "WARDPOOL_PG_DSN"
	// RedisAddrVar holds a Redis host:port, for example 127.0.0.1:6379.
	RedisAddrVar = "WARDPOOL_REDIS_ADDR"
	// ReferenceVar is "1" when the reference runtimes of the conformance
	// suite (Python with SQLAlchemy, Node with generic-pool) are installed.
	ReferenceVar = "WARDPOOL_REFERENCE"
	// PythonVar holds the path of the Python that can import SQLAlchemy.
	PythonVar = "WARDPOOL_PYTHON"
	// JavaVar holds the path of a JDK's java command, with javac in the same
	// directory: the JDK the Commons Pool 2 reference runner is compiled
	// and run with.
	JavaVar = "WARDPOOL_JAVA"
	// CommonsPoolJarVar holds the path of Apache Commons Pool 2's jar;
	// when it is unset, Debian's /usr/share/java/commons-pool2.jar.
	CommonsPoolJarVar = "WARDPOOL_COMMONS_POOL_JAR"
	// PostgresThrowawayVar is "1" when the server in WARDPOOL_PG_DSN was
	// started by ./scripts/test for this run alone.
	PostgresThrowawayVar = "WARDPOOL_PG_THROWAWAY"
	// RedisThrowawayVar is "1" when the server in WARDPOOL_REDIS_ADDR was
	// started by ./scripts/test for this run alone.
	RedisThrowawayVar = "WARDPOOL_REDIS_THROWAWAY"
)

// PostgresDSN returns the PostgreSQL connection URL in WARDPOOL_PG_DSN. When
// the variable is unset or empty it skips the test with one line saying so.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresDSNVar)
	if dsn == "" {
		t.Skip(PostgresDSNVar + " not set: skipping PostgreSQL integration test (./scripts/test starts a server)")
	}
	return dsn
}

// RedisAddr returns the Redis host:port in WARDPOOL_REDIS_ADDR. When the
// variable is unset or empty it skips the test with one line saying so; when
// it is set but is not a host:port it fails the test, since that is a
// mistake in the environment rather than a missing server.
func RedisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(RedisAddrVar)
	if addr == "" {
		t.Skip(RedisAddrVar + " not set: skipping Redis integration test (./scripts/test starts a server)")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("%s=%q is not a host:port: %v", RedisAddrVar, addr, err)
	}
	return addr
}

// PostgresThrowaway reports whether the PostgreSQL in WARDPOOL_PG_DSN is a
// throw-away server that ./scripts/test started for this run (loopback only,
// deleted afterwards), so a test may change server-wide settings or end other
// sessions. It is false for a server a developer pointed the tests at.
func PostgresThrowaway() bool { return os.Getenv(PostgresThrowawayVar) == "1" }

// RedisThrowaway reports whether the Redis in WARDPOOL_REDIS_ADDR is a
// throw-away server that ./scripts/test started for this run (loopback only,
// no persistence), so a test may flush it or change its settings. It is false
// for a server a developer pointed the tests at.
func RedisThrowaway() bool { return os.Getenv(RedisThrowawayVar) == "1" }

// Reference skips the test unless WARDPOOL_REFERENCE is "1", that is unless
// ./scripts/test has made sure the reference runtimes are installed.
func Reference(t testing.TB) {
	t.Helper()
	if os.Getenv(ReferenceVar) != "1" {
		t.Skip(ReferenceVar + " not 1: skipping reference-pool test (./scripts/test installs Python+SQLAlchemy and Node+generic-pool)")
	}
}

// Python returns the path of the Python that can import SQLAlchemy, from
// WARDPOOL_PYTHON, or "/usr/bin/python3" when that is unset. It does not
// skip: call Reference first.
func Python() string {
	if p := os.Getenv(PythonVar); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// Java returns the java and javac commands of the JDK named by
// WARDPOOL_JAVA (javac is the one beside java) and the path of Commons Pool
// 2's jar (WARDPOOL_COMMONS_POOL_JAR, or Debian's). When WARDPOOL_JAVA is
// unset or empty it skips the test with one line saying so; when it is set
// but javac or the jar is not there it fails the test, since that is a
// mistake in the environment rather than a missing JDK.
func Java(t testing.TB) (java, javac, jar string) {
	t.Helper()
	java = os.Getenv(JavaVar)
	if java == "" {
		t.Skip(JavaVar + " not set: skipping Commons Pool 2 reference test (./scripts/test installs a JDK and libcommons-pool2-java)")
	}
	javac = filepath.Join(filepath.Dir(java), "javac")
	jar = os.Getenv(CommonsPoolJarVar)
	if jar == "" {
		jar = "/usr/share/java/commons-pool2.jar"
	}
	for _, f := range []string{java, javac} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s=%q names no JDK with java and javac: %v", JavaVar, java, err)
		}
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("no Commons Pool 2 jar (set %s, or install libcommons-pool2-java): %v", CommonsPoolJarVar, err)
	}
	return java, javac, jar
}

// FullVar names the variable that asks for the full test run: the
// exhaustive walk to full depth, the long linearizability runs, and the
// tests that build programs. ./scripts/test sets it to 1; a plain go test
// runs the quick versions.
const FullVar = "WARDPOOL_FULL"

// Full reports whether the full test run was asked for (see FullVar).
func Full() bool { return os.Getenv(FullVar) == "1" }

// NeedFull skips t, saying why, unless the full test run was asked for.
func NeedFull(t testing.TB) {
	t.Helper()
	if !Full() {
		t.Skipf("builds programs: runs with %s=1 (./scripts/test sets it)", FullVar)
	}
}
