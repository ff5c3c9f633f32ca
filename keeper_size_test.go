package wardpool

import (
	"testing"
	"unsafe"
)

// TestEntryFitsItsSizeClass holds the Keeper's record of a resource to the
// 64-byte size class with a pointer-sized resource: a field added in the
// wrong place, or a leak-watch field kept in every entry, costs every pool
// 16 bytes or more per resource.
func TestEntryFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry[*res]{}); n > 64 {
		t.Fatalf("entry is %d bytes, want at most 64", n)
	}
}
