//go:build !race

#include "textflag.h"

// func publish(word *uint32, v uint32)
//
// publish stores v in *word with a plain MOV: on amd64 (x86-TSO) a store
// is never made visible before the stores that precede it in program
// order, so it publishes them as a release store would, without the
// locked XCHG sync/atomic's Store uses for its stronger ordering.
TEXT ·publish(SB),NOSPLIT,$0-12
	MOVQ	word+0(FP), AX
	MOVL	v+8(FP), BX
	MOVL	BX, 0(AX)
	RET
