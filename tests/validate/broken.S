/* Hand-written functions, two with deliberately wrong CFI, for the
 * validator to catch at the right instruction (see check.py --broken):
 *
 *   broken_offset  rbx is pushed to CFA-16, the CFI says CFA-24: from
 *                  broken_offset+1 (after the push) until the pop, rbx is
 *                  recovered from the wrong slot.
 *   broken_cfa     after `push %rbp` the CFA offset is not updated (still
 *                  rsp+8): from broken_cfa+1 until the pop, the return
 *                  address and the CFA are wrong.
 *   good_remember  correct: remember/restore_state around two epilogues,
 *                  so a false positive here is the validator's bug.
 */
	.text

	.globl	helper_s
	.type	helper_s, @function
helper_s:
	.cfi_startproc
	leaq	1(%rdi), %rax
	ret
	.cfi_endproc
	.size	helper_s, .-helper_s

	.globl	broken_offset
	.type	broken_offset, @function
broken_offset:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -24		/* WRONG: the push put rbx at CFA-16 */
	movq	%rdi, %rbx
	movq	%rbx, %rdi
	call	helper_s
	addq	%rbx, %rax
	popq	%rbx
	.cfi_restore %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	broken_offset, .-broken_offset

	.globl	broken_cfa
	.type	broken_cfa, @function
broken_cfa:
	.cfi_startproc
	pushq	%rbp
	.cfi_offset %rbp, -16		/* WRONG: no .cfi_def_cfa_offset 16 */
	movq	%rsp, %rbp
	call	helper_s
	popq	%rbp
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	broken_cfa, .-broken_cfa

	.globl	good_remember
	.type	good_remember, @function
good_remember:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	movq	%rdi, %rbx
	testq	%rdi, %rdi
	je	1f
	.cfi_remember_state
	call	helper_s
	addq	%rbx, %rax
	popq	%rbx
	.cfi_def_cfa_offset 8
	.cfi_restore %rbx
	ret
1:
	.cfi_restore_state
	xorl	%eax, %eax
	popq	%rbx
	.cfi_def_cfa_offset 8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size	good_remember, .-good_remember

	.section .note.GNU-stack,"",@progbits
