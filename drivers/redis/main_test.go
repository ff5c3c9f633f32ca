package redisward

import (
	"testing"

	"github.com/wardpool/wardpool/internal/servers"
)

// TestMain fails the run on a goroutine left behind, once go-redis's own
// redial probers of clients closed at the end of a test have had their
// second to end (see servers.VerifyTestMain).
func TestMain(m *testing.M) {
	servers.VerifyTestMain(m)
}
