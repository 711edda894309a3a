/* This process's registers, x86-64 (System V AMD64 ABI): see
 * tgt_local_capture and tgt_local_strip_pac in target.h. */

	.text
/* void tgt_local_capture(uint64_t out[]): out[i] = DWARF register i for
 * i = 0..16 (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip) as the
 * caller has them right after the return: rbx, rbp and r12-r15 untouched
 * here, rsp past the return address, rip the return address. The others
 * are written too but mean nothing. */
	.globl	tgt_local_capture
	.hidden	tgt_local_capture
	.type	tgt_local_capture, @function
tgt_local_capture:
	.cfi_startproc
	movq	%rax, 0(%rdi)
	movq	%rdx, 8(%rdi)
	movq	%rcx, 16(%rdi)
	movq	%rbx, 24(%rdi)
	movq	%rsi, 32(%rdi)
	movq	%rdi, 40(%rdi)
	movq	%rbp, 48(%rdi)
	leaq	8(%rsp), %rax
	movq	%rax, 56(%rdi)
	movq	%r8, 64(%rdi)
	movq	%r9, 72(%rdi)
	movq	%r10, 80(%rdi)
	movq	%r11, 88(%rdi)
	movq	%r12, 96(%rdi)
	movq	%r13, 104(%rdi)
	movq	%r14, 112(%rdi)
	movq	%r15, 120(%rdi)
	movq	(%rsp), %rax
	movq	%rax, 128(%rdi)
	ret
	.cfi_endproc
	.size	tgt_local_capture, .-tgt_local_capture

/* uint64_t tgt_local_strip_pac(uint64_t ra): x86-64 has no pointer
 * authentication. */
	.globl	tgt_local_strip_pac
	.hidden	tgt_local_strip_pac
	.type	tgt_local_strip_pac, @function
tgt_local_strip_pac:
	.cfi_startproc
	movq	%rdi, %rax
	ret
	.cfi_endproc
	.size	tgt_local_strip_pac, .-tgt_local_strip_pac

	.section .note.GNU-stack, "", @progbits
