/* A static program with its own entry point whose CFI is wrong for an
 * entry point: it claims a return address at [CFA-8] (there is none: the
 * kernel leaves argc there) instead of `.cfi_undefined rip`. The validator
 * must report every walk that goes on past _start (check.py --walk-long).
 * Built with -static -nostdlib. */
	.text
	.globl	_start
	.type	_start, @function
_start:
	.cfi_startproc
	xorl	%ebp, %ebp
	andq	$-16, %rsp
	call	noend_main
	movl	%eax, %edi
	movl	$60, %eax		/* exit */
	syscall
	.cfi_endproc
	.size	_start, .-_start

	.type	noend_main, @function
noend_main:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	xorl	%ebx, %ebx
	movl	%ebx, %eax
	popq	%rbx
	.cfi_def_cfa_offset 8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size	noend_main, .-noend_main

	.section .note.GNU-stack,"",@progbits
