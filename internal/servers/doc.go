// Package servers starts real servers of a test's own on loopback: Redis
// processes (alone, as replicas, as Sentinels or as a Cluster) and
// PostgreSQL clusters, which a test may stop, kill, freeze and start again
// to stage a failover; and network namespaces (Netns) whose link to the
// test can go silent, a black hole the kernel sees, with servers inside
// them. Each helper takes the test, skips it with a clear message when the
// server's binaries are not installed (./scripts/test installs them), and
// registers the server's stop with t.Cleanup, so nothing outlives the
// test.
package servers
