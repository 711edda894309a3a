/* For unw_rs_cache.c: two functions back to back with no padding. ldu_fa
 * ends with a call (to a function that never returns), so its return
 * address is ldu_fb's first instruction; the row at that call (CFA rsp+16)
 * differs from ldu_fb's entry row (CFA rsp+8). The word ldu_fa leaves at
 * rsp, 0x3333, is what ldu_fb's row would take for its return address. */
	.text
	.globl ldu_fa, ldu_fb
	.type ldu_fa, @function
ldu_fa:	.cfi_startproc
	sub $8, %rsp
	.cfi_def_cfa_offset 16
	movq $0x3333, (%rsp)
	call ldu_noreturn
	.cfi_endproc
	.size ldu_fa, . - ldu_fa
	.type ldu_fb, @function
ldu_fb:	.cfi_startproc
	ret
	.cfi_endproc
	.size ldu_fb, . - ldu_fb
	.section .note.GNU-stack,"",@progbits
