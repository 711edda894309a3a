/* il_init_known(struct bk_cursor *c, struct bk_space *s, struct il_out *out,
 *               void (*check)(struct bk_cursor *c, struct il_out *out)):
 * records its caller's callee-saved registers and return address in OUT,
 * loads known values into rbx, rbp and r12-r15, calls
 * bk_cursor_init_local(c, s) with them in place, stores its result in OUT,
 * calls CHECK(c, out) while this frame is still alive (a cursor started
 * with bk_cursor_init_local walks its caller's live stack), restores
 * everything and returns. Frame 0 of the cursor is this function
 * at the return from that call: there its registers are the known values;
 * frame 1 is the caller, whose registers are the ones recorded on entry.
 *
 * struct il_out { int64 rc; uint64 ra; uint64 entry[6]; } with entry[] in
 * the order rbx, rbp, r12, r13, r14, r15. rbp is an ordinary register here
 * (the CFA is rsp-based), so a frame-pointer caller's rbp must come back
 * from the save slot. */
	.text
	.globl	il_init_known
	.type	il_init_known, @function
il_init_known:
	.cfi_startproc
	movq	(%rsp), %rax
	movq	%rax, 8(%rdx)
	movq	%rbx, 16(%rdx)
	movq	%rbp, 24(%rdx)
	movq	%r12, 32(%rdx)
	movq	%r13, 40(%rdx)
	movq	%r14, 48(%rdx)
	movq	%r15, 56(%rdx)
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	pushq	%rbx
	.cfi_def_cfa_offset 24
	.cfi_offset %rbx, -24
	pushq	%r12
	.cfi_def_cfa_offset 32
	.cfi_offset %r12, -32
	pushq	%r13
	.cfi_def_cfa_offset 40
	.cfi_offset %r13, -40
	pushq	%r14
	.cfi_def_cfa_offset 48
	.cfi_offset %r14, -48
	pushq	%r15
	.cfi_def_cfa_offset 56
	.cfi_offset %r15, -56
	pushq	%rdx
	.cfi_def_cfa_offset 64
	pushq	%rcx
	.cfi_def_cfa_offset 72
	pushq	%rdi
	.cfi_def_cfa_offset 80
	movabsq	$0x1111111111111101, %rbx
	movabsq	$0x2222222222222202, %rbp
	movabsq	$0x3333333333333303, %r12
	movabsq	$0x4444444444444404, %r13
	movabsq	$0x5555555555555505, %r14
	movabsq	$0x6666666666666606, %r15
	call	bk_cursor_init_local@PLT
	.globl	il_after_call
il_after_call:
	movq	(%rsp), %rdi
	movq	16(%rsp), %rsi
	movslq	%eax, %rax
	movq	%rax, (%rsi)
	call	*8(%rsp)
	addq	$24, %rsp
	.cfi_def_cfa_offset 56
	popq	%r15
	.cfi_def_cfa_offset 48
	popq	%r14
	.cfi_def_cfa_offset 40
	popq	%r13
	.cfi_def_cfa_offset 32
	popq	%r12
	.cfi_def_cfa_offset 24
	popq	%rbx
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	il_init_known, .-il_init_known
	.section .note.GNU-stack,"",@progbits
