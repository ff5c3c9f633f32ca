package wardpool

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// stackAt records a stack through capture and one through runtime.Callers
// at the same call, depth frames below the test.
//
//go:noinline
func stackAt(depth int) (walked, callers []byte) {
	if depth > 0 {
		return stackAt(depth - 1)
	}
	var s stack
	s.capture(0)
	var pcs [32]uintptr
	n := runtime.Callers(1, pcs[:])
	return format(s.pcs[:s.n]), format(pcs[:n])
}

// functions lists the function lines of a formatted stack (every other
// line), without the compiler's goroutine wrappers, which runtime.Callers
// leaves out and a frame walk keeps.
func functions(b []byte) []string {
	var fs []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i%2 == 0 && !strings.Contains(line, ".gowrap") {
			fs = append(fs, line)
		}
	}
	return fs
}

func TestCaptureRecordsTheSameFramesAsRuntimeCallers(t *testing.T) {
	for _, depth := range []int{0, 3, 20, 40} {
		walked, callers := stackAt(depth)
		w, c := functions(walked), functions(callers)
		if len(c) == 0 || !strings.Contains(c[0], "stackAt") {
			t.Fatalf("depth %d: runtime.Callers' stack does not start at stackAt:\n%s", depth, callers)
		}
		// Both fill the same 32 slots; the walk may reach one frame less
		// deep (runtime.goexit is not on the frame-pointer chain).
		if len(w) > len(c) || len(c)-len(w) > 1 {
			t.Fatalf("depth %d: %d frames walked, %d from runtime.Callers:\n%s\n---\n%s", depth, len(w), len(c), walked, callers)
		}
		for i := range w {
			if w[i] != c[i] {
				t.Fatalf("depth %d: frame %d walked as %q, runtime.Callers says %q", depth, i, w[i], c[i])
			}
		}
	}
}

func TestCaptureAllocatesNothing(t *testing.T) {
	var s stack
	if a := testing.AllocsPerRun(100, func() { s.capture(0) }); a != 0 {
		t.Fatalf("capture allocates %v times", a)
	}
	if s.n == 0 {
		t.Fatal("capture recorded nothing")
	}
}

// BenchmarkStackCapture is what the leak watch's stack record costs per
// loan, at depth frames below the benchmark's own: the frame-pointer walk
// on amd64 and runtime.Callers, which it replaces there, side by side.
func BenchmarkStackCapture(b *testing.B) {
	for _, depth := range []int{0, 10, 30} {
		b.Run(fmt.Sprintf("depth=%d/capture", depth), func(b *testing.B) {
			b.ReportAllocs()
			atDepth(depth, func() {
				var s stack
				for b.Loop() {
					s.capture(0)
				}
			})
		})
		b.Run(fmt.Sprintf("depth=%d/runtime.Callers", depth), func(b *testing.B) {
			b.ReportAllocs()
			atDepth(depth, func() {
				var pcs [32]uintptr
				for b.Loop() {
					runtime.Callers(2, pcs[:])
				}
			})
		})
	}
}

//go:noinline
func atDepth(depth int, f func()) {
	if depth > 0 {
		atDepth(depth-1, f)
		return
	}
	f()
}
