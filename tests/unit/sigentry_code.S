/* test_sigentry.c's target and the code right before it.
 *
 * sigentry_before ends with a call (a noreturn call, as compilers end such
 * functions) and its FDE ends exactly where sigentry_target's begins: no
 * padding between them. So the row at sigentry_target - 1 is
 * sigentry_before's last one (CFA = rsp + 24, rbx and rbp saved), and a
 * frame interrupted at sigentry_target's first instruction but looked up
 * one byte early unwinds into garbage; looked up at its PC, the entry row
 * (CFA = rsp + 8, return address at CFA - 8) gives its caller.
 *
 * long sigentry_target(long n): a frame-pointer function, as gcc -O0
 * makes them: sum of i ^ (s >> 3) for i < n. */
	.text
	.globl	sigentry_before
	.type	sigentry_before, @function
sigentry_before:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset %rbp, -24
	call	abort@PLT
	.cfi_endproc
	.size	sigentry_before, .-sigentry_before

	.globl	sigentry_target
	.type	sigentry_target, @function
sigentry_target:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	xorl	%eax, %eax
	xorl	%ecx, %ecx
1:	cmpq	%rdi, %rcx
	jge	2f
	movq	%rax, %rdx
	sarq	$3, %rdx
	xorq	%rcx, %rdx
	addq	%rdx, %rax
	incq	%rcx
	jmp	1b
2:	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	sigentry_target, .-sigentry_target

	.section .note.GNU-stack,"",@progbits
