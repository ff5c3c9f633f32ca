//go:build cgo && amd64 && linux

package leakcgo

/*
#include <stdint.h>

extern void leakcgoCallback(void);

// callWithBadFramePointer calls back into Go with a frame pointer the walk
// must not follow: an aligned address at the top of the address space,
// unmapped, as C code that uses the register for something else may leave
// it. The push keeps the stack 16-byte aligned at the call.
static void callWithBadFramePointer(void) {
	__asm__ volatile(
		"pushq %%rbp\n\t"
		"movabsq $0x7ffffffff000, %%rbp\n\t"
		"call leakcgoCallback\n\t"
		"popq %%rbp\n\t"
		:
		:
		: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
		  "memory", "cc");
}
*/
import "C"

// callback is what C calls back; one at a time.
var callback func()

//export leakcgoCallback
func leakcgoCallback() { callback() }

// FromC runs f on the calling goroutine, called back from C code whose
// frame pointer is garbage.
func FromC(f func()) {
	callback = f
	C.callWithBadFramePointer()
	callback = nil
}
