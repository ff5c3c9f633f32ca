package shared

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps the budget's outage lines out of the test output: the
// tests that read them give the budget a logger of their own.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
