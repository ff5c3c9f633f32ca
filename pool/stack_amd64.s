#include "textflag.h"

// func framePCs(pcs []uintptr) int
//
// framePCs walks the frame-pointer chain from its caller's frame outwards,
// storing each frame's return address in pcs, and returns how many it
// stored. The frame size is 0, so the assembler gives this function no
// frame of its own: BP is still its caller's frame pointer.
//
// It dereferences only frame pointers it has checked: the first (its
// caller's), and then each next one only if it is 8-byte aligned, above
// the one before (callers' frames sit higher on the stack) and less than
// maxFrameStep above it. So it stops at the bottom of a goroutine's stack
// (a zero frame pointer), and at the edge of the goroutine's stack where
// a cgo callback entered Go: the frame pointer there belongs to the
// thread's own stack, far from any goroutine's, or is whatever the C code
// left in the register.
#define maxFrameStep 0x100000

TEXT ·framePCs(SB),NOSPLIT,$0-32
	MOVQ	pcs_base+0(FP), DI
	MOVQ	pcs_len+8(FP), CX
	MOVQ	BP, AX
	XORQ	DX, DX
	TESTQ	AX, AX
	JZ	done
loop:
	CMPQ	DX, CX
	JGE	done
	MOVQ	8(AX), BX
	MOVQ	BX, (DI)(DX*8)
	INCQ	DX
	MOVQ	(AX), BX
	TESTQ	$7, BX
	JNZ	done
	CMPQ	BX, AX
	JLS	done
	MOVQ	BX, SI
	SUBQ	AX, SI
	CMPQ	SI, $maxFrameStep
	JAE	done
	MOVQ	BX, AX
	JMP	loop
done:
	MOVQ	DX, ret+24(FP)
	RET
