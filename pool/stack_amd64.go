package pool

// framePCs records the return addresses of the calling goroutine's frames,
// from its caller's caller outwards, by following frame pointers
// (stack_amd64.s). It is what the runtime's execution tracer and block
// profiler do on amd64, and some forty times cheaper than runtime.Callers,
// which decodes each frame's unwinding tables: about 4 ns for a shallow
// stack against 190 ns, and 20 ns against 790 ns thirty frames deeper.
// The runtime falls back to its own unwinder when a cgo callback is on the
// stack; this walk cannot tell, so it stops at any frame pointer that
// leaves the goroutine's stack (see stack_amd64.s): a leak report of code
// called back from C shows the Go frames down to the callback.
//
//go:noescape
func framePCs(pcs []uintptr) int

// walkFrames says framePCs is real here.
const walkFrames = true
