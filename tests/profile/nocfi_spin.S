/* A loop in a function with no CFI at all (no FDE covers it), keeping a
 * frame pointer: for tests/profile/report_test.py, whose samples here
 * walk on only by the frame-pointer fallback, which reads the code at the
 * PC (nocfi_loop.c calls it). */
	.text
	.globl	nocfi_spin
	.type	nocfi_spin, @function
nocfi_spin:
	pushq	%rbp
	movq	%rsp, %rbp
	movq	%rdi, %rcx
1:	addq	$1, %rax
	subq	$1, %rcx
	jne	1b
	popq	%rbp
	ret
	.size	nocfi_spin, .-nocfi_spin
	.section .note.GNU-stack,"",@progbits
