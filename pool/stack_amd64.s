#include "textflag.h"

// func framePCs(pcs []uintptr) int
//
// framePCs walks the frame-pointer chain from its caller's frame outwards,
// storing each frame's return address in pcs, and returns how many it
// stored. It stops at the end of pcs, at a zero frame pointer (the bottom
// of a goroutine's stack), or at a frame pointer that does not point
// further up the stack than the one before it. The frame size is 0, so the
// assembler gives this function no frame of its own: BP is still the
// caller's frame pointer.
TEXT ·framePCs(SB),NOSPLIT,$0-32
	MOVQ	pcs_base+0(FP), DI
	MOVQ	pcs_len+8(FP), CX
	MOVQ	BP, AX
	XORQ	DX, DX
loop:
	CMPQ	DX, CX
	JGE	done
	TESTQ	AX, AX
	JZ	done
	MOVQ	8(AX), BX
	MOVQ	BX, (DI)(DX*8)
	INCQ	DX
	MOVQ	(AX), BX
	CMPQ	BX, AX
	JLS	done
	MOVQ	BX, AX
	JMP	loop
done:
	MOVQ	DX, ret+24(FP)
	RET
