package pgxward

import (
	"strings"
	"testing"

	"github.com/wardpool/wardpool/internal/peersuite"
)

// The committed list must parse, and every entry must name a test.
func TestCommittedDifferences(t *testing.T) {
	diffs := peersuite.ReadDifferences(t, "testdata/pgxpool_differences.txt")
	if len(diffs) == 0 {
		t.Fatal("the committed list is empty")
	}
	for n := range diffs {
		if !strings.HasPrefix(n, "Test") {
			t.Errorf("entry %q does not name a test", n)
		}
	}
}
