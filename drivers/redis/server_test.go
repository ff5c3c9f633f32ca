package redisward

import (
	"testing"
	"time"

	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
)

// ownRedis starts a redis-server of the test's own on loopback
// (servers.StartRedis), so that the test may stop and restart it: the
// tests of what a budget does while its store is gone. Its data lives in
// memory only, so a restart loses everything, as a server without
// persistence does. It runs where ./scripts/test runs the integration
// tests, and skips elsewhere, or when redis-server is not installed.
func ownRedis(t *testing.T, extra ...string) *servers.Redis {
	t.Helper()
	testenv.RedisAddr(t) // skips unless ./scripts/test (or a developer) set up Redis
	return servers.StartRedis(t, extra...)
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int { return servers.FreePort(t) }

// ownCluster starts a Redis Cluster of three masters on loopback
// (servers.StartCluster, node timeout 2 s) and returns their addresses; it
// skips when redis-cli is missing.
func ownCluster(t *testing.T) []string {
	t.Helper()
	testenv.RedisAddr(t)
	return servers.StartCluster(t, 3, 0, 2000*time.Millisecond).Addrs()
}
