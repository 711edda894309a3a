/* backstep check fixture for AArch64: a correct entry row (CFA = sp+0,
 * x30 unchanged) and a wrong one (CFA = sp+16 at the first instruction). */
	.text
	.p2align 2
	.globl good
	.type good, %function
good:
	.cfi_startproc
	stp x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	ldp x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size good, .-good

	.p2align 2
	.globl bad_entry
	.type bad_entry, %function
bad_entry:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	nop
	ret
	.cfi_endproc
	.size bad_entry, .-bad_entry
