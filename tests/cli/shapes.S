/* Hand-written call-frame information, one shape per function, for the
 * golden dump test (tests/cli/shapes.golden). Linked with -nostdlib -static
 * so addresses are fixed. The code never runs. */
	.text
	.globl _start
_start:
	.cfi_startproc
	.cfi_undefined rip
	xor %ebp, %ebp
	hlt
	.cfi_endproc

/* A classic frame-pointer prologue and epilogue. */
	.globl fp_frame
fp_frame:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register rbp
	push %rbx
	.cfi_offset rbx, -24
	nop
	pop %rbx
	.cfi_restore rbx
	pop %rbp
	.cfi_def_cfa rsp, 8
	.cfi_restore rbp
	ret
	.cfi_endproc

/* Two epilogues with remember/restore_state. */
	.globl two_exits
two_exits:
	.cfi_startproc
	push %r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	test %rdi, %rdi
	je 1f
	.cfi_remember_state
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	ret
1:	.cfi_restore_state
	xor %eax, %eax
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	ret
	.cfi_endproc

/* A register saved in another register, a value offset, same_value. */
	.globl reg_rules
reg_rules:
	.cfi_startproc
	mov %rbx, %r11
	.cfi_register rbx, r11
	.cfi_val_offset r13, -64
	.cfi_same_value r14
	nop
	mov %r11, %rbx
	.cfi_restore rbx
	ret
	.cfi_endproc

/* DW_CFA_def_cfa_expression, DW_CFA_expression and DW_CFA_val_expression via
 * .cfi_escape: CFA = [rsp+16]; rbp at CFA-16 (pushed CFA, const1u 16, minus);
 * r15 = CFA+8. */
	.globl expr_rules
expr_rules:
	.cfi_startproc
	sub $24, %rsp
	.cfi_escape 0x0f, 0x03, 0x77, 0x10, 0x06
	.cfi_escape 0x10, 0x06, 0x03, 0x08, 0x10, 0x1c
	.cfi_escape 0x16, 0x0f, 0x02, 0x23, 0x08
	nop
	add $24, %rsp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc

/* A signal-frame CIE ('S' augmentation) and DW_CFA_GNU_args_size. */
	.globl sig_tramp
sig_tramp:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa rsp, 160
	.cfi_offset rip, -8
	nop
	.cfi_escape 0x2e, 0x10
	nop
	ret
	.cfi_endproc
